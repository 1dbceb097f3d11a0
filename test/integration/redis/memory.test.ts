/**
 * @module Memory per key: MEMORY USAGE of one key per algorithm, used_memory per key over many keys, and
 * the same measures for the layouts peers use, on the same server. Prints the table the package README
 * quotes, and fails if a layout grows past its recorded size (a regression guard, not a benchmark).
 */
import { type AlgorithmId, createLimiter, type Limiter, RedisStore, type StorePlan } from '@tollgate/core';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeRedis, infoField, type RedisServer, redisVersion, startRedis } from './harness.js';

const KEYS = 2000;
/** A typical limiter key: a user id. Key names are `tollgate:v2:{user:123456}:<code><window>`. */
const userKey = (i: number) => `user:${100_000 + i}`;

/**
 * Upper bounds (bytes, MEMORY USAGE of one key on Redis 7.0 with a 30-character name, the longest in
 * Redis' smallest allocation for a key name): what a bare counter under the same name costs (72) for the
 * counters and for gcra and leaky-bucket (whose value is the limit they were written under, a small
 * integer Redis shares; the TAT is the key's expiry), a short string for the token bucket
 * (`missing:limit`), and a 3-member listpack for the sliding log.
 */
const BOUNDS: Record<AlgorithmId, number> = {
  'fixed-window': 72,
  'sliding-window': 72,
  'token-bucket': 88,
  gcra: 72,
  'leaky-bucket': 72,
  'sliding-log': 120,
};

describeRedis('memory per key', () => {
  let server: RedisServer;
  let client: Redis;
  const rows: string[] = [];

  beforeAll(async () => {
    server = await startRedis();
    client = await server.readyClient();
  });
  afterAll(async () => {
    console.log(`\nMemory per key on ${redisVersion}\n${rows.join('\n')}\n`);
    await server.close();
  });

  async function usedMemory(): Promise<number> {
    return Number(infoField(await client.info('memory'), 'used_memory'));
  }

  function limiterFor(algorithm: AlgorithmId, limit = 100, timeSource: 'redis' | 'limiter' = 'redis', clock?: () => number) {
    const store = new RedisStore({ client, timeSource });
    let plan: StorePlan | undefined;
    const limiter: Limiter = createLimiter({
      policies: { algorithm, limit, windowMs: 60_000 },
      store: {
        kind: 'redis',
        apply: (key, p, cost, now) => {
          plan = p;
          return store.apply(key, p, cost, now);
        },
        reset: (key, p) => store.reset(key, p),
      },
      clock,
      storeTimeoutMs: 10_000,
    });
    return { limiter, key: (k: string) => store.keyNames(k, plan as StorePlan)[0] as string };
  }

  it('per algorithm: one key after a few requests, and used_memory per key over 2,000 keys', async () => {
    const measure = async (algorithm: AlgorithmId) => {
      await client.flushall();
      const { limiter, key } = limiterFor(algorithm);
      const before = await usedMemory();
      for (let from = 0; from < KEYS; from += 500) {
        await Promise.all(Array.from({ length: 500 }, (_, i) => limiter.check(userKey(from + i))));
      }
      await limiter.check(userKey(0), { cost: 2 });
      const perKey = Math.round(((await usedMemory()) - before) / KEYS);
      expect(await client.dbsize()).toBe(KEYS);
      const name = key(userKey(0));
      const usage = Number(await client.memory('USAGE', name));
      const type = await client.type(name);
      const value = type === 'zset' ? `zset of ${await client.zcard(name)}` : `\`${await client.get(name)}\``;
      // What the same name costs holding a bare counter (the layout of INCR-based limiters).
      await client.set(name, '1', 'PX', 60_000);
      const baseline = Number(await client.memory('USAGE', name));
      return { value, name, usage, baseline, perKey };
    };
    await measure('gcra'); // warms the server up (dict sizes, script cache) so every row is measured alike
    rows.push(
      '| algorithm | stored value | key name | MEMORY USAGE | a bare counter under the same name | used_memory / key |',
      '|---|---|---|---|---|---|',
    );
    const usages: Partial<Record<AlgorithmId, number>> = {};
    for (const algorithm of Object.keys(BOUNDS) as AlgorithmId[]) {
      const m = await measure(algorithm);
      rows.push(`| ${algorithm} | ${m.value} | ${m.name.length} chars | ${m.usage} | ${m.baseline} | ${m.perKey} |`);
      usages[algorithm] = m.usage;
    }
    for (const algorithm of Object.keys(BOUNDS) as AlgorithmId[]) expect(usages[algorithm]).toBeLessThanOrEqual(BOUNDS[algorithm]);
    // The two string forms: a sliding window past its first window (`curr:prev`), a GCRA whose emission
    // interval is not a whole ms (7 per second: `limit:frac`).
    let now = Date.now() + 365 * 86_400_000;
    for (const [algorithm, limit, gap] of [
      ['sliding-window', 100, 60_000],
      ['gcra', 7_000, 1],
    ] as const) {
      await client.flushall();
      const { limiter, key } = limiterFor(algorithm, limit, 'limiter', () => now);
      await limiter.check(userKey(0));
      now += gap;
      await limiter.check(userKey(0));
      const name = key(userKey(0));
      const usage = Number(await client.memory('USAGE', name));
      rows.push(`| ${algorithm} (string form) | \`${await client.get(name)}\` | ${name.length} chars | ${usage} | | |`);
      expect(usage).toBeLessThanOrEqual(152);
    }
  });

  it('sliding-log with 1,000 admitted requests in the window, and the layouts peers use', async () => {
    await client.flushall();
    let now = Date.now() + 365 * 86_400_000;
    const { limiter, key } = limiterFor('sliding-log', 1000, 'limiter', () => now);
    for (let i = 0; i < 1000; i++) {
      now += 7;
      expect((await limiter.check('user:100000')).allowed).toBe(true);
    }
    // SAMPLES 0: every element counted (the default samples 5 of a collection's elements and extrapolates, so two
    // logs of 1,000 entries compare by luck).
    const log = Number(await client.memory('USAGE', key('user:100000'), 'SAMPLES', 0));
    rows.push('', '| layout | MEMORY USAGE (bytes) |', '|---|---|', `| tollgate sliding-log, 1,000 entries | ${log} |`);
    // Peers, same server: a bare counter with a TTL; a token bucket hash; a log of 1,000 timestamps.
    const peerKey = 'rl:user:100000';
    await client.set(peerKey, '5', 'PX', 60_000);
    rows.push(`| counter \`SET ${peerKey} 5 PX 60000\` | ${await client.memory('USAGE', peerKey)} |`);
    await client.hset(`${peerKey}:tb`, 'refilledAt', String(Date.now()), 'tokens', '99');
    await client.pexpire(`${peerKey}:tb`, 60_000);
    rows.push(`| token-bucket hash \`refilledAt, tokens\` | ${await client.memory('USAGE', `${peerKey}:tb`)} |`);
    const t = Date.now();
    const members: string[] = [];
    for (let i = 0; i < 1000; i++) members.push(String(t + i * 7), `${(t + i * 7) * 1000}`);
    await client.zadd(`${peerKey}:log`, ...members);
    const peerLog = Number(await client.memory('USAGE', `${peerKey}:log`, 'SAMPLES', 0));
    rows.push(`| sorted set of 1,000 timestamps (score ms, member µs) | ${peerLog} |`);
    expect(log).toBeLessThanOrEqual(peerLog);
  });
});
