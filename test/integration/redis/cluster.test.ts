/**
 * @module Redis Cluster: three masters (one with a replica) started by the harness. Multi-policy requests
 * for keys spread over every master, a slot moved by hand (MOVED followed, state moved with it), a
 * master restarted (the script sent again on NOSCRIPT) and a failover to the replica (state kept); once
 * per cluster client (harness.ts CLIENT_KINDS: ioredis and iovalkey `Cluster`, node-redis v6 and v4
 * `createCluster`), each on a cluster of its own.
 */
import {
  createLimiter,
  type Limiter,
  type PolicyOptions,
  type RedisClientLike,
  RedisStore,
  type RedisStoreClient,
  type StorePlan,
} from '@tollgate/core';
import { Cluster } from 'ioredis';
import { Cluster as ValkeyCluster } from 'iovalkey';
import { afterAll, beforeAll, expect, it } from 'vitest';
// The generated script of a plan, to ask a node whether it holds it (an internal of the store, as tests may use).
import { planScript } from '../../../packages/core/src/stores/redis/scripts/plan-script.js';
import {
  CLIENT_KINDS,
  commandCalls,
  describeRedis,
  HOST,
  infoField,
  type RedisClusterHarness,
  type RedisServer,
  randomPrefix,
  startCluster,
  waitFor,
} from './harness.js';

const quiet = { warn() {}, error() {} };
// The fixed window is a day: windows align to Redis TIME, and a test that spans a boundary (a failover
// takes seconds) would see its count start over. A day's boundary is midnight UTC.
const POLICIES: PolicyOptions[] = [
  { name: 'day', algorithm: 'fixed-window', limit: 2, windowMs: 86_400_000 },
  { name: 'log', algorithm: 'sliding-log', limit: 3, windowMs: 60_000 },
];
const SHADOW: PolicyOptions[] = [{ name: 'candidate', limit: 1, windowMs: 60_000 }];

for (const kind of CLIENT_KINDS)
  describeRedis(`RedisStore on a Redis Cluster (through ${kind})`, () => {
    let cluster: RedisClusterHarness;
    /** The cluster client under test, as the app would pass it. */
    let client: RedisStoreClient;

    // A cluster of its own per client: the tests move slots, restart a master and fail over.
    beforeAll(async () => {
      cluster = await startCluster(3, [0]);
      client = await cluster.storeClient(kind);
    }, 60_000);
    afterAll(async () => {
      await cluster?.close();
    });

    function setup(storeTimeoutMs = 5000): { limiter: Limiter; store: RedisStore; plan: () => StorePlan } {
      const store = new RedisStore({ client, prefix: randomPrefix() });
      let plan: StorePlan | undefined;
      const limiter = createLimiter({
        policies: POLICIES,
        shadow: { policies: SHADOW },
        store: {
          kind: 'redis',
          apply: (key, p, cost, now) => {
            plan = p;
            return store.apply(key, p, cost, now);
          },
          reset: (key, p) => store.reset(key, p),
        },
        storeTimeoutMs,
        onStoreError: 'closed',
        breaker: false,
        logger: quiet,
      });
      return { limiter, store, plan: () => plan as StorePlan };
    }

    async function slotOf(key: string): Promise<number> {
      return Number(await cluster.node(cluster.masters[0] as RedisServer).cluster('KEYSLOT', key));
    }

    /** A limiter key whose Redis keys live on `node`. */
    async function keyOn(store: RedisStore, plan: StorePlan, node: RedisServer, hint: string): Promise<string> {
      for (let i = 0; ; i++) {
        const key = `${hint}-${i}`;
        const [name] = store.keyNames(key, plan) as [string];
        if ((await cluster.ownerOf(await slotOf(name))) === node) return key;
      }
    }

    it('applies multi-policy requests to keys spread over every master, with exact counts', async () => {
      const { limiter, store, plan } = setup();
      const keys = [...Array.from({ length: 240 }, (_, i) => `user:${i}`), '', '{', '}{', 'a{b}c', 'x'.repeat(10_240)];
      const admitted = await Promise.all(
        keys.map(async (key) => {
          const out: boolean[] = [];
          for (let i = 0; i < 3; i++) {
            const d = await limiter.check(key);
            expect(d.reason).not.toBe('store-error');
            out.push(d.allowed);
          }
          return out;
        }),
      );
      for (const a of admitted) expect(a).toEqual([true, true, false]);
      // The keys landed on every master, each request's keys in one slot (else Redis answers CROSSSLOT).
      const owners = new Set<RedisServer>();
      for (const key of keys.slice(0, 60)) owners.add(await cluster.ownerOf(await slotOf((store.keyNames(key, plan()) as [string])[0])));
      expect(owners.size).toBe(3);
      for (const m of cluster.masters) expect(await cluster.node(m).dbsize()).toBeGreaterThan(0);
    });

    it("a new client's first checks on every master are Redis' answers at the default storeTimeoutMs, the masters connected first", async () => {
      // ioredis connects a Cluster's masters on their first command, and with enableOfflineQueue: false
      // (the README's setting) a call to a master still connecting waits 100 ms in its failover queue.
      const ports = cluster.masters.map((m) => m.port);
      const fresh =
        kind === 'ioredis' || kind === 'iovalkey'
          ? new (kind === 'ioredis' ? Cluster : ValkeyCluster)(
              ports.map((port) => ({ host: HOST, port })),
              { enableOfflineQueue: false, redisOptions: { autoResendUnfulfilledCommands: false } },
            )
          : undefined;
      fresh?.on('error', () => undefined);
      try {
        const storeClient = fresh ?? (await cluster.storeClient(kind));
        const limiter = createLimiter({
          policies: POLICIES,
          store: new RedisStore({ client: storeClient, prefix: randomPrefix() }),
          onStoreError: 'closed',
          logger: quiet,
        });
        // 30 keys spread over the three masters, all sent at once before anything is connected.
        const ds = await Promise.all(Array.from({ length: 30 }, (_, i) => limiter.check(`first:${i}`)));
        expect(ds.filter((d) => d.degraded).map((d) => d.key)).toEqual([]);
        expect(limiter.stats()).toMatchObject({ storeErrors: 0 });
      } finally {
        fresh?.disconnect();
      }
    });

    it('answers a NOSCRIPT storm on every master with one SCRIPT LOAD each, sent to the master of the key slot', async () => {
      const { limiter, store } = setup();
      await limiter.check('warm-up');
      for (const m of cluster.masters) {
        await cluster.node(m).script('FLUSH');
        await cluster.node(m).config('RESETSTAT');
      }
      const reloads = store.scriptReloads;
      const decisions = await Promise.all(Array.from({ length: 300 }, (_, i) => limiter.check(`storm:${i}`)));
      expect(decisions.every((d) => d.allowed && !d.degraded)).toBe(true);
      for (const m of cluster.masters) {
        const calls = await commandCalls(cluster.node(m));
        expect([calls['script|load'], calls.eval], `master on port ${m.port}`).toEqual([1, undefined]);
      }
      expect(store.scriptReloads).toBe(reloads + cluster.masters.length);
    });

    it.runIf(kind === 'ioredis')(
      'sends the script with EVAL, routed by its keys, when the client does not say which master serves them',
      async () => {
        const client = await cluster.readyClient({ redisOptions: { maxRetriesPerRequest: 1, autoResendUnfulfilledCommands: false } });
        const blind: RedisClientLike = {
          get status() {
            return client.status;
          },
          isCluster: true,
          slots: [],
          nodes: () => [],
          evalsha: (...args) => client.evalsha(...args),
          eval: (...args) => client.eval(...args),
          del: (...keys) => client.del(...keys),
          script: (subcommand, lua) => client.script(subcommand, lua),
        };
        const store = new RedisStore({ client: blind, prefix: randomPrefix() });
        const limiter = createLimiter({ policies: POLICIES, store, storeTimeoutMs: 5000, breaker: false, logger: quiet });
        for (const m of cluster.masters) {
          await cluster.node(m).script('FLUSH');
          await cluster.node(m).config('RESETSTAT');
        }
        const decisions = await Promise.all(Array.from({ length: 30 }, (_, i) => limiter.check(`blind:${i}`)));
        expect(decisions.every((d) => d.allowed && !d.degraded)).toBe(true);
        const calls = await Promise.all(cluster.masters.map((m) => commandCalls(cluster.node(m))));
        expect(calls.map((c) => c['script|load'])).toEqual(cluster.masters.map(() => undefined));
        const evals = calls.reduce((sum, c) => sum + (c.eval ?? 0), 0);
        expect(evals).toBeGreaterThanOrEqual(1);
        expect(store.scriptReloads).toBe(evals);
        expect((await limiter.check('blind:0')).allowed).toBe(true);
        expect((await limiter.check('blind:0')).allowed).toBe(false);
      },
    );

    it('follows MOVED when a slot moves to another master, and the moved state goes on counting', async () => {
      const { limiter, store, plan } = setup();
      await limiter.check('warm-up');
      const key = await keyOn(store, plan(), cluster.masters[1] as RedisServer, 'moving');
      expect((await limiter.check(key)).allowed).toBe(true);
      const names = store.keyNames(key, plan());
      const slot = await slotOf(names[0] as string);
      const src = cluster.masters[1] as RedisServer;
      const dst = cluster.masters[2] as RedisServer;
      const [srcId, dstId] = [await cluster.node(src).cluster('MYID'), await cluster.node(dst).cluster('MYID')];
      await cluster.node(dst).cluster('SETSLOT', slot, 'IMPORTING', srcId);
      await cluster.node(src).cluster('SETSLOT', slot, 'MIGRATING', dstId);
      const inSlot = (await cluster.node(src).cluster('GETKEYSINSLOT', slot, 100)) as string[];
      expect(inSlot.length).toBeGreaterThanOrEqual(names.length);
      await cluster.node(src).call('MIGRATE', HOST, String(dst.port), '', '0', '5000', 'KEYS', ...inSlot);
      for (const m of [dst, src, cluster.masters[0] as RedisServer]) await cluster.node(m).cluster('SETSLOT', slot, 'NODE', dstId);
      const moved = () =>
        cluster
          .node(src)
          .info('errorstats')
          .then((t) => Number(/errorstat_MOVED:count=(\d+)/.exec(t)?.[1] ?? 0));
      const before = await moved();
      const d = await limiter.check(key);
      expect(d).toMatchObject({ allowed: true, remaining: 0, degraded: false });
      expect(await moved()).toBeGreaterThan(before);
      expect((await limiter.check(key)).allowed).toBe(false);
      expect(await cluster.node(dst).exists(...names)).toBe(names.length);
    });

    it('survives a master restart: other masters keep answering, the restarted one gets the script again', async () => {
      const { limiter, store, plan } = setup(300);
      await limiter.check('warm-up');
      const victim = cluster.masters[2] as RedisServer;
      const onVictim = await keyOn(store, plan(), victim, 'victim');
      const elsewhere = await keyOn(store, plan(), cluster.masters[1] as RedisServer, 'bystander');
      expect((await limiter.check(onVictim)).allowed).toBe(true);
      await victim.stop();
      expect(await limiter.check(elsewhere)).toMatchObject({ allowed: true, degraded: false });
      const down = await limiter.check(onVictim);
      expect(down).toMatchObject({ allowed: false, reason: 'store-error', degraded: true });
      await victim.start();
      await cluster.waitHealthy();
      const reloads = store.scriptReloads;
      await waitFor('the restarted master to answer', async () => !(await limiter.check(onVictim)).degraded, 15_000);
      // Its data was not persisted: the key starts afresh; the script had to be sent again, to it.
      expect(store.scriptReloads).toBeGreaterThan(reloads);
      const calls = await commandCalls(cluster.node(victim));
      expect(calls['script|load']).toBeGreaterThanOrEqual(1);
      expect(calls.eval).toBeUndefined();
      expect((await limiter.check(elsewhere)).degraded).toBe(false);
    });

    it('survives a failover to the replica: the state was replicated, the script is sent again on NOSCRIPT', async () => {
      const { limiter, store, plan } = setup();
      const master = cluster.masters[0] as RedisServer;
      const replica = cluster.replicas[0] as RedisServer;
      await limiter.check('warm-up');
      const key = await keyOn(store, plan(), master, 'failover');
      expect((await limiter.check(key)).allowed).toBe(true);
      expect(await cluster.node(master).wait(1, 2000)).toBe(1);
      const reloads = store.scriptReloads;
      await cluster.node(replica).cluster('FAILOVER');
      await waitFor(
        'the replica to take over',
        async () => infoField(await cluster.node(replica).info('replication'), 'role') === 'master',
      );
      await cluster.waitHealthy();
      const d = await limiter.check(key);
      expect(d).toMatchObject({ allowed: true, remaining: 0, degraded: false });
      expect((await limiter.check(key)).allowed).toBe(false);
      expect(store.scriptReloads).toBeGreaterThan(reloads);
      // The promoted replica had no script (scripts do not replicate) and has it now. Whether it came by
      // SCRIPT LOAD or, when ioredis still mapped the slot to the old master at that moment, by one EVAL, is
      // a race of the failover; both are the NOSCRIPT path, and never a retry on another error.
      const [exists] = (await cluster.node(replica).script('EXISTS', planScript(plan()).sha)) as number[];
      expect(exists).toBe(1);
      const calls = await commandCalls(cluster.node(replica));
      expect((calls['script|load'] ?? 0) + (calls.eval ?? 0)).toBeGreaterThanOrEqual(1);
    });
  });
