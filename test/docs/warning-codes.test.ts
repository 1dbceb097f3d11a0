/**
 * @module Every warning can be silenced, everywhere (issue 26): the `WRN_RL_*` codes documented in
 * docs/errors.md are exactly `WARNING_CODES`, and `validate: { CODE: false }` is accepted by
 * `createLimiter` and by every adapter's options.
 */
import { createLimiter, WARNING_CODES } from '@tollgate/core';
import { parseRateLimitOptions } from '@tollgate/core/adapter';
import { rateLimit as expressRateLimit } from '@tollgate/express';
import fastifyRateLimit from '@tollgate/fastify';
import { rateLimit as koaRateLimit } from '@tollgate/koa';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { readRepoFile } from './markdown.js';

const documented = [...readRepoFile('docs/errors.md').matchAll(/^### (WRN_RL_[A-Z_]+)\s*$/gm)].map((m) => m[1] as string);
const policies = { limit: 1, windowMs: 1000 };

describe('warning codes', () => {
  it('docs/errors.md documents exactly the codes validate accepts', () => {
    expect(documented.length).toBeGreaterThan(20);
    expect([...documented].sort()).toEqual([...WARNING_CODES].sort());
  });

  it.each(documented)('%s can be switched off on createLimiter and on every adapter', async (code) => {
    const validate = { [code]: false };
    await createLimiter({ policies, validate }).close();
    expect(parseRateLimitOptions({ policies, validate }).validate).toEqual(validate);
    expect(() => expressRateLimit({ policies, validate })).not.toThrow();
    expect(() => koaRateLimit({ policies, validate })).not.toThrow();
    const app = Fastify();
    await app.register(fastifyRateLimit, { policies, validate });
    await app.ready();
    await app.close();
  });

  it('rejects a code that does not exist, naming it', () => {
    expect(() => createLimiter({ policies, validate: { WRN_RL_NO_SUCH: false } as never })).toThrow(/validate\.WRN_RL_NO_SUCH/);
  });
});
