/**
 * @module RedisStore against a real redis-server: one round trip per request whatever the number of
 * policies (MONITOR and INFO commandstats), Redis TIME and key expiry, the stored state per algorithm,
 * keys of any content, NOSCRIPT reload (and no retry on any other error), reset; once per client
 * (harness.ts CLIENT_KINDS), and through a bare `sendCommand` function.
 */
import { createHash } from 'node:crypto';
import {
  type AlgorithmId,
  createLimiter,
  type PolicyOptions,
  RedisStore,
  type RedisStoreClient,
  type SendCommandClient,
  type StorePlan,
} from '@tollgate/core';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import {
  CLIENT_KINDS,
  clearOfWindowEnd,
  commandCalls,
  describeRedis,
  type RedisServer,
  randomPrefix,
  startRedis,
  waitFor,
} from './harness.js';

const quiet = { warn() {}, error() {} };

for (const kind of CLIENT_KINDS)
  describeRedis(`RedisStore on redis-server (through ${kind})`, () => {
    let server: RedisServer;
    /** The client under test, as the app would pass it. */
    let client: RedisStoreClient;
    /** An ioredis connection of the test's own. */
    let admin: Redis;

    beforeAll(async () => {
      server = await startRedis();
      client = await server.storeClient(kind);
      admin = await server.readyClient();
    });
    afterAll(async () => {
      await server.close();
    });
    beforeEach(async () => {
      await admin.config('RESETSTAT');
    });

    /** A limiter on a fresh prefix; also returns the plan it passes to the store. */
    function limiter(policies: PolicyOptions[], shadow?: PolicyOptions[]) {
      const store = new RedisStore({ client, prefix: randomPrefix() });
      let plan: StorePlan | undefined;
      const spy = {
        kind: 'redis',
        apply: (key: string, p: StorePlan, cost: number, now: number) => {
          plan = p;
          return store.apply(key, p, cost, now);
        },
        reset: (key: string, p: StorePlan) => store.reset(key, p),
      };
      const l = createLimiter({ policies, shadow: shadow && { policies: shadow }, store: spy, storeTimeoutMs: 5000, logger: quiet });
      return { limiter: l, store, plan: () => plan as StorePlan };
    }

    it('answers a five-policy request (three enforced, two shadow) with one EVALSHA, the only command the client sends', async () => {
      const { limiter: l } = limiter(
        [
          { name: 'burst', algorithm: 'token-bucket', limit: 10, windowMs: 1000 },
          { name: 'minute', algorithm: 'sliding-window', limit: 100, windowMs: 60_000 },
          { name: 'day', algorithm: 'fixed-window', limit: 1000, windowMs: 86_400_000 },
        ],
        [
          { name: 'gcra', limit: 5, windowMs: 1000 },
          { name: 'log', algorithm: 'sliding-log', limit: 5, windowMs: 1000 },
        ],
      );
      await l.check('warm-up'); // the first call may load the script with EVAL
      const monitor = await server.client().monitor();
      const seen: { args: string[]; source: string }[] = [];
      monitor.on('monitor', (_time: string, args: string[], source: string) => seen.push({ args, source }));
      await admin.config('RESETSTAT');
      const d = await l.check('user:42');
      expect(d.allowed).toBe(true);
      expect(d.policies).toHaveLength(3);
      expect(d.shadow?.policies).toHaveLength(2);
      await waitFor('MONITOR to report the script', () => seen.some((s) => s.source === 'lua'));
      monitor.disconnect();
      const fromClients = seen.filter((s) => s.source !== 'lua' && s.args[0]?.toLowerCase() !== 'config');
      expect(fromClients.map((s) => s.args[0]?.toLowerCase())).toEqual(['evalsha']);
      expect(fromClients[0]?.args[2]).toBe('5'); // five keys, one per policy
      const calls = await commandCalls(admin);
      expect(calls.evalsha).toBe(1);
      expect(calls.eval).toBeUndefined();
    });

    it('decides with Redis TIME: keys expire at times computed from the server clock, whatever the limiter clock says', async () => {
      const {
        limiter: l,
        store,
        plan,
      } = limiter([
        { name: 'g', limit: 10, windowMs: 1000 },
        { name: 'f', algorithm: 'fixed-window', limit: 10, windowMs: 60_000 },
      ]);
      await l.check('warm-up');
      await clearOfWindowEnd(60_000);
      // The limiter passes its clock's now; the store ignores it (here: 42 ms after 1970) and reads TIME.
      const reply = await store.apply('t', plan(), 1000, 42);
      const serverNow = reply[10] as number;
      const [seconds] = await admin.time();
      expect(Math.abs(serverNow - Number(seconds) * 1000)).toBeLessThan(2000);
      const [g, f] = store.keyNames('t', plan()) as [string, string];
      // GCRA 10 per second: one request moves the TAT 100 ms past now; the key expires exactly then, and
      // holds the limit it was written under (the TAT is its expiry, and has no fraction here).
      expect(await admin.get(g)).toBe('10');
      expect(await admin.pexpiretime(g)).toBe(serverNow + 100);
      // A clock-aligned minute: the counter expires at the end of the server's current minute.
      expect(await admin.get(f)).toBe('1000');
      expect(await admin.pexpiretime(f)).toBe(serverNow - (serverNow % 60_000) + 60_000);
      expect(reply[3]).toBe(100);
      expect(reply[8]).toBe(60_000 - (serverNow % 60_000));
    });

    it('keeps each algorithm in its smallest form, every key with an expiry', async () => {
      const expectations: Record<AlgorithmId, (value: unknown, type: string) => void> = {
        'fixed-window': (v, type) => {
          expect(type).toBe('string');
          expect(v).toBe('2500');
        },
        'sliding-window': (v) => expect(v).toMatch(/^2500(:\d+)?$/),
        // What the bucket lacks, and the limit it was written under (so it carries over a change of limit).
        'token-bucket': (v) => expect(v).toMatch(/^1[45]\d{3}:10$/),
        // The limit the TAT was written under; the TAT is the expiry, and has no fraction at 10 per minute.
        gcra: (v) => expect(v).toBe('10'),
        'leaky-bucket': (v) => expect(v).toBe('10'),
        'sliding-log': (v, type) => {
          expect(type).toBe('zset');
          // The base, then one member per admitted millisecond: member = time, score = running total.
          expect((v as string[])[0]).toBe('b');
          expect((v as string[]).length).toBeLessThanOrEqual(6);
        },
      };
      for (const algorithm of Object.keys(expectations) as AlgorithmId[]) {
        const { limiter: l, store, plan } = limiter([{ name: 'p', algorithm, limit: 10, windowMs: 60_000 }]);
        // Both checks in one clock-aligned minute (fixed and sliding window).
        await clearOfWindowEnd(60_000);
        await l.check('k', { cost: 2 });
        await l.check('k', { cost: 0.5 });
        const [key] = store.keyNames('k', plan()) as [string];
        const type = await admin.type(key);
        const value = type === 'zset' ? await admin.zrange(key, '0', '-1', 'WITHSCORES') : await admin.get(key);
        expectations[algorithm](value, type);
        expect(await admin.pexpiretime(key)).toBeGreaterThan(0);
      }
    });

    it('gives keys of any content their own budget, in one hash slot per request', async () => {
      const keys = [
        '',
        ' ',
        'a b',
        '{',
        '}',
        '{}',
        '}{',
        'a{b}c',
        '{a}',
        '{b}',
        '\n',
        'line\nbreak',
        '🚦',
        'x'.repeat(10_240),
        // A literal key spelling the digest the limiter gives the long key above, and unpaired surrogates
        // (no UTF-8 form, so a client would send U+FFFD in their place): each its own bucket.
        `sha256:${createHash('sha256').update('x'.repeat(10_240)).digest('base64url')}`,
        '\uD800',
        '\uD801',
        'a\uDC00',
        '\uFFFD',
        'y'.repeat(10_240),
      ];
      const {
        limiter: l,
        store,
        plan,
      } = limiter(
        [
          // A day: clock-aligned windows restart at their boundary, which a minute's would put inside a run now and then.
          { name: 'a', algorithm: 'fixed-window', limit: 2, windowMs: 86_400_000 },
          { name: 'b', algorithm: 'sliding-log', limit: 3, windowMs: 60_000 },
        ],
        [{ name: 'c', limit: 1, windowMs: 60_000 }],
      );
      for (const key of keys) {
        const admitted = [];
        for (let i = 0; i < 3; i++) admitted.push((await l.check(key)).allowed);
        expect(admitted, JSON.stringify(key.slice(0, 20))).toEqual([true, true, false]);
      }
      // Every key name of one request carries the same non-empty hash tag: `{...}` right after the prefix.
      for (const key of [...keys, 'z'.repeat(10_240)]) {
        const names = store.keyNames(key, plan());
        const tags = names.map((n) => /^[^{]*\{([^}]+)\}/.exec(n)?.[1]);
        expect(tags[0]).toBeTruthy();
        expect(new Set(tags).size).toBe(1);
        expect(names.every((n) => n.length < 300)).toBe(true);
      }
    });

    it('reloads the script after SCRIPT FLUSH (as after a restart or failover), and only on NOSCRIPT', async () => {
      const { limiter: l, store, plan } = limiter([{ name: 'p', algorithm: 'sliding-log', limit: 3, windowMs: 60_000 }]);
      expect((await l.check('k')).allowed).toBe(true);
      await admin.script('FLUSH');
      await admin.config('RESETSTAT');
      const reloads = store.scriptReloads;
      const d = await l.check('k');
      expect(d).toMatchObject({ allowed: true, degraded: false, remaining: 1 });
      expect(store.scriptReloads).toBe(reloads + 1);
      // EVALSHA answered NOSCRIPT, SCRIPT LOAD, EVALSHA again: the request was applied once.
      let calls = await commandCalls(admin);
      expect([calls.evalsha, calls['script|load'], calls.eval]).toEqual([2, 1, undefined]);
      // Any other error is passed on as is, never retried: out of memory under noeviction refuses the script's writes.
      await admin.config('SET', 'maxmemory', '1');
      try {
        await admin.config('RESETSTAT');
        await expect(store.apply('k', plan(), 1000, 0)).rejects.toThrow(/OOM/);
        calls = await commandCalls(admin);
        expect([calls.evalsha, calls['script|load'], calls.eval]).toEqual([1, undefined, undefined]);
        expect(store.scriptReloads).toBe(reloads + 1);
      } finally {
        await admin.config('SET', 'maxmemory', '0');
      }
    });

    it('answers a NOSCRIPT storm with one SCRIPT LOAD: 256 requests in flight on a server without the script', async () => {
      const {
        limiter: l,
        store,
        plan,
      } = limiter(
        [
          { name: 'g', limit: 10, windowMs: 86_400_000 },
          { name: 'f', algorithm: 'fixed-window', limit: 10, windowMs: 86_400_000 },
        ],
        [{ name: 's', algorithm: 'sliding-window', limit: 10, windowMs: 86_400_000 }],
      );
      await l.check('warm-up');
      await admin.script('FLUSH');
      await admin.config('RESETSTAT');
      const reloads = store.scriptReloads;
      const decisions = await Promise.all(Array.from({ length: 256 }, (_, i) => l.check(`storm:${i}`)));
      expect(decisions.every((d) => d.allowed && !d.degraded)).toBe(true);
      const calls = await commandCalls(admin);
      // Every first EVALSHA met NOSCRIPT (each was sent before the script was back); each was sent once more.
      expect([calls['script|load'], calls.eval, calls.evalsha]).toEqual([1, undefined, 512]);
      expect(store.scriptReloads).toBe(reloads + 1);
      // Each request was applied once: a key's second request finds one charge in every policy.
      const again = await l.check('storm:7');
      expect(again.policies.map((p) => p.remaining)).toEqual([8, 8]);
      expect(again.shadow?.policies.map((p) => p.remaining)).toEqual([8]);
      expect(store.keyNames('storm:7', plan())).toHaveLength(3);
    });

    it('sends the script in full with EVAL when it is gone again before the retry (a flush racing the load)', async () => {
      // Any client through one sendCommand function; this one flushes the script cache right after each SCRIPT LOAD.
      const flushing: SendCommandClient = {
        sendCommand: async ([command, ...args]) => {
          const reply = await admin.call(command as string, ...args);
          if (command === 'SCRIPT') await admin.script('FLUSH');
          return reply;
        },
      };
      const store = new RedisStore({ client: flushing, prefix: randomPrefix() });
      const l = createLimiter({ policies: [{ limit: 2, windowMs: 60_000 }], store, storeTimeoutMs: 5000, logger: quiet });
      await admin.script('FLUSH');
      await admin.config('RESETSTAT');
      expect(await l.check('k')).toMatchObject({ allowed: true, remaining: 1, degraded: false });
      const calls = await commandCalls(admin);
      expect([calls.evalsha, calls['script|load'], calls.eval]).toEqual([2, 1, 1]);
      expect(store.scriptReloads).toBe(2);
      expect(await l.check('k')).toMatchObject({ allowed: true, remaining: 0 });
    });

    it('reset forgets a key in every policy, enforced and shadow, with one DEL', async () => {
      const { limiter: l, store, plan } = limiter([{ name: 'a', limit: 1, windowMs: 60_000 }], [{ name: 'b', limit: 1, windowMs: 60_000 }]);
      await l.check('k');
      expect((await l.check('k')).allowed).toBe(false);
      expect(await admin.exists(...store.keyNames('k', plan()))).toBe(2);
      await admin.config('RESETSTAT');
      await l.reset('k');
      expect((await commandCalls(admin)).del).toBe(1);
      expect(await admin.exists(...store.keyNames('k', plan()))).toBe(0);
      expect((await l.check('k')).allowed).toBe(true);
    });
  });
