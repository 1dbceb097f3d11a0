/**
 * @module Redis Sentinel (issue 25 item 6): ioredis in Sentinel mode (`sentinels`, `name`, with
 * `failoverDetector: true`) and node-redis' `createSentinel()` passed to RedisStore as they are, under
 * load while a real `redis-sentinel` runs `SENTINEL FAILOVER`: the limiter keeps answering, its writes
 * reach the new master within a bound (without `failoverDetector` ioredis kept writing to the demoted
 * master for about 10 s, until the sentinel reconfigured it), keys exhausted before the failover stay
 * exhausted after it (the replica had their state), held concurrency leases still count on the new
 * master, and the suite prints the measured switch time, degraded window and over-admission per key
 * (the figures in packages/core/README.md, Redis Sentinel).
 */
import { createLimiter, type Decision, type Limiter, RedisStore, type RedisStoreClient } from '@tollgate/core';
import { Redis } from 'ioredis';
import { createSentinel } from 'redis';
import { afterEach, expect, it } from 'vitest';
import { HOST, randomPrefix, waitFor } from './harness.js';
import { describeSentinel, MASTER_NAME, SentinelSetup } from './sentinel-harness.js';

const KEYS = ['a', 'b', 'c', 'd', 'e'];
const LIMIT = 50;
const LEASES = 3;
const quiet = { warn() {}, error() {} };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The client of `kind` in Sentinel mode, as packages/core/README.md recommends; resolves once ready. */
async function sentinelClient(kind: 'ioredis' | 'node-redis', port: number): Promise<{ client: RedisStoreClient; close(): Promise<void> }> {
  if (kind === 'ioredis') {
    const c = new Redis({
      sentinels: [{ host: HOST, port }],
      name: MASTER_NAME,
      failoverDetector: true,
      autoResendUnfulfilledCommands: false,
      retryStrategy: () => 50,
    });
    c.on('error', () => undefined);
    await waitFor('ioredis (Sentinel) ready', () => c.status === 'ready');
    return { client: c, close: async () => c.disconnect() };
  }
  const c = createSentinel({ name: MASTER_NAME, sentinelRootNodes: [{ host: HOST, port }] });
  c.on('error', () => undefined);
  await c.connect();
  return { client: c, close: () => c.close().then(() => undefined) };
}

interface Sample {
  readonly at: number;
  readonly key: string;
  readonly d: Decision;
}

describeSentinel('Redis Sentinel: SENTINEL FAILOVER mid-load', () => {
  let setup: SentinelSetup | undefined;
  let close: (() => Promise<void>) | undefined;

  afterEach(async () => {
    await close?.();
    await setup?.close();
    setup = undefined;
    close = undefined;
  });

  for (const kind of ['ioredis', 'node-redis'] as const) {
    it(`${kind}: writes reach the new master, exhausted keys stay exhausted, held leases still count`, async () => {
      setup = await SentinelSetup.start();
      const s = setup;
      const connected = await sentinelClient(kind, s.sentinelPort);
      close = connected.close;
      const prefix = randomPrefix();
      const store = new RedisStore({ client: connected.client, prefix, validate: false });
      const rate: Limiter = createLimiter({
        name: 'api',
        policies: { algorithm: 'fixed-window', limit: LIMIT, windowMs: 86_400_000 },
        store,
        logger: quiet,
      });
      const leases: Limiter = createLimiter({
        name: 'exports',
        policies: { algorithm: 'concurrency', limit: LEASES, leaseMs: 30_000 },
        store,
        logger: quiet,
      });
      // Every key exhausted in Redis, every lease taken in Redis, before the failover (a check the failure
      // mode answered on this loaded machine, past storeTimeoutMs, is not Redis' and is asked again).
      for (const key of KEYS) {
        let admitted = 0;
        for (let d = await rate.check(key); d.allowed || d.degraded; d = await rate.check(key)) if (!d.degraded) admitted += 1;
        // Fewer when a check past storeTimeoutMs still reached Redis (it counts there, not here).
        expect(admitted).toBeLessThanOrEqual(LIMIT);
      }
      const held: Decision[] = [];
      while (held.length < LEASES) {
        const d = await leases.check('job');
        if (d.degraded) d.release?.();
        else held.push(d);
      }
      expect(held.every((d) => d.allowed)).toBe(true);
      // The replica has it all before the failover (replication is asynchronous).
      const replica = s.servers[1].client();
      await waitFor('the replica to hold the state', async () => (await replica.dbsize()) >= KEYS.length + 1);

      const samples: Sample[] = [];
      let running = true;
      const load = (async () => {
        while (running) {
          const at = performance.now();
          const ds = await Promise.all(KEYS.map((key) => rate.check(key)));
          for (const [i, d] of ds.entries()) samples.push({ at, key: KEYS[i] as string, d });
          await sleep(2);
        }
      })();
      await sleep(300);
      const started = performance.now();
      const { to } = await s.failover();
      const newMaster = s.server(to).client();
      // The switch: a write of the limiter lands on the new master.
      let probe = 0;
      await waitFor(
        'a write of the limiter on the new master',
        async () => {
          probe += 1;
          await rate.check(`probe${probe}`);
          const [, found] = (await newMaster.scan('0', 'MATCH', `*probe${probe}*`, 'COUNT', 10_000)) as [string, string[]];
          return found.length > 0;
        },
        20_000,
      );
      const switchMs = performance.now() - started;
      // Another second of load on the new master.
      await sleep(1_000);
      running = false;
      await load;

      const during = samples.filter((x) => x.at >= started);
      const degraded = during.filter((x) => x.d.degraded);
      const window = degraded.length === 0 ? 0 : (degraded.at(-1) as Sample).at - (degraded[0] as Sample).at;
      const over = new Map(KEYS.map((k) => [k, during.filter((x) => x.key === k && x.d.allowed).length]));
      const most = Math.max(...over.values());
      console.log(
        `sentinel failover (${kind}): writes on the new master ${Math.round(switchMs)} ms after SENTINEL FAILOVER; ` +
          `${degraded.length} of ${during.length} decisions degraded over ${Math.round(window)} ms; ` +
          `over-admission per exhausted key (limit ${LIMIT}): ${[...over.values()].join(', ')}`,
      );
      // Without failoverDetector ioredis wrote to the demoted master for about 10 s.
      expect(switchMs).toBeLessThan(5_000);
      // Exhausted before, exhausted after: the new master carried the state on.
      const after = await Promise.all(KEYS.map((key) => rate.check(key)));
      expect(after.every((d) => !d.allowed && !d.degraded)).toBe(true);
      // What a degraded window may admit, per key: the local fallback's share of the limit.
      expect(most).toBeLessThanOrEqual(LIMIT);
      // The held leases still count on the new master: no fourth one.
      const fourth = await leases.check('job');
      expect(fourth.degraded).toBe(false);
      expect(fourth.allowed).toBe(false);
      for (const d of held) d.release?.();
      await waitFor('a lease after the releases', async () => (await leases.check('job')).allowed);
      rate.close();
      leases.close();
    }, 60_000);

    it(`${kind}: leases released around the failover do not stay held on the new master`, async () => {
      setup = await SentinelSetup.start();
      const s = setup;
      const connected = await sentinelClient(kind, s.sentinelPort);
      close = connected.close;
      const store = new RedisStore({ client: connected.client, prefix: randomPrefix(), validate: false });
      const leases: Limiter = createLimiter({
        name: 'jobs',
        policies: { algorithm: 'concurrency', limit: LEASES, leaseMs: 60_000 },
        store,
        logger: quiet,
      });
      // Requests that each hold a lease 20 ms and release it, through the failover: the releases the old
      // master took after the replica was promoted never reached the new master (the probe: 6 of 7
      // failovers left every slot taken by no request until leaseMs).
      let running = true;
      const worker = async () => {
        while (running) {
          const d = await leases.check('job');
          await sleep(d.allowed ? 20 : 2);
          d.release?.();
        }
      };
      const load = Promise.all(Array.from({ length: 2 * LEASES }, worker));
      await sleep(300);
      await s.failover();
      await sleep(1_500);
      running = false;
      await load;
      // Every request has ended: the limit is free again on the new master, now, not after leaseMs.
      await waitFor(
        'every slot free on the new master',
        async () => {
          const ds = await Promise.all(Array.from({ length: LEASES }, () => leases.check('job')));
          for (const d of ds) d.release?.();
          return ds.every((d) => d.allowed && !d.degraded);
        },
        5_000,
      );
      leases.close();
    }, 60_000);

    it(`${kind}: the charges the old master took after the replica was promoted are charged again on the new one`, async () => {
      setup = await SentinelSetup.start();
      const s = setup;
      const connected = await sentinelClient(kind, s.sentinelPort);
      close = connected.close;
      const warnings: Record<string, unknown>[] = [];
      const limit = 100_000;
      const rate = createLimiter({
        name: 'gap',
        policies: { algorithm: 'fixed-window', limit, windowMs: 86_400_000 },
        store: new RedisStore({ client: connected.client, prefix: randomPrefix(), validate: false }),
        logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
      });
      // One key decided about 300 times a second through the failover: what it admitted, Redis' answers and the failure mode's.
      let allowed = 0;
      let running = true;
      const load = (async () => {
        while (running) {
          for (const d of await Promise.all([rate.check('hot'), rate.check('hot')])) if (d.allowed) allowed += 1;
          await sleep(5);
        }
      })();
      await sleep(500);
      await s.failover();
      await sleep(3_000);
      running = false;
      await load;
      await sleep(300);
      const counted = limit - (await rate.peek('hot')).remaining;
      // Before: 50 to 108 admissions the new master had never heard of (the replica was promoted before
      // it had them; the old master acknowledged them until the client moved). Now the key's first answer
      // from the new master could not follow the last one, and the new server (its run_id) is why. 0 to 1
      // measured; the margin is for a loaded machine (a check in flight as the client moved).
      expect(allowed - counted).toBeLessThanOrEqual(5);
      expect(warnings).toContainEqual(expect.objectContaining({ code: 'WRN_RL_BUDGETS_RESTORED', behind: true }));
      await rate.close();
    }, 60_000);
  }
});
