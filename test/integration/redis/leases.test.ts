/**
 * @module Concurrency policies on Redis (stores/redis/kernels/concurrency.ts) against a real redis-server:
 * a plan that mixes concurrency and rate policies decides in one script exactly as MemoryStore does
 * (differential: apply, peek, release and renew, late renewals that fit and that do not, injected time,
 * hand-written and fast-check traces);
 * N processes racing for one key get exactly `limit` leases at once, never hold more than `limit`, and a
 * refusal for concurrency charges the rate policy nothing (atomicity); the leases of a killed process
 * come back after the lease time.
 */
import type { ChildProcess } from 'node:child_process';
import {
  createLimiter,
  type Decision,
  MemoryStore,
  RedisStore,
  type RepairedState,
  type Store,
  type StoreKey,
  type StorePlan,
  type StoreResult,
} from '@tollgate/core';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { QUEUE_RETRY_MS } from '../../../packages/core/src/leases/lease-queue.js';
import { describeRedis, type RedisServer, randomPrefix, startRedis, waitFor } from './harness.js';
import { nextMessage, startWorkers, stopWorkers } from './worker-pool.js';

const BASE = Date.now() + 10 * 365 * 86_400_000;

/** Every lease operation on both stores; records where they disagree. */
class LeaseTwin implements Store {
  readonly kind = 'lease-twin';
  diffs: string[] = [];

  constructor(
    readonly memory: MemoryStore,
    readonly redis: RedisStore,
  ) {}

  private compare(op: string, m: ArrayLike<number>, r: ArrayLike<number>, count: number): void {
    for (let i = 0; i < count; i++) {
      if (m[i] !== r[i]) {
        this.diffs.push(`${op}: [${i}] memory ${m[i]}, redis ${r[i]} (memory ${Array.from(m)}, redis ${Array.from(r)})`);
        return;
      }
    }
  }

  async apply(key: StoreKey, plan: StorePlan, cost: number, now: number, lease?: number): Promise<StoreResult> {
    const m = Array.from(this.memory.apply(key, plan, cost, now, lease));
    const r = await this.redis.apply(key, plan, cost, now, lease);
    this.compare(`apply ${JSON.stringify(key)} at ${now} lease ${lease}`, m, r, plan.policies.length * 5);
    return r;
  }

  async peek(key: StoreKey, plan: StorePlan, cost: number, now: number): Promise<StoreResult> {
    const m = Array.from(this.memory.peek(key, plan, cost, now));
    const r = await this.redis.peek(key, plan, cost, now);
    this.compare(`peek ${JSON.stringify(key)} at ${now}`, m, r, plan.policies.length * 5);
    return r;
  }

  async refund(key: StoreKey, plan: StorePlan, cost: number, marks: readonly number[], now: number): Promise<ArrayLike<number>> {
    const m = Array.from(this.memory.refund(key, plan, cost, marks, now));
    const r = await this.redis.refund(key, plan, cost, marks, now);
    this.compare(`refund at ${now} marks ${marks}`, m, r, plan.policies.length);
    return r;
  }

  /** Releases and renewals on their way to Redis (the limiter does not wait for them). */
  private pending: Promise<unknown>[] = [];

  /** Waits until every release and renewal sent so far has landed. */
  async settled(): Promise<void> {
    await Promise.all(this.pending);
    this.pending = [];
  }

  release(key: StoreKey, plan: StorePlan, lease: number, now: number): Promise<void> {
    this.memory.release(key, plan, lease, now);
    const done = this.redis.release(key, plan, lease, now);
    this.pending.push(done);
    return done;
  }

  renew(key: StoreKey, plan: StorePlan, lease: number, now: number): Promise<boolean> {
    const m = this.memory.renew(key, plan, lease, now);
    const done = this.redis.renew(key, plan, lease, now).then((r) => {
      if (m !== r) this.diffs.push(`renew ${lease} at ${now}: memory ${m}, redis ${r}`);
      return r;
    });
    this.pending.push(done);
    return done;
  }

  async reset(key: string, plan: StorePlan): Promise<void> {
    this.memory.reset(key, plan);
    await this.redis.reset(key, plan);
  }
}

/** `store` (leases and all), telling `settled` of each apply answered, so a test knows where each waiter is. */
function countingApplies(store: RedisStore, settled: () => void): Store {
  return {
    kind: 'redis',
    apply: (key, plan, cost, now, lease) => Promise.resolve(store.apply(key, plan, cost, now, lease)).finally(settled),
    release: (key, plan, lease, now) => store.release(key, plan, lease, now),
    renew: (key, plan, lease, now) => store.renew(key, plan, lease, now),
    reset: (key, plan) => store.reset(key, plan),
  };
}

type Op =
  | { readonly op: 'check' | 'peek'; readonly dt: number; readonly key: string }
  | { readonly op: 'release' | 'renew' | 'refund'; readonly dt: number; readonly which: number };

describeRedis('concurrency policies on Redis', () => {
  let server: RedisServer;
  let client: Redis;
  let workers: ChildProcess[] = [];

  beforeAll(async () => {
    server = await startRedis();
    client = await server.readyClient();
    workers = await startWorkers(new URL('./leases-worker.ts', import.meta.url), 4, { REDIS_PORT: String(server.port) });
  }, 60_000);
  afterAll(async () => {
    stopWorkers(workers);
    await server?.close();
  });

  /** Runs `ops` through one limiter on a LeaseTwin; returns the disagreements. `admitted`: gets each check's answer. */
  async function run(
    plan: Parameters<typeof createLimiter>[0]['policies'],
    ops: readonly Op[],
    keyed = false,
    admitted: boolean[] = [],
  ): Promise<string[]> {
    let now = BASE;
    const store = new LeaseTwin(
      new MemoryStore({ sweepIntervalMs: 0 }),
      new RedisStore({ client, prefix: randomPrefix(), timeSource: 'limiter' }),
    );
    const limiter = createLimiter({ policies: plan, store, clock: () => now, storeTimeoutMs: 60_000, breaker: false });
    const held: Decision[] = [];
    for (const op of ops) {
      now += op.dt;
      if (!('key' in op)) {
        const d = held[op.which % Math.max(1, held.length)];
        if (op.op === 'release') d?.release?.();
        else if (op.op === 'renew') d?.renew?.();
        // A refund gives back the rate policies' charge; the lease stays until released.
        else if (d !== undefined) await limiter.refund(d);
        // release and renew are fire-and-forget on Redis: let them land before the next step.
        await store.settled();
        continue;
      }
      const key = keyed ? { exports: op.key, hourly: 'account' } : op.key;
      const d = op.op === 'check' ? await limiter.check(key) : await limiter.peek(key);
      if (op.op === 'check') admitted.push(d.allowed);
      if (d.release !== undefined) held.push(d);
      if (store.diffs.length > 0) break;
    }
    return store.diffs;
  }

  const mixed = [
    { name: 'exports', algorithm: 'concurrency', limit: 2, leaseMs: 300 },
    { name: 'hourly', algorithm: 'sliding-log', limit: 5, windowMs: 1_000 },
  ] as const;

  it('decides a plan of concurrency and rate policies like MemoryStore: grants, refusals, expiry, release, renew', async () => {
    const check = (dt: number, key = 'k'): Op => ({ op: 'check', dt, key });
    const ops: Op[] = [
      check(0),
      check(10),
      check(10), // refused for concurrency: the sliding log is not charged
      { op: 'peek', dt: 0, key: 'k' },
      { op: 'release', dt: 5, which: 0 },
      check(0),
      { op: 'renew', dt: 200, which: 1 },
      check(90), // the first lease expired, the renewed one holds
      check(0),
      check(400), // every lease expired
      check(0),
      check(0),
      check(0),
      check(0, 'other'),
      { op: 'refund', dt: 1, which: 4 },
      check(0),
      { op: 'peek', dt: 0, key: 'k' },
    ];
    expect((await run([...mixed], ops)).join('\n')).toBe('');
  });

  it('renews late like MemoryStore: a lease past its deadline takes its slot again when it fits, else it has ended', async () => {
    const check = (dt: number, key = 'k'): Op => ({ op: 'check', dt, key });
    const ops: Op[] = [
      check(0), // lease 0, deadline +300
      { op: 'renew', dt: 400, which: 0 }, // late (the process stalled), the slot free: taken again, to +700
      check(0), // refused: lease 0 holds the slot
      check(250), // still refused at +650
      check(150), // +800: lease 0 expired, lease 1 granted
      { op: 'renew', dt: 10, which: 0 }, // late, and lease 1 has the slot: refused, lease 0 has ended
      check(0), // refused: only lease 1
      { op: 'renew', dt: 10, which: 1 }, // on time
      { op: 'release', dt: 0, which: 1 },
      { op: 'renew', dt: 0, which: 0 }, // ended: not sent again, whatever the slot
      check(0), // lease 2
      { op: 'peek', dt: 0, key: 'k' },
    ];
    const policies = [
      { name: 'exports', algorithm: 'concurrency' as const, limit: 1, leaseMs: 300 },
      { name: 'hourly', algorithm: 'sliding-log' as const, limit: 10, windowMs: 1_000 },
    ];
    for (const keyed of [false, true]) {
      const admitted: boolean[] = [];
      expect((await run(policies, ops, keyed, admitted)).join('\n')).toBe('');
      // Before: the late renewal was refused on both, and the check after it ran beside lease 0.
      expect(admitted).toEqual([true, false, false, true, false, true]);
    }
  });

  it('renews late under a limit of 2 like MemoryStore: one late renewal fits beside a live lease, a second does not', async () => {
    const check = (dt: number, key = 'k'): Op => ({ op: 'check', dt, key });
    const ops: Op[] = [
      check(0), // lease 0, deadline +100
      check(50), // lease 1, deadline +150
      { op: 'renew', dt: 60, which: 1 }, // +110: lease 1 renewed to +210
      check(0), // lease 2 (lease 0 expired), deadline +210
      { op: 'renew', dt: 10, which: 0 }, // +120: late, 2 live of 2: refused
      { op: 'release', dt: 0, which: 2 },
      { op: 'renew', dt: 0, which: 0 }, // ended by its refusal: not sent again
      check(0), // lease 3 takes the freed slot
      { op: 'renew', dt: 200, which: 1 }, // +320: late, every lease expired: taken again
      { op: 'renew', dt: 0, which: 3 }, // late too, one live of 2: taken again
      check(0), // refused: both slots held
      { op: 'peek', dt: 0, key: 'k' },
    ];
    const policies = [{ name: 'exports', algorithm: 'concurrency' as const, limit: 2, leaseMs: 100 }];
    const admitted: boolean[] = [];
    expect((await run(policies, ops, false, admitted)).join('\n')).toBe('');
    expect(admitted).toEqual([true, true, true, true, false]);
  });

  it("reset(key) ends the key's leases on Redis as in memory: not put back as lost, not renewed, a slot each", async () => {
    const seen: string[] = [];
    for (const kind of ['memory', 'redis'] as const) {
      let now = BASE;
      const store =
        kind === 'memory'
          ? new MemoryStore({ sweepIntervalMs: 0 })
          : new RedisStore({ client, prefix: randomPrefix(), timeSource: 'limiter' });
      const policies = [
        { name: 'hourly', algorithm: 'fixed-window' as const, limit: 5, windowMs: 1_000 },
        { name: 'cc', algorithm: 'concurrency' as const, limit: 2, leaseMs: 50 },
      ];
      const limiter = createLimiter({ policies, store, clock: () => now, storeTimeoutMs: 60_000, breaker: false, validate: false });
      const cc = (d: Decision) => d.policies.find((p) => p.name === 'cc')?.remaining;
      const a = await limiter.check('k');
      await limiter.reset('k');
      now += 1;
      const b = await limiter.check('k');
      const renewed = a.renew?.();
      await new Promise((r) => setTimeout(r, 20));
      now += 1;
      const peeked = await limiter.peek('k');
      a.release?.();
      b.release?.();
      await limiter.close();
      // Before: Redis found fewer leases in the store than the limiter held and put lease A back (cc 0, not 1).
      seen.push(`${kind}: ${a.allowed} ${b.allowed} cc ${cc(b)} renew ${renewed} peek cc ${cc(peeked)}`);
    }
    expect(seen).toEqual(['memory: true true cc 1 renew false peek cc 1', 'redis: true true cc 1 renew false peek cc 1']);
  });

  it("reset(key) ends only the leases held as it began: one granted while a later plan's reset is on its way stays", async () => {
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let resets = 0;
    class SlowReset extends RedisStore {
      override async reset(key: string, plan: StorePlan): Promise<void> {
        await super.reset(key, plan);
        // The second plan's reset is slow.
        if (++resets === 2) await gate;
      }
    }
    const store = new SlowReset({ client, prefix: randomPrefix(), timeSource: 'limiter' });
    const now = BASE;
    const limiter = createLimiter({
      plans: {
        cc: [{ name: 'cc', algorithm: 'concurrency', limit: 2, leaseMs: 60_000 }],
        rate: [{ name: 'fw', algorithm: 'fixed-window', limit: 100, windowMs: 60_000 }],
      },
      defaultPlan: 'cc',
      store,
      clock: () => now,
      storeTimeoutMs: 60_000,
      breaker: false,
      validate: false,
    });
    const a = await limiter.check('k');
    const resetting = limiter.reset('k');
    await waitFor('both plans reset in the store, the second one held', async () => resets === 2);
    const b = await limiter.check('k');
    open();
    await resetting;
    // A ended with the reset; B, granted after it, renews (before: false, and no longer held).
    expect([a.renew?.(), b.renew?.()]).toEqual([false, true]);
    a.release?.();
    b.release?.();
    await limiter.close();
  });

  it('ends a lease like MemoryStore when the clock steps back: a release drops the expired leases first', async () => {
    // Lease A expires at +10, B at +15; releasing B at +12 must drop A too, or A counts again at +8.
    const ops: Op[] = [
      { op: 'check', dt: 0, key: 'k' },
      { op: 'check', dt: 5, key: 'k' },
      { op: 'release', dt: 7, which: 1 },
      { op: 'peek', dt: -4, key: 'k' },
      { op: 'check', dt: 0, key: 'k' },
    ];
    const policies = [{ name: 'exports', algorithm: 'concurrency' as const, limit: 3, leaseMs: 10 }];
    expect((await run(policies, ops)).join('\n')).toBe('');
  });

  it('decides like MemoryStore on random traces, one key and a key per policy (fast-check)', async () => {
    const op: fc.Arbitrary<Op> = fc.oneof(
      {
        weight: 5,
        arbitrary: fc.record({
          op: fc.constantFrom<'check' | 'peek'>('check', 'check', 'check', 'peek'),
          // Now and then the clock steps back (an NTP step, another process's clock on Redis).
          dt: fc.oneof(
            fc.constant(0),
            fc.integer({ min: 0, max: 150 }),
            fc.integer({ min: 0, max: 700 }),
            fc.integer({ min: -60, max: -1 }),
          ),
          key: fc.constantFrom('a', 'b'),
        }),
      },
      {
        weight: 2,
        arbitrary: fc.record({
          op: fc.constantFrom<'release' | 'renew' | 'refund'>('release', 'renew', 'release', 'refund'),
          dt: fc.integer({ min: -30, max: 100 }),
          which: fc.nat(),
        }),
      },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.constantFrom(50, 250, 600),
        fc.constantFrom('fixed-window', 'gcra', 'sliding-window'),
        fc.boolean(),
        fc.array(op, { minLength: 5, maxLength: 30 }),
        async (limit, leaseMs, algorithm, keyed, ops) => {
          const policies = [
            { name: 'exports', algorithm: 'concurrency' as const, limit, leaseMs },
            { name: 'hourly', algorithm, limit: 4, windowMs: 1_000 },
          ];
          expect((await run(policies, ops, keyed)).join('\n')).toBe('');
        },
      ),
      { numRuns: 25 },
    );
  }, 120_000);

  it('queues on Redis: FIFO in the process, woken by its own releases, re-trying for slots freed by other processes', async () => {
    const prefix = randomPrefix();
    let settled = 0;
    const counted = (store: RedisStore) =>
      countingApplies(store, () => {
        settled += 1;
      });
    const make = (store: Store) =>
      createLimiter({
        policies: [{ name: 'exports', algorithm: 'concurrency', limit: 1, leaseMs: 60_000, queue: { size: 2, timeoutMs: 60_000 } }],
        store,
        storeTimeoutMs: 60_000,
        breaker: false,
      });
    // Two stores: two lease identities, as two processes would have.
    const elsewhere = make(new RedisStore({ client, prefix }));
    const here = make(counted(new RedisStore({ client, prefix })));
    /** Lets Redis answer (I/O only: timers are fake) until `done`. */
    const until = async (what: string, done: () => boolean | Promise<boolean>) => {
      for (let i = 0; i < 5_000; i++) {
        if (await done()) return;
        await new Promise((r) => setImmediate(r));
      }
      throw new Error(`never: ${what}`);
    };
    // Only the queue's re-try timers are virtual: they fire when the test advances them, never by themselves.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const held = await elsewhere.check('k');
      expect(held.allowed).toBe(true);
      const order: string[] = [];
      const first = here.check('k').then((d) => {
        order.push('first');
        return d;
      });
      await until('the first waiter was refused once', () => settled === 1);
      const second = here.check('k').then((d) => {
        order.push('second');
        return d;
      });
      // The queue holds 2 per key in this process: a third is refused at once, without asking Redis.
      expect(await here.check('k')).toMatchObject({ allowed: false, policy: 'exports' });
      expect(settled).toBe(1); // the second waiter joined behind the first without asking Redis either
      // Freed by the other "process": no wake-up reaches this one; the head's next re-try finds it.
      held.release?.();
      await until('the release to reach Redis', async () => (await client.zcard(`${prefix}:v2:{k}:exports:cc1m`)) === 0);
      expect(order).toEqual([]);
      vi.advanceTimersByTime(QUEUE_RETRY_MS);
      const d1 = await first;
      expect(d1.allowed).toBe(true);
      // The next in line tried at once (refused: d1 holds the slot), then waits for its re-try timer.
      await until('the second waiter was refused once', () => settled === 3);
      // Freed here: the next in line is woken at once, with no timer advanced.
      d1.release?.();
      const d2 = await second;
      expect(d2.allowed).toBe(true);
      expect(order).toEqual(['first', 'second']);
      d2.release?.();
    } finally {
      vi.useRealTimers();
    }
    await Promise.all([elsewhere.close(), here.close()]);
  }, 30_000);

  it('a release that meets NOSCRIPT (a restarted or flushed Redis) still wakes the waiter at once: woken again once it lands', async () => {
    let settled = 0;
    const store = new RedisStore({ client, prefix: randomPrefix() });
    const limiter = createLimiter({
      policies: [{ name: 'exports', algorithm: 'concurrency', limit: 1, leaseMs: 60_000, queue: { size: 2, timeoutMs: 60_000 } }],
      store: countingApplies(store, () => {
        settled += 1;
      }),
      storeTimeoutMs: 60_000,
      breaker: false,
    });
    const until = async (what: string, done: () => boolean) => {
      for (let i = 0; i < 5_000; i++) {
        if (done()) return;
        await new Promise((r) => setImmediate(r));
      }
      throw new Error(`never: ${what}`);
    };
    // The cache emptied (as by a restart): the check loads the apply script again, the release script is not there.
    await client.script('FLUSH');
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const held = await limiter.check('k');
      expect(held.allowed).toBe(true);
      let admitted: Decision | undefined;
      const waiter = limiter.check('k').then((d) => {
        admitted = d;
        return d;
      });
      await until('the waiter was refused once', () => settled === 2);
      // The release meets NOSCRIPT and runs again behind the waiter's attempt, which is refused; before,
      // the waiter then slept out its re-try timer (100 ms), which never fires here.
      held.release?.();
      await until('the waiter admitted with no timer advanced', () => admitted !== undefined);
      expect((await waiter).allowed).toBe(true);
      admitted?.release?.();
    } finally {
      vi.useRealTimers();
    }
    await limiter.close();
  }, 30_000);

  it('heals a lease key holding what the script never writes: another type, a set without expiry, a deadline out of reach', async () => {
    const prefix = randomPrefix();
    const repairs: RepairedState[] = [];
    const quiet = { warn: () => undefined, error: () => undefined };
    const limiter = createLimiter({
      policies: [{ name: 'exports', algorithm: 'concurrency', limit: 1, leaseMs: 1_000 }],
      store: new RedisStore({ client, prefix, logger: quiet, onStateRepaired: (e) => repairs.push(e) }),
      // Redis' answers, also on a loaded machine (the first call loads the script).
      storeTimeoutMs: 5_000,
    });
    const name = `${prefix}:v2:{k}:exports:cc1s`;
    const corrupt: (() => Promise<unknown>)[] = [
      () => client.set(name, 'not a set'),
      () => client.zadd(name, String(Date.now() + 5_000), 'foreign'), // a live deadline, but no expiry: not written by a lease
      async () => {
        await client.zadd(name, String(Date.now() + 10 * 86_400_000), 'forever');
        return client.pexpire(name, 60_000);
      },
    ];
    for (const [i, write] of corrupt.entries()) {
      await client.del(name);
      await write();
      const d = await limiter.check('k');
      expect(d, `case ${i}`).toMatchObject({ allowed: true, degraded: false });
      expect(repairs.length, `case ${i}`).toBe(i + 1);
      expect(await client.pttl(name)).toBeGreaterThan(0);
      d.release?.();
    }
    expect(repairs[0]).toMatchObject({ key: 'k', policy: 'exports', keyName: name });
    await limiter.close();
  });

  it('4 processes firing at one key at once get exactly limit leases, and the refusals charge nothing', async () => {
    const prefix = randomPrefix();
    const LIMIT = 3;
    const answers = workers.map((w) => nextMessage<{ admitted: number; degraded: number }>(w));
    for (const w of workers) w.send({ kind: 'burst', prefix, limit: LIMIT, requests: 10, leaseMs: 60_000 });
    const results = await Promise.all(answers);
    expect(results.reduce((n, r) => n + r.degraded, 0)).toBe(0);
    expect(results.reduce((n, r) => n + r.admitted, 0)).toBe(LIMIT);
    const released = workers.map((w) => nextMessage(w));
    for (const w of workers) w.send('go');
    await Promise.all(released);
    await waitFor('the releases to reach Redis', async () => (await client.zcard(`${prefix}:v2:{shared}:exports:cc1m`)) === 0);
    // 40 requests, 3 admitted: the hourly policy was charged 3, not 40.
    const probe = createLimiter({
      policies: [
        { name: 'exports', algorithm: 'concurrency', limit: LIMIT, leaseMs: 60_000 },
        { name: 'hourly', algorithm: 'fixed-window', limit: 10_000, windowMs: 3_600_000 },
      ],
      store: new RedisStore({ client, prefix }),
      storeTimeoutMs: 5_000,
    });
    const peeked = await probe.peek('shared');
    expect(peeked.policies.map((p) => [p.name, p.remaining])).toEqual([
      ['exports', LIMIT],
      ['hourly', 10_000 - LIMIT],
    ]);
    await probe.close();
  }, 60_000);

  it('never holds more than limit leases across 4 churning processes', async () => {
    const prefix = randomPrefix();
    const LIMIT = 3;
    const answers = workers.map((w) => nextMessage<{ granted: number; maxSeen: number }>(w));
    for (const w of workers) w.send({ kind: 'churn', prefix, limit: LIMIT, requests: 40, leaseMs: 5_000 });
    const done = await Promise.all(answers);
    expect(Math.max(...done.map((d) => d.maxSeen))).toBeLessThanOrEqual(LIMIT);
    expect(done.reduce((n, d) => n + d.granted, 0)).toBeGreaterThan(LIMIT * 4);
  }, 60_000);

  it('reclaims the leases of a killed process after the lease time', async () => {
    const prefix = randomPrefix();
    const LIMIT = 2;
    const [hog] = await startWorkers(new URL('./leases-worker.ts', import.meta.url), 1, { REDIS_PORT: String(server.port) });
    const h = hog as ChildProcess;
    const held = nextMessage<{ held: number }>(h);
    // Long enough that the leases are still live when the probe below first asks, on a loaded machine too.
    const LEASE_MS = 2_000;
    h.send({ kind: 'hog', prefix, limit: LIMIT, requests: 0, leaseMs: LEASE_MS });
    expect((await held).held).toBe(LIMIT);
    h.kill('SIGKILL');
    const limiter = createLimiter({
      policies: [{ name: 'exports', algorithm: 'concurrency', limit: LIMIT, leaseMs: LEASE_MS }],
      store: new RedisStore({ client, prefix }),
      storeTimeoutMs: 5_000,
    });
    const started = Date.now();
    const refused = await limiter.check('shared');
    expect(refused).toMatchObject({ allowed: false, policy: 'exports', remaining: 0, degraded: false });
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(LEASE_MS);
    await waitFor('the killed process’s leases to expire', async () => (await limiter.check('shared')).allowed, 3 * LEASE_MS);
    // Free within their lease time of the first refusal (nobody released them).
    expect(Date.now() - started).toBeLessThan(LEASE_MS + 1_000);
    await limiter.close();
  }, 30_000);
});
