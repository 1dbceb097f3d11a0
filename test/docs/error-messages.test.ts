/**
 * @module docs/errors.md's example messages are the messages users see. Each case below makes tollgate
 * raise one configuration or usage error for real; its message, without the trailing "See <docs link>",
 * must be one of the example lines of its code in errors.md, character for character. A message reworded
 * in the code without its example fails here (errors-doc.test.ts checks that every code has a section).
 */

import { createShaper, withRetry } from '@tollgate/client';
import { boundedCost, createLimiter, keys, MemoryStore, type PolicyOptions, RedisStore, registerPrometheusMetrics } from '@tollgate/core';
import { rateLimit } from '@tollgate/express';
import { describe, expect, it } from 'vitest';
import { readRepoFile } from './markdown.js';

const P = (o: Record<string, unknown> = {}) => ({ limit: 100, windowMs: 60_000, ...o }) as PolicyOptions;
const redisLike = () => ({ sendCommand: async () => 1 });
// biome-ignore lint/suspicious/noExplicitAny: each case passes what a JavaScript caller could, wrong on purpose
type Loose = any;
const loose = (value: unknown): Loose => value;

/** [what the case does, the call that raises]. */
const CASES: readonly [string, () => unknown][] = [
  ['options null', () => createLimiter(loose(null))],
  ['a misspelt option', () => createLimiter(loose({ polices: [P()] }))],
  ['withRetry retries 1.5', () => withRetry(fetch, { retries: 1.5 })],
  ['a key that is not a function', () => rateLimit(loose({ policies: [P()], key: 'ip' }))],
  ['boundedCost max 2.5', () => boundedCost(1, { max: 2.5 })],
  ['no policies', () => createLimiter({ policies: [] })],
  ['a null policy', () => createLimiter({ policies: [loose(null)] })],
  ['an unknown algorithm', () => createLimiter({ policies: [P({ algorithm: 'leaky' })] })],
  ['a policy name with a space', () => createLimiter({ policies: [P({ name: ' api' })] })],
  ['a limiter name with a colon', () => createLimiter({ name: 'auth:login', policies: [P()] })],
  ['two policies of one name', () => createLimiter({ policies: [P(), P()] })],
  ['limit 0', () => createLimiter({ policies: [P({ limit: 0 })] })],
  ["windowMs '1m'", () => createLimiter({ policies: [P({ windowMs: '1m' })] })],
  ['burst on a window', () => createLimiter({ policies: [P({ algorithm: 'fixed-window', burst: 20 })] })],
  ['burst 0.5', () => createLimiter({ policies: [P({ algorithm: 'gcra', burst: 0.5 })] })],
  ["anchor 'start'", () => createLimiter({ policies: [P({ algorithm: 'fixed-window', anchor: 'start' })] })],
  ['delayAfter -1', () => createLimiter({ policies: [P({ algorithm: 'leaky-bucket', delayAfter: -1 })] })],
  ["unit 'bytes'", () => createLimiter({ policies: [P({ unit: 'bytes' })] })],
  ['past exact arithmetic', () => createLimiter({ policies: [{ algorithm: 'gcra', limit: 1e12, windowMs: 86_400_007, burst: 1e12 }] })],
  ['shadow as an array', () => createLimiter(loose({ policies: [P()], shadow: [P()] }))],
  ["mode 'dry-run'", () => createLimiter(loose({ policies: [P()], mode: 'dry-run' }))],
  ['a store that is not one', () => createLimiter(loose({ policies: [P()], store: {} }))],
  ['a clock returning NaN', () => createLimiter({ policies: [P()], clock: () => Number.NaN }).decide('k')],
  ['a logger without warn', () => createLimiter(loose({ policies: [P()], logger: {} }))],
  ['cost 0.0001', () => createLimiter({ policies: [P()] }).decide('k', { cost: 0.0001 })],
  ['burst below the cost', () => createLimiter({ policies: [{ algorithm: 'gcra', limit: 10, windowMs: 1_000, burst: 2 }], cost: 5 })],
  ["onStoreError 'fail'", () => createLimiter(loose({ policies: [P()], onStoreError: 'fail' }))],
  ['storeTimeoutMs 0', () => createLimiter({ policies: [P()], storeTimeoutMs: 0 })],
  ['localShare 4', () => createLimiter({ policies: [P()], localShare: 4 })],
  ['breaker.failureThreshold 0', () => createLimiter({ policies: [P()], breaker: { failureThreshold: 0 } })],
  ['hotKeys.size 0', () => createLimiter({ policies: [P()], hotKeys: { size: 0 } })],
  ['a number key', () => createLimiter({ policies: [P()] }).decide(loose(42))],
  ["headers 'draft-8'", () => rateLimit(loose({ policies: [P()], headers: 'draft-8' }))],
  ['a short pk secret', () => rateLimit({ policies: [P()], pk: { secret: 'short' } })],
  ['keys.user of a string', () => keys.user(loose('id'))],
  ['a header name with spaces', () => keys.header('x api key')],
  ['an empty header secret', () => keys.header('x-api-key', { secret: '' })],
  ['a proxy range with host bits', () => keys.ip({ trustedProxies: ['10.0.0.1/8'] })],
  ['ipv4Prefix 8', () => keys.ip({ ipv4Prefix: 8 })],
  ['ipv6Prefix 16', () => keys.ip({ ipv6Prefix: 16 })],
  ['a NAT64 /64', () => keys.ip({ nat64Prefixes: ['64:ff9b::/64'] })],
  ['an upper-case header', () => keys.ip(loose({ header: 'X-Forwarded-For' }))],
  ['maxKeys 0', () => new MemoryStore({ maxKeys: 0 })],
  ['sweepIntervalMs -1', () => new MemoryStore({ sweepIntervalMs: -1 })],
  ['sweepBatch 0', () => new MemoryStore({ sweepBatch: 0 })],
  ['a URL for a client', () => new RedisStore(loose({ client: 'redis://localhost:6379' }))],
  ['a prefix with braces', () => new RedisStore({ client: redisLike(), prefix: 'app:{1}' })],
  ["timeSource 'client'", () => new RedisStore(loose({ client: redisLike(), timeSource: 'client' }))],
  [
    '17 policies on Redis',
    () =>
      createLimiter({
        policies: Array.from({ length: 17 }, (_, i) => P({ name: `p${i}` })),
        store: new RedisStore({ client: redisLike() }),
      }),
  ],
  ['a concurrency limit 0', () => createLimiter({ policies: [{ algorithm: 'concurrency', limit: 0 }] })],
  ['loadShedding {}', () => rateLimit(loose({ policies: [P()], loadShedding: {} }))],
  ['a registry that is not one', () => registerPrometheusMetrics(loose({ registry: {} }))],
  ['maxDelayMs -1', () => createLimiter({ policies: [P({ algorithm: 'leaky-bucket', maxDelayMs: -1 })] })],
  ['policies beside plans', () => createLimiter(loose({ policies: [P()], plans: { a: [P()] } }))],
  ['a plan name with a space', () => createLimiter({ plans: { ' free': [P()] } })],
  ['an unknownPlan not in plans', () => createLimiter({ plans: { free: [P()], pro: [P()] }, unknownPlan: 'gold' })],
  ['a number plan', () => createLimiter({ policies: [P()] }).decide('k', { plan: loose(42) })],
  [
    'a keys object without a key',
    () => createLimiter({ policies: [P({ name: 'per-ip' }), P({ name: 'per-account' })] }).decide({ 'per-ip': 'x' }),
  ],
  ['refund of an object', () => createLimiter({ policies: [P()] }).refund(loose({}))],
  ['hotKeys(-1)', () => createLimiter({ policies: [P()], hotKeys: true }).hotKeys(-1)],
  [
    'a refund above the cost',
    () => {
      const l = createLimiter({ policies: [P()] });
      return l.refund(l.decide('k', { cost: 2 }) as never, { cost: 5 });
    },
  ],
  ['the keys.ip factory itself', () => rateLimit(loose({ policies: [P()], key: keys.ip }))],
  ['a shaper without policies', () => createShaper({ policies: [] })],
];

const doc = readRepoFile('docs/errors.md');
const withoutLink = (text: string) => text.replace(/ See https:\S+$/, '').trim();

/** The message `call` throws or rejects with. */
async function messageOf(call: () => unknown): Promise<string> {
  try {
    await call();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('no error was raised');
}

describe('docs/errors.md example messages', () => {
  it.each(CASES)('%s: the message is an example of its code, word for word', async (_name, call) => {
    const message = withoutLink(await messageOf(call));
    const code = message.slice(0, message.indexOf(':'));
    expect(code).toMatch(/^(ERR|WRN)_RL_[A-Z0-9_]+$/);
    const examples = doc
      .split('\n')
      .filter((line) => line.startsWith(`${code}:`))
      .map(withoutLink);
    expect(examples, `docs/errors.md has no example line of ${code}`).not.toEqual([]);
    expect(examples).toContain(message);
  });
});
