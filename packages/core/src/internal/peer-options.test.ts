import { describe, expect, it } from 'vitest';
import { parseRateLimitOptions } from '../http/handler/rate-limit-options.js';
import type { LimiterOptions } from '../options.js';
import { parseLimiterOptions } from '../options.js';
import { configError } from '../testing/config-error.js';
import { PEER_OPTIONS } from './peer-options.js';

const policies = { limit: 5, windowMs: 1_000 };

const adapter = (options: Record<string, unknown>) => configError(() => parseRateLimitOptions(options as never));
const limiter = (options: Record<string, unknown>) => configError(() => parseLimiterOptions(options as unknown as LimiterOptions));

describe("another library's option names", () => {
  // A team porting an express-rate-limit, @fastify/rate-limit or koa-ratelimit app writes their names
  // first; before, each was refused with the list of valid names alone.
  it.each([
    ['max', { max: 5, windowMs: 1_000 }, /policies: \{ limit: 100, windowMs: 60_000 \}/],
    ['keyGenerator', { policies, keyGenerator: () => 'k' }, /key here: a function of the request/],
    ['id', { policies, id: () => 'k' }, /use skip to let a request through/],
    ['handler', { policies, handler: () => undefined }, /onLimited here/],
    ['allowList', { policies, allowList: ['127.0.0.1'] }, /skip here/],
    ['onExceeded', { policies, onExceeded: () => undefined }, /onDecision here/],
    ['standardHeaders', { policies, standardHeaders: 'draft-7' }, /headers here: 'draft-11'/],
    ['passOnStoreError', { policies, passOnStoreError: true }, /onStoreError here/],
    ['requestPropertyName', { policies, requestPropertyName: 'limit' }, /req\.rateLimit \(Express\)/],
  ])('%s in the adapters: refused, with what to write instead', (name, options, hint) => {
    const error = adapter(options);
    expect(error).toMatchObject({ code: 'ERR_RL_UNKNOWN_OPTION', option: name });
    expect(error.message).toMatch(hint);
  });

  it('in createLimiter too, and in a policy; an adapter-only one says where it belongs', () => {
    expect(limiter({ policies, windowMs: 1_000 }).message).toMatch(/a policy's windowMs here/);
    expect(limiter({ policies, limit: 5 }).message).toMatch(/a policy's limit here/);
    expect(limiter({ policies, keyGenerator: () => 'k' }).message).toMatch(
      /an option of the adapters' rateLimit\(\); createLimiter takes the key at check\(key\)/,
    );
    const inPolicy = limiter({ policies: { max: 5, windowMs: 1_000 } });
    expect(inPolicy).toMatchObject({ code: 'ERR_RL_UNKNOWN_OPTION', option: 'policies.max' });
    expect(inPolicy.message).toMatch(/another library's option: limit here/);
  });

  it("express-rate-limit's per-request limit, draft-8 and validations name what does the same here", () => {
    expect(limiter({ policies: { limit: () => 5, windowMs: 1_000 } }).message).toMatch(/a limit that depends on the request is a plan/);
    expect(adapter({ policies, headers: 'draft-8' }).message).toMatch(/latest revision here is 'draft-11'/);
    expect(adapter({ policies, headers: { remaining: 'Rate-Limit-Remaining' } }).message).toMatch(/rename them in a middleware/);
    expect(adapter({ policies, validate: { xForwardedForHeader: false } }).message).toMatch(/WRN_RL_UNTRUSTED_FORWARDED_HEADER here/);
  });

  it('a name of our own gets no hint, and every hint is for a name that is no option here', () => {
    expect(adapter({ policies, bogus: 1 }).message).not.toMatch(/another library/);
    const accepted = /\(valid: ([^)]*)\)/.exec(adapter({ policies, bogus: 1 }).message)?.[1]?.split(', ') ?? [];
    expect(accepted.length).toBeGreaterThan(10);
    for (const name of Object.keys(PEER_OPTIONS)) expect(accepted).not.toContain(name);
    // Nor for an adapter's own keys (Fastify's hook and global).
    expect(Object.keys(PEER_OPTIONS)).not.toContain('hook');
    expect(Object.keys(PEER_OPTIONS)).not.toContain('global');
  });

  it("options parsed from JSON with a '__proto__' key are refused, not read through the prototype", () => {
    const error = adapter(JSON.parse('{ "policies": { "limit": 5, "windowMs": 1000 }, "__proto__": { "headers": false } }'));
    expect(error).toMatchObject({ code: 'ERR_RL_UNKNOWN_OPTION', option: '__proto__' });
  });
});
