import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLimiter } from '../limiter/create-limiter.js';
import type { Limiter, LimiterKey } from '../limiter/limiter.js';
import { compilePolicy } from '../policy.js';
import { MemoryStore } from '../stores/memory-store.js';
import {
  type ConnectionEvent,
  R_REMAINING,
  R_RESET,
  RESULT_STRIDE,
  type Store,
  type StoreKey,
  type StorePlan,
  type StoreResult,
} from '../stores/store.js';
import type { AlgorithmId, Decision, PolicyOptions } from '../types.js';
import { AnswerMemory, REMEMBERED_KEYS } from './answer-memory.js';
import { WHOLE_STORE } from './store-guard.js';

/** An asynchronous store (as Redis is) over a MemoryStore, that the test takes down and brings back. */
class OutageStore implements Store {
  readonly kind = 'outage';
  down = false;
  readonly inner = new MemoryStore({ sweepIntervalMs: 0 });

  /** The plan of the last call: a test reads the store's own count with it. */
  plan: StorePlan | undefined;

  /** How late the store runs each call after its `now`, ms, in turn (Redis runs a call a round trip after it was sent); none by default. */
  lags: readonly number[] = [];
  private calls = 0;
  private ranAt = Number.NEGATIVE_INFINITY;

  /** The store's time for a call sent at `now`: `lags` later, and never before the call it ran before. */
  private runAt(now: number): number {
    if (this.lags.length === 0) return now;
    this.ranAt = Math.max(this.ranAt, now + (this.lags[this.calls++ % this.lags.length] as number));
    return this.ranAt;
  }

  apply(key: StoreKey, plan: StorePlan, cost: number, now: number, lease?: number): Promise<StoreResult> {
    this.plan = plan;
    if (this.down) return Promise.reject(new Error('connection refused'));
    return Promise.resolve(Float64Array.from(this.inner.apply(key, plan, cost, this.runAt(now), lease)));
  }

  peek(key: StoreKey, plan: StorePlan, cost: number, now: number): Promise<StoreResult> {
    if (this.down) return Promise.reject(new Error('connection refused'));
    return Promise.resolve(Float64Array.from(this.inner.peek(key, plan, cost, this.runAt(now))));
  }

  release(key: string, plan: StorePlan, lease: number, now: number): Promise<void> {
    if (this.down) return Promise.reject(new Error('connection refused'));
    this.inner.release(key, plan, lease, now);
    return Promise.resolve();
  }

  renew(key: string, plan: StorePlan, lease: number, now: number): Promise<boolean> {
    if (this.down) return Promise.reject(new Error('connection refused'));
    return Promise.resolve(this.inner.renew(key, plan, lease, now));
  }

  refund(key: string, plan: StorePlan, cost: number, marks: readonly number[], now: number): Promise<Uint8Array> {
    if (this.down) return Promise.reject(new Error('connection refused'));
    return Promise.resolve(this.inner.refund(key, plan, cost, marks, this.runAt(now)));
  }

  reset(key: string, plan: StorePlan): void {
    this.inner.reset(key, plan);
  }

  /** The connection's listeners (Store.watchConnection) and the mark (Store.markAlive), as RedisStore has them. */
  private readonly listeners = new Set<(event: ConnectionEvent) => void>();
  marked = false;
  marks = 0;

  watchConnection(listener: (event: ConnectionEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** While set, the mark is never answered (a Redis that stalls right after the reconnect). */
  markStalls = false;

  markAlive(): Promise<boolean> {
    this.marks += 1;
    if (this.markStalls) return new Promise(() => {});
    const missing = !this.marked;
    this.marked = true;
    return Promise.resolve(missing);
  }

  /** The server's identity (Store.servers, of the one node a store without `nodeOf` has), when the test gives one: a restart or a failover changes it. */
  server: string | undefined = undefined;

  servers(): Promise<ReadonlyMap<string, string>> {
    return Promise.resolve(new Map(this.server === undefined ? [] : [[WHOLE_STORE, this.server]]));
  }

  /** The server comes back (as `server`) with `key` holding only `used` milli-units of what it had: an older snapshot, a lagging replica. */
  behind(server: string, key: string, used: number, now: number): void {
    this.server = server;
    this.inner.reset(key, this.plan as StorePlan);
    if (used > 0) this.inner.apply(key, this.plan as StorePlan, used, now);
    this.reconnect(false);
  }

  /** The store loses everything, the connection staying up (a FLUSHALL). */
  wipe(): void {
    this.inner.clear();
    this.marked = false;
  }

  /** The connection closes and comes back; `wiped`: the store lost everything meanwhile (a restart without persistence). */
  reconnect(wiped: boolean): void {
    for (const l of this.listeners) l('lost');
    if (wiped) {
      this.inner.clear();
      this.marked = false;
    }
    for (const l of this.listeners) l('ready');
  }

  /** While set, calls are held: the store runs each when the test lets it (`runHeld`), late. */
  holding = false;
  private readonly waiting: Array<() => void> = [];

  /** Holds the calls that follow, but for the next `skip`, until `runHeld`. */
  hold(skip = 0): void {
    this.holding = true;
    const apply = OutageStore.prototype.apply;
    this.apply = (key, plan, cost, now, lease) => {
      if (!this.holding || skip-- > 0) return apply.call(this, key, plan, cost, now, lease);
      return new Promise<StoreResult>((resolve) => this.waiting.push(() => resolve(apply.call(this, key, plan, cost, now, lease))));
    };
  }

  /** Runs the held calls now (their replies come late), oldest first. */
  runHeld(): void {
    for (const run of this.waiting.splice(0)) run();
  }

  /** The store's own count of `key`: what a peek says remains, milli-units. */
  remainingOf(key: string, now: number): number {
    return this.inner.peek(key, this.plan as StorePlan, 1000, now)[R_REMAINING] as number;
  }
}

/** Fake timers, `performance.now` with them: the watchdog's storeTimeoutMs passes when the test says. */
function fakeWatchdogTime() {
  vi.useFakeTimers({
    toFake: ['setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'setTimeout', 'clearTimeout', 'performance'],
  });
}

afterEach(() => {
  vi.useRealTimers();
});

const quiet = { warn() {}, error() {} };

/** A limiter of `limit` per minute (or of the policies given) over an OutageStore, at limiter time 1,000. */
function setup(limit: number | PolicyOptions[], localShare = 1, storeTimeoutMs?: number) {
  let t = 1_000;
  const store = new OutageStore();
  const limiter = createLimiter({
    policies: typeof limit === 'number' ? { limit, windowMs: 60_000 } : limit,
    store,
    localShare,
    breaker: false,
    storeTimeoutMs,
    clock: () => t,
    logger: quiet,
  });
  const admitted = async (key: LimiterKey, n: number) => {
    let yes = 0;
    for (let i = 0; i < n; i++) if ((await limiter.check(key)).allowed) yes += 1;
    return yes;
  };
  return { store, limiter, admitted, advance: (ms: number) => (t += ms) };
}

/** `setup` for a plan of 5 per 10 s and 100 per 10 minutes, the store given up on after 20 ms. */
function shortAndLong() {
  return setup(
    [
      { name: 'short', algorithm: 'fixed-window', limit: 5, windowMs: 10_000 },
      { name: 'long', algorithm: 'fixed-window', limit: 100, windowMs: 600_000 },
    ],
    1,
    20,
  );
}

/** 4 admitted by the store (of 10), then 6 by the failure mode while it is down (owed to it); up again. */
async function sixOwed(admitted: (key: string, n: number) => Promise<number>, store: OutageStore) {
  expect(await admitted('k', 4)).toBe(4);
  store.down = true;
  expect(await admitted('k', 6)).toBe(6);
  store.down = false;
}

/**
 * 2 admitted by the store, 3 in an outage; the carry of the 3 after it is held by the store and given
 * up (owed again), and the next answer carries them again, which the store takes: the first carry is
 * still held (`runHeld` runs it, late).
 */
async function carriedTwice(limit: number) {
  fakeWatchdogTime();
  const s = setup(limit, 1, 20);
  const { store, limiter, admitted, advance } = s;
  expect(await admitted('k', 2)).toBe(2);
  store.down = true;
  expect(await admitted('k', 3)).toBe(3);
  store.down = false;
  store.hold(1);
  expect((await limiter.check('k')).allowed).toBe(true);
  await vi.advanceTimersByTimeAsync(100);
  store.holding = false;
  advance(1);
  expect(await admitted('k', 1)).toBe(1);
  await vi.advanceTimersByTimeAsync(0);
  return s;
}

/** 4 admitted by the store of 10; then a check the store holds, given up and admitted by the failure mode (owed); `runHeld` runs it, late. */
async function slowCheckGivenUp() {
  fakeWatchdogTime();
  const s = setup(10, 1, 20);
  expect(await s.admitted('k', 4)).toBe(4);
  s.store.hold();
  const slow = s.limiter.check('k');
  await vi.advanceTimersByTimeAsync(100);
  expect((await slow).allowed).toBe(true);
  s.store.holding = false;
  return s;
}

/** How many of `n` checks of key 'k' `limiter` admits, one after another, each ending at once (its lease, if any, released). */
async function admittedOf(limiter: Limiter, n: number): Promise<number> {
  let yes = 0;
  for (let i = 0; i < n; i++) {
    const d = await limiter.check('k');
    if (d.allowed) yes += 1;
    await d.release?.();
  }
  return yes;
}

describe('an outage continues the budget (onStoreError local)', () => {
  it('a key the store had exhausted stays exhausted through the outage, until its reset', async () => {
    const { store, limiter, admitted, advance } = setup(5);
    expect(await admitted('k', 5)).toBe(5);
    const refused = await limiter.check('k');
    expect(refused).toMatchObject({ allowed: false, degraded: false });
    store.down = true;
    const d = await limiter.check('k');
    // The same verdict as the store's, with the same wait: until the window the store reported resets.
    expect(d).toMatchObject({ allowed: false, degraded: true, reason: 'limited', remaining: 0, retryAfterMs: refused.retryAfterMs });
    expect(await admitted('k', 20)).toBe(0);
    // A key the store never answered starts from the local limiter, as before.
    expect(await admitted('fresh', 8)).toBe(5);
    // GCRA (the default) refills one request every 12 s: after the wait the store gave, one more, as the
    // store itself would have admitted; after the full reset the local limiter decides alone.
    advance(refused.retryAfterMs);
    expect(await admitted('k', 8)).toBe(1);
    advance(60_000);
    expect(await admitted('k', 8)).toBe(5);
  });

  it('a plan with a concurrency policy continues its rate budget too; the outage leases stay within the local share', async () => {
    let t = 1_000;
    const store = new OutageStore();
    const limiter = createLimiter({
      policies: [
        { name: 'exports', algorithm: 'concurrency', limit: 2, leaseMs: 120_000 },
        { name: 'daily', algorithm: 'fixed-window', limit: 5, windowMs: 86_400_000 },
      ],
      store,
      breaker: false,
      clock: () => t,
      logger: quiet,
    });
    const run = async (key: string, n: number) => {
      let yes = 0;
      for (let i = 0; i < n; i++) {
        const d = await limiter.check(key);
        if (d.allowed) yes += 1;
        await d.release?.();
      }
      return yes;
    };
    expect(await run('spent', 5)).toBe(5);
    expect(await run('half', 2)).toBe(2);
    store.down = true;
    t += 1_000;
    // The exhausted daily budget stays exhausted; the other key gets what the store said remained.
    expect(await limiter.check('spent')).toMatchObject({ allowed: false, degraded: true, reason: 'limited', policy: 'daily' });
    expect(await run('spent', 10)).toBe(0);
    expect(await run('half', 10)).toBe(3);
    // Leases taken in the outage are the local store's, at most the concurrency limit, and end on release.
    const held = [await limiter.check('fresh'), await limiter.check('fresh'), await limiter.check('fresh')];
    expect(held.map((d) => d.allowed)).toEqual([true, true, false]);
    expect(held[2]).toMatchObject({ policy: 'exports' });
    await held[0]?.release?.();
    expect((await limiter.check('fresh')).allowed).toBe(true);
    await limiter.close();
  });

  it('a key with budget left gets exactly what the store said remained, less nothing more', async () => {
    const { store, limiter, admitted } = setup(10);
    expect(await admitted('k', 4)).toBe(4);
    store.down = true;
    const d = await limiter.check('k');
    expect(d).toMatchObject({ allowed: true, degraded: true, remaining: 5 });
    expect(await admitted('k', 10)).toBe(5);
  });

  it('a window algorithm refuses until the window the store reported resets', async () => {
    let t = 0;
    const store = new OutageStore();
    const limiter = createLimiter({
      policies: { algorithm: 'fixed-window', limit: 3, windowMs: 10_000 },
      store,
      breaker: false,
      clock: () => t,
      logger: quiet,
    });
    t = 2_000;
    for (let i = 0; i < 3; i++) await limiter.check('k');
    store.down = true;
    t = 5_000;
    expect(await limiter.check('k')).toMatchObject({ allowed: false, degraded: true, retryAfterMs: 5_000 });
    t = 10_000;
    expect(await limiter.check('k')).toMatchObject({ allowed: true, degraded: true });
  });

  it('a flapping store does not multiply bursts: later outages in the same window admit nothing more', async () => {
    const { store, admitted } = setup(10);
    expect(await admitted('k', 4)).toBe(4);
    let duringOutages = 0;
    for (let flap = 0; flap < 5; flap++) {
      store.down = true;
      duringOutages += await admitted('k', 10);
      store.down = false;
      // Back up: the store never saw the local admissions, so it answers from its own count.
      await admitted('k', 1);
    }
    // The first outage hands out the 6 the store said remained; the next four hand out nothing, since
    // what the failure mode admitted is owed until the window's reset.
    expect(duringOutages).toBe(6);
  });

  it('what the failure mode admitted reaches the store when it answers again: a window that began in the outage gets its limit once, not twice (a plan with a concurrency policy too: before, its rate policy was charged nothing)', async () => {
    const cases = ['fixed-window', 'sliding-window', 'gcra', 'token-bucket'].flatMap((a) => [[a, false] as const, [a, true] as const]);
    for (const [algorithm, leases] of cases) {
      let t = 1_000;
      const store = new OutageStore();
      const limiter = createLimiter({
        policies: [
          { name: 'rate', algorithm: algorithm as AlgorithmId, limit: 10, windowMs: 10_000 },
          ...(leases ? [{ name: 'running', algorithm: 'concurrency' as const, limit: 5 }] : []),
        ],
        store,
        localShare: 0.5,
        breaker: false,
        clock: () => t,
        logger: quiet,
      });
      const admitted = (n: number) => admittedOf(limiter, n);
      const name = `${algorithm}${leases ? ' with a concurrency policy' : ''}`;
      expect(await admitted(10), name).toBe(10);
      // The store goes down; the window (or the bucket) resets during the outage: the local limiter's share.
      store.down = true;
      t = 20_500;
      expect(await admitted(20), name).toBe(5);
      // Back in that window: the store, told of the 5, admits the other 5 (before: 10 more, 15 in all).
      store.down = false;
      t = 21_000;
      expect(await admitted(20), name).toBe(5);
      await limiter.close();
    }
  });

  it("an outage across a window's end: the new window's admissions are charged even a window after the outage's first (before: dropped, 20 of 10)", async () => {
    // At 1,000 ms, half way through window A (fixed windows of 2 s).
    const { store, limiter, admitted, advance } = setup([{ algorithm: 'fixed-window', limit: 10, windowMs: 2_000 }]);
    expect(await admitted('k', 2)).toBe(2);
    // Down: 4 admitted in window A, then window B's 10, all by the local limiter.
    store.down = true;
    expect(await admitted('k', 4)).toBe(4);
    advance(1_100);
    expect(await admitted('k', 20)).toBe(10);
    // Up again 1.6 windows in: more than a window after the outage's first admission, less than one
    // after window B's. The store, told of them, admits nothing more in B but the check whose answer
    // ended the outage (sent before the carry; the key's memory, which would refuse it, ended with
    // window A: a known one over).
    store.down = false;
    advance(1_100);
    expect(await admitted('k', 20)).toBeLessThanOrEqual(1);
    advance(800);
    expect(await admitted('k', 20)).toBe(10);
    await limiter.close();
  });

  it('several keys per decision: a tenant the store had exhausted stays exhausted for users never seen with it (before: each new pair a fresh tenant budget, 50 of 30)', async () => {
    const run = async (before: Record<string, number>, during: readonly string[]) => {
      const { store, limiter, admitted, advance } = setup([
        { name: 'per-user', algorithm: 'fixed-window', limit: 10, windowMs: 60_000 },
        { name: 'per-tenant', algorithm: 'fixed-window', limit: 30, windowMs: 60_000 },
      ]);
      const pair = (user: string) => ({ 'per-user': user, 'per-tenant': 't1' });
      for (const [u, n] of Object.entries(before)) await admitted(pair(u), n);
      store.down = true;
      advance(1_000);
      let total = 0;
      for (const u of during) total += await admitted(pair(u), 12);
      await limiter.close();
      return total;
    };
    // Exhausted by u1 to u3 (u4 refused for it): nobody gets a request through in the outage.
    expect(await run({ u1: 10, u2: 10, u3: 10, u4: 1 }, ['u1', 'u4', 'u5', 'u6'])).toBe(0);
    // 10 of 30 used: what the store said remained (20), whichever users take it (before: 30 more, 40 of 30).
    expect(await run({ u1: 10 }, ['u5', 'u6', 'u7'])).toBe(20);
  });

  it('a plan of a short and a long window: the long one is charged all the outage admitted, not only what the short one had left', async () => {
    // One key for both policies, and one key per policy (several keys, one decision); each algorithm as the long one.
    const cases = [
      ...(['fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'gcra'] as const).map((algorithm) => ({ key: 'k', algorithm })),
      { key: { second: 'ip', 'ten-minutes': 'account' }, algorithm: 'fixed-window' as const },
    ];
    for (const { key, algorithm } of cases) {
      let t = 1_000;
      const store = new OutageStore();
      const limiter = createLimiter({
        policies: [
          { name: 'second', algorithm: 'fixed-window', limit: 5, windowMs: 1_000 },
          { name: 'ten-minutes', algorithm, limit: 20, windowMs: 600_000 },
        ],
        store,
        breaker: false,
        clock: () => t,
        logger: quiet,
      });
      const admitted = async (n: number) => {
        let yes = 0;
        for (let i = 0; i < n; i++) if ((await limiter.check(key)).allowed) yes += 1;
        return yes;
      };
      expect(await admitted(1)).toBe(1);
      // Three seconds of outage: what the store left of the first second, then 5 in each of the next two.
      store.down = true;
      expect(await admitted(10)).toBe(4);
      t = 2_000;
      expect(await admitted(10)).toBe(5);
      t = 3_000;
      expect(await admitted(10)).toBe(5);
      // Back: this check admitted, the 14 carried; the second's window takes 4 of them, the ten minutes all 14.
      store.down = false;
      t = 3_500;
      expect(await admitted(1)).toBe(1);
      await new Promise((r) => setTimeout(r, 0));
      const left = (await limiter.peek(key)).policies.map((p) => Math.floor(p.remaining));
      // Before: [0, 14], the ten minutes charged only the 4 the second had left.
      expect(left, algorithm).toEqual([0, 20 - 16]);
      // A second outage in the same ten minutes continues from what the store said after the carry: 4 left, not 14.
      store.down = true;
      t = 4_000;
      expect(await admitted(10), algorithm).toBe(4);
      await limiter.close();
    }
  });

  it('a carry the store refuses to take (down again) is owed again: the next outage still counts it', async () => {
    const { store, admitted, advance } = setup(10);
    expect(await admitted('k', 4)).toBe(4);
    store.down = true;
    expect(await admitted('k', 10)).toBe(6);
    // Up for one answer, whose carry fails: the store goes down before it is sent.
    store.down = false;
    const apply = store.apply.bind(store);
    let calls = 0;
    store.apply = (...args) => {
      calls += 1;
      if (calls === 2) store.down = true;
      return apply(...args);
    };
    // The store never saw the 6: its answer counts 4 and this one, but with the 6 there is no room left:
    // refused (before: admitted from the store's own count, 11 of 10).
    expect(await admitted('k', 1)).toBe(0);
    await new Promise((r) => setTimeout(r, 0));
    expect(calls).toBe(2);
    advance(1);
    expect(await admitted('k', 10)).toBe(0);
    // Up again: the 6 are still owed and reach the store with the next answer: 10 - 4 - 1 - 6 < 0, none left.
    store.down = false;
    await admitted('k', 1);
    await new Promise((r) => setTimeout(r, 0));
    // The store's own count: 4, the two refused checks' charges (they stand for 2 of the 6), and what fits
    // of the rest of the 6 carried: the key ends exhausted.
    expect(store.inner.peek('k', store.plan as StorePlan, 1000, 1_002)[R_REMAINING]).toBe(0);
  });

  it('a carry the store never answers is given up after storeTimeoutMs and owed again, as a check would be', async () => {
    fakeWatchdogTime();
    const { store, limiter, admitted, advance } = setup(10, 1, 20);
    expect(await admitted('k', 4)).toBe(4);
    store.down = true;
    expect(await admitted('k', 10)).toBe(6);
    store.down = false;
    // The answer after the outage comes; the carry of the 6 that follows it never does.
    const apply = store.apply.bind(store);
    let calls = 0;
    store.apply = (...args) => {
      calls += 1;
      return calls === 2 ? new Promise<StoreResult>(() => {}) : apply(...args);
    };
    // 4 and this one by the store's count, 6 by the failure mode's: refused (before: admitted, 11 of 10).
    expect(await admitted('k', 1)).toBe(0);
    expect(calls).toBe(2);
    // Before: the carry was not watched, so the 6 were neither charged nor owed: lost for good.
    await vi.advanceTimersByTimeAsync(150);
    store.apply = apply;
    advance(1);
    await admitted('k', 1);
    await vi.advanceTimersByTimeAsync(0);
    // Owed again and carried with the next answer: 4, the two refused checks' charges, and what fits of the 6 (the key ends exhausted).
    expect(store.inner.peek('k', store.plan as StorePlan, 1000, 1_002)[R_REMAINING]).toBe(0);
    await limiter.close();
  });

  it('a carry given up, carried again, then run late is charged once: the late one goes back', async () => {
    const { store, limiter } = await carriedTwice(10);
    expect(store.remainingOf('k', 1_001)).toBe(3_000); // 2 + 3 + 1 + 1 counted
    // Now the store runs the carry it was given first. Before: charged a second time (2 + 3 + 3 + 1 + 1).
    store.runHeld();
    await vi.advanceTimersByTimeAsync(0);
    expect(store.remainingOf('k', 1_001)).toBe(3_000);
    await limiter.close();
  });

  it('the late reply of a carry given up and carried again takes nothing off the admissions owed since', async () => {
    const { store, limiter, admitted } = await carriedTwice(20);
    // A second outage: 1 more admitted, owed anew.
    store.down = true;
    expect(await admitted('k', 1)).toBe(1);
    store.down = false;
    // The first carry runs late; then the store answers again and the 1 is carried.
    store.runHeld();
    await vi.advanceTimersByTimeAsync(0);
    expect(await admitted('k', 1)).toBe(1);
    await vi.advanceTimersByTimeAsync(0);
    // 2 + 3 + 1 + 1 + 1 + 1 = 9 counted once each (11 left). Before: the late reply took the 3 off the
    // 1 owed since (lost), and the 3 were charged twice: 11 counted.
    expect(store.remainingOf('k', 1_001)).toBe(11_000);
    await limiter.close();
  });

  it('a check the failure mode admitted, run late by the store after a carry took what it owed, is charged once', async () => {
    const { store, limiter, admitted, advance } = await slowCheckGivenUp();
    advance(1);
    // The next answer carries the 1 owed.
    expect(await admitted('k', 1)).toBe(1);
    await vi.advanceTimersByTimeAsync(0);
    expect(store.remainingOf('k', 1_001)).toBe(4_000); // 4 + 1 + 1 counted
    store.runHeld();
    await vi.advanceTimersByTimeAsync(0);
    // Before: counted twice (7 charged).
    expect(store.remainingOf('k', 1_001)).toBe(4_000);
    await limiter.close();
  });

  it('checks the failure mode refused, run by the store but answered after a carry that left the key exhausted, keep their charge: nothing over the limit', async () => {
    fakeWatchdogTime();
    const { store, limiter, admitted } = setup(10, 1, 20);
    await sixOwed(admitted, store);
    // Two checks the store runs at once but answers late (a Redis that was paused): the failure mode,
    // with the key's 10 used by its count, refuses them; the store counts them (4 + 2 of its 10).
    const apply = store.apply.bind(store);
    const replies: (() => void)[] = [];
    store.apply = (...args) => {
      const r = apply(...args);
      return new Promise<StoreResult>((resolve) => replies.push(() => resolve(r)));
    };
    const slow = [limiter.check('k'), limiter.check('k')];
    await vi.advanceTimersByTimeAsync(100);
    expect((await Promise.all(slow)).map((d) => [d.allowed, d.degraded])).toEqual([
      [false, true],
      [false, true],
    ]);
    store.apply = apply;
    // The next answer, sent before the carry of the 6 (3 left by the store's count, less the 6): refused.
    // Before: admitted, then the late replies gave their charges back after the carry: 3 more admitted.
    expect(await admitted('k', 1)).toBe(0);
    await vi.advanceTimersByTimeAsync(0);
    for (const reply of replies.splice(0)) reply();
    await vi.advanceTimersByTimeAsync(0);
    expect(store.remainingOf('k', 1_001)).toBe(0);
    expect(await admitted('k', 5)).toBe(0);
    await limiter.close();
  });

  it('a check the failure mode refused, run late while the key still owes, stands for part of what is owed: nothing given back, nothing over', async () => {
    fakeWatchdogTime();
    const { store, limiter, admitted } = setup(10, 1, 20);
    await sixOwed(admitted, store);
    store.hold();
    const slow = limiter.check('k');
    await vi.advanceTimersByTimeAsync(100);
    expect((await slow).allowed).toBe(false);
    store.holding = false;
    const refund = vi.spyOn(store, 'refund');
    // The store runs it late, before the key answers again (4 + 1 counted): it counts as 1 of the 6 owed.
    // Before: given back at once, a refund that may reach the store after the carry read the key's room.
    store.runHeld();
    await vi.advanceTimersByTimeAsync(0);
    expect(refund).not.toHaveBeenCalled();
    expect(await admitted('k', 5)).toBe(0);
    await vi.advanceTimersByTimeAsync(0);
    expect(store.remainingOf('k', 1_001)).toBe(0);
    await limiter.close();
  });

  it('a plan of a short and a long window: a late run of an admitted check goes back only from the long one, which the carry charged in full', async () => {
    fakeWatchdogTime();
    const s = shortAndLong();
    const { store, limiter } = s;
    let t = 1_000;
    const admitted = (n: number) => s.admitted('k', n);
    expect(await admitted(2)).toBe(2);
    const plan = store.plan as StorePlan;
    const used = () => {
      const r = store.inner.peek('k', plan, 1000, t);
      return [5 - (r[R_REMAINING] as number) / 1000, 100 - (r[RESULT_STRIDE + R_REMAINING] as number) / 1000];
    };
    // A check the store runs at once and answers late: admitted by the failure mode (owed).
    const apply = store.apply.bind(store);
    const replies: (() => void)[] = [];
    store.apply = (...args) => {
      const r = apply(...args);
      return new Promise<StoreResult>((resolve) => replies.push(() => resolve(r)));
    };
    const slow = limiter.check('k');
    await vi.advanceTimersByTimeAsync(100);
    expect((await slow).allowed).toBe(true);
    store.apply = apply;
    store.down = true;
    expect(await admitted(5)).toBe(2);
    store.down = false;
    t = s.advance(1);
    // 5 admitted (2 by the store, 3 by the failure mode): the next answer has no room in the short window.
    expect(await admitted(1)).toBe(0);
    await vi.advanceTimersByTimeAsync(0);
    for (const reply of replies.splice(0)) reply();
    await vi.advanceTimersByTimeAsync(0);
    // Before: the check was admitted, and the late run went back from both windows (short 4 of 5, more admitted).
    expect(used()).toEqual([5, 5]);
    expect(await admitted(3)).toBe(0);
    await limiter.close();
  });

  it('a carry cut to what the key had left charges the rest of what is owed when budget comes back meanwhile (a give-back landing)', async () => {
    const { store, limiter, admitted } = setup(10);
    await sixOwed(admitted, store);
    const plan = store.plan as StorePlan;
    const apply = store.apply.bind(store);
    store.apply = (key, p, cost, now, lease) => {
      // The carry's charge of what the key had left (5): 2 given back elsewhere reach the store first.
      if (cost === 5_000) {
        store.inner.reset('k', plan);
        store.inner.apply('k', plan, 3_000, now);
      }
      return apply(key, p, cost, now, lease);
    };
    // 4 by the store's count, this one, and 6 owed: refused.
    expect(await admitted('k', 1)).toBe(0);
    await new Promise((r) => setTimeout(r, 0));
    store.apply = apply;
    // 3 + 5 charged, 1 of the 6 still owed: charged too. Before: 2 left, so 2 admitted beside the 10.
    expect(store.remainingOf('k', 1_001)).toBe(1_000);
    expect(await admitted('k', 5)).toBe(1);
    await limiter.close();
  });

  it('a plan of a short and a long window: a check the failure mode admitted, that the store ran late but refused (the short one full by then), stays owed to the long one', async () => {
    fakeWatchdogTime();
    const s = shortAndLong();
    const { store, limiter } = s;
    expect(await s.admitted('k', 2)).toBe(2);
    const plan = store.plan as StorePlan;
    store.hold();
    const slow = limiter.check('k');
    await vi.advanceTimersByTimeAsync(100);
    expect((await slow).allowed).toBe(true);
    store.holding = false;
    // Other processes fill the short window before the store runs it: it refuses it, charging nothing.
    for (let i = 0; i < 3; i++) store.inner.apply('k', plan, 1_000, 1_000);
    store.runHeld();
    await vi.advanceTimersByTimeAsync(0);
    // The next answer carries what is owed: the long window is charged the admission.
    // Before: the late refusal was taken for a charge, and the long window never heard of it (5 of 6).
    expect(await s.admitted('k', 1)).toBe(0);
    await vi.advanceTimersByTimeAsync(0);
    const r = store.inner.peek('k', plan, 1000, 1_000);
    expect(100 - (r[RESULT_STRIDE + R_REMAINING] as number) / 1000).toBe(6);
    await limiter.close();
  });

  it('a check the failure mode admitted and the store ran late counts once in the next outage', async () => {
    fakeWatchdogTime();
    for (const answerBetween of [false, true]) {
      const { store, limiter, admitted, advance } = await slowCheckGivenUp();
      store.runHeld();
      await vi.advanceTimersByTimeAsync(0);
      advance(1);
      // The store counts it (5); with an answer between, 6.
      if (answerBetween) expect(await admitted('k', 1)).toBe(1);
      store.down = true;
      // Before: with an answer between, 3 (the late one was taken off the store's answers that counted it).
      expect(await admitted('k', 10)).toBe(answerBetween ? 4 : 5);
      await limiter.close();
    }
  });

  it('reset(key) forgets what the key owes the store too', async () => {
    const { store, limiter, admitted } = setup(10);
    store.down = true;
    expect(await admitted('k', 3)).toBe(3);
    await limiter.reset('k');
    store.down = false;
    expect(await admitted('k', 1)).toBe(1);
    await new Promise((r) => setTimeout(r, 0));
    // One counted. Before: the 3 admitted before the reset were charged to the fresh key too (6 left).
    expect(store.inner.peek('k', store.plan as StorePlan, 1000, 1_000)[R_REMAINING]).toBe(9_000);
  });

  it("a leaky bucket's admissions in an outage wait behind the queue the store reported, one interval apart (before: behind the empty local queue)", async () => {
    // 10 a second, a queue of up to 1 s (maxDelayMs): 10 queued in the store, then it goes down.
    const { store, limiter, advance } = setup([{ algorithm: 'leaky-bucket', limit: 10, windowMs: 1_000, maxDelayMs: 1_000 }]);
    let last = 0;
    for (let i = 0; i < 10; i++) {
      const d = await limiter.check('k');
      expect(d.allowed).toBe(true);
      last = 1_000 + d.delayMs;
    }
    store.down = true;
    const scheduled: number[] = [];
    let longest = 0;
    for (let ms = 0; ms < 1_500; ms += 10) {
      advance(10);
      const d = await limiter.check('k');
      if (!d.allowed) continue;
      scheduled.push(1_000 + ms + 10 + d.delayMs);
      longest = Math.max(longest, d.delayMs);
    }
    // No admission waits past maxDelayMs: a full queue refuses.
    expect(longest).toBeLessThanOrEqual(1_000);
    // The local admissions start after the store's queue and keep the policy's pace: 100 ms apart.
    expect(scheduled.length).toBeGreaterThan(5);
    expect(scheduled[0]).toBeGreaterThanOrEqual(last + 100);
    for (let i = 1; i < scheduled.length; i++) expect((scheduled[i] as number) - (scheduled[i - 1] as number)).toBeGreaterThanOrEqual(99);
    await limiter.close();
  });

  it("with localShare, a leaky bucket's outage admissions in each process are 1 / localShare intervals apart: the processes together keep the pace", async () => {
    const { store, limiter, advance } = setup([{ algorithm: 'leaky-bucket', limit: 10, windowMs: 1_000, maxDelayMs: 1_000 }], 0.25);
    for (let i = 0; i < 10; i++) expect((await limiter.check('k')).allowed).toBe(true);
    store.down = true;
    const scheduled: number[] = [];
    for (let ms = 0; ms < 3_000; ms += 10) {
      advance(10);
      const d = await limiter.check('k');
      if (d.allowed) scheduled.push(ms + 10 + d.delayMs);
    }
    expect(scheduled.length).toBeGreaterThan(2);
    // Four processes, a quarter each: 400 ms apart here (before: 100, and four processes scheduled 17 to 19 in a second).
    for (let i = 1; i < scheduled.length; i++) expect((scheduled[i] as number) - (scheduled[i - 1] as number)).toBeGreaterThanOrEqual(399);
    await limiter.close();
  });

  it('with localShare the local limiter still caps a key the store had left room on', async () => {
    const { store, admitted } = setup(10, 0.2);
    expect(await admitted('k', 1)).toBe(1);
    store.down = true;
    // 9 remained by the store's answer, but this process may admit 2 on its own.
    expect(await admitted('k', 10)).toBe(2);
  });

  it.each(['gcra', 'token-bucket'] as const)(
    "%s: a bucket the store had exhausted refills at this process's localShare of its rate in an outage, not the whole rate in every process",
    async (algorithm) => {
      const { store, limiter, admitted, advance } = setup([{ algorithm, limit: 3_000, windowMs: 60_000 }], 0.25);
      expect(await admitted('k', 3_000)).toBe(3_000);
      expect((await limiter.check('k')).allowed).toBe(false);
      store.down = true;
      // 50 a second refill the bucket; this process, one of four, admits its quarter: 12 or 13 a second.
      let n = 0;
      for (let s = 0; s < 4; s++) {
        advance(1_000);
        n += await admitted('k', 100);
      }
      // Before: 200 (the whole refill, in each of the processes).
      expect(n).toBe(50);
      // The wait it names is the one it keeps: nothing before it, one after it.
      const refused = await limiter.check('k');
      expect(refused).toMatchObject({ allowed: false, degraded: true });
      advance(refused.retryAfterMs - 1);
      expect((await limiter.check('k')).allowed).toBe(false);
      advance(1);
      expect((await limiter.check('k')).allowed).toBe(true);
    },
  );

  it("answers an outage only for 'local': 'open' admits and 'closed' refuses whatever the key had", async () => {
    for (const onStoreError of ['open', 'closed'] as const) {
      const store = new OutageStore();
      const limiter = createLimiter({ policies: { limit: 2, windowMs: 60_000 }, store, onStoreError, breaker: false, logger: quiet });
      await limiter.check('k');
      await limiter.check('k');
      store.down = true;
      const d = await limiter.check('k');
      expect(d.allowed).toBe(onStoreError === 'open');
    }
  });
});

/** A limiter of 3 per minute on `store`, at a clock that stands still, with key 'a' exhausted. */
async function exhausted(store: OutageStore): Promise<Limiter> {
  const limiter = createLimiter({
    policies: { algorithm: 'fixed-window', limit: 3, windowMs: 60_000 },
    store,
    clock: () => 1_000,
    logger: quiet,
  });
  for (let i = 0; i < 3; i++) expect((await limiter.check('a')).allowed).toBe(true);
  return limiter;
}

/** Lets the store's replies and the limiter's answers to them run. */
const flush = () => new Promise((r) => setTimeout(r, 0));

/** `n` checks of `key`, one after another; how many were admitted. */
async function admitted(limiter: Limiter, key: string, n: number): Promise<number> {
  let yes = 0;
  for (let i = 0; i < n; i++) if ((await limiter.check(key)).allowed) yes += 1;
  return yes;
}

describe('a store that lost its state (a Redis restart without persistence) is charged again what this process remembers', () => {
  it("one key whose state the store cannot take (corrupt) costs only that key's restore: the others are charged again", async () => {
    const store = new OutageStore();
    const limiter = createLimiter({
      policies: { algorithm: 'fixed-window', limit: 10, windowMs: 60_000 },
      store,
      clock: () => 1_000,
      logger: quiet,
    });
    for (const key of ['bad', 'good']) for (let i = 0; i < 8; i++) await limiter.check(key);
    const apply = store.apply.bind(store);
    store.apply = (key, plan, cost, now, lease) =>
      key === 'bad'
        ? Promise.reject(new Error('WRONGTYPE Operation against a key holding the wrong kind of value'))
        : apply(key, plan, cost, now, lease);
    store.reconnect(true);
    await flush();
    expect([store.remainingOf('bad', 1_000), store.remainingOf('good', 1_000)]).toEqual([10_000, 2_000]);
    await limiter.close();
  });

  it('a key with 8 of 10 used gets 2 after the loss, not 10; a reconnect that lost nothing charges nothing', async () => {
    let t = 1_000;
    const store = new OutageStore();
    const warnings: Record<string, unknown>[] = [];
    const limiter = createLimiter({
      policies: { algorithm: 'fixed-window', limit: 10, windowMs: 60_000 },
      store,
      clock: () => t,
      logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
    });
    expect(store.marks).toBe(1);
    expect(await admitted(limiter, 'a', 8)).toBe(8);
    expect(await admitted(limiter, 'b', 3)).toBe(3);
    store.reconnect(false);
    await flush();
    expect([store.remainingOf('a', t), store.remainingOf('b', t)]).toEqual([2_000, 7_000]);
    expect(warnings).toEqual([]);
    t = 2_000;
    store.reconnect(true);
    await flush();
    // Before: 10 and 10 (the store answered both from a full budget).
    expect([store.remainingOf('a', t), store.remainingOf('b', t)]).toEqual([2_000, 7_000]);
    expect(await admitted(limiter, 'a', 10)).toBe(2);
    expect(warnings).toEqual([expect.objectContaining({ code: 'WRN_RL_BUDGETS_RESTORED', store: 'outage', keys: 2 })]);
    expect(store.marks).toBe(3);
    await limiter.close();
    // Closed: it no longer listens.
    store.reconnect(true);
    expect(store.marks).toBe(3);
  });

  it('checks sent as the connection comes back wait for the restore: an exhausted key admits nothing', async () => {
    const store = new OutageStore();
    const limiter = await exhausted(store);
    store.reconnect(true);
    // Sent before the mark's answer: before, the emptied store admitted both (the restore came after them).
    const [first, second] = await Promise.all([limiter.check('a'), limiter.check('a')]);
    expect([first.allowed, second.allowed]).toEqual([false, false]);
    expect(first.degraded).toBe(false);
    await limiter.close();
  });

  it('a mark that is never answered holds the checks 100 ms at most', async () => {
    fakeWatchdogTime();
    const store = new OutageStore();
    const limiter = createLimiter({ policies: { limit: 3, windowMs: 60_000 }, store, clock: () => 1_000, logger: quiet });
    expect((await limiter.check('a')).allowed).toBe(true);
    store.markStalls = true;
    store.reconnect(true);
    let answered = false;
    const held = limiter.check('a').then((d) => {
      answered = true;
      return d;
    });
    await vi.advanceTimersByTimeAsync(99);
    expect(answered).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    // Nothing was restored (the mark never said the store lost it): the emptied store admits it.
    expect(await held).toMatchObject({ allowed: true, degraded: false });
    await limiter.close();
  });

  it('a mark answered after the hold: answers from the emptied key are decided by what it had until the charges are in, not only for 100 ms', async () => {
    fakeWatchdogTime();
    const store = new OutageStore();
    const limiter = await exhausted(store);
    let answerMark: (missing: boolean) => void = () => undefined;
    store.markAlive = () => new Promise<boolean>((resolve) => (answerMark = resolve));
    store.reconnect(true);
    // Held 100 ms at most, then sent: the emptied key's answer cannot follow, and the question is out.
    const held = limiter.check('a');
    await vi.advanceTimersByTimeAsync(100);
    expect(await held).toMatchObject({ allowed: false, degraded: false });
    // Later checks, the mark still not answered (a loaded host): before, taken as the emptied key said (3 more).
    await vi.advanceTimersByTimeAsync(50);
    const later = [];
    for (let i = 0; i < 3; i++) later.push((await limiter.check('a')).allowed);
    expect(later).toEqual([false, false, false]);
    // The mark says the store lost its state: charged again, the key stays exhausted.
    answerMark(true);
    await vi.advanceTimersByTimeAsync(10);
    expect((await limiter.check('a')).allowed).toBe(false);
    expect(store.remainingOf('a', 1_000)).toBe(0);
    await limiter.close();
  });

  it('each policy of a plan, several keys per decision and a bucket refilling: charged what each had used', async () => {
    let t = 1_000;
    const store = new OutageStore();
    const limiter = createLimiter({
      policies: [
        { name: 'second', algorithm: 'fixed-window', limit: 5, windowMs: 1_000 },
        { name: 'hour', algorithm: 'gcra', limit: 20, windowMs: 3_600_000 },
      ],
      store,
      clock: () => t,
      logger: quiet,
      validate: { WRN_RL_BUDGETS_RESTORED: false },
    });
    const key = { second: 'ip', hour: 'account' };
    for (let i = 0; i < 4; i++) expect((await limiter.check(key)).allowed).toBe(true);
    t = 1_500;
    store.reconnect(true);
    await flush();
    const left = (await limiter.peek(key)).policies.map((p) => p.remaining);
    // The hour: 16 left, and what it refilled in 0.5 s (4 tokens come back in 720 s).
    expect(left[0]).toBe(1);
    expect(left[1]).toBeCloseTo(16 + (4 * 500) / 720_000, 3);
    await limiter.close();
  });

  // The mode says what an outage answers; a store that came back without its data is a loss in every mode.
  // Before: 'closed' and 'open' remembered nothing, and a login limiter at 5 of 5 took 5 more after Redis
  // restarted empty.
  for (const onStoreError of ['closed', 'open'] as const) {
    it(`'${onStoreError}' is charged again too: a key with 8 of 10 used gets 2 after a restart without persistence, and 2 after a FLUSHALL`, async () => {
      const store = new OutageStore();
      const warnings: Record<string, unknown>[] = [];
      const limiter = createLimiter({
        policies: { algorithm: 'fixed-window', limit: 10, windowMs: 60_000 },
        store,
        onStoreError,
        clock: () => 1_000,
        logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
      });
      expect(await admitted(limiter, 'a', 8)).toBe(8);
      expect(await admitted(limiter, 'b', 8)).toBe(8);
      store.reconnect(true);
      await flush();
      expect(store.remainingOf('a', 1_000)).toBe(2_000);
      expect(await admitted(limiter, 'a', 10)).toBe(2);
      store.wipe();
      expect(await admitted(limiter, 'b', 10)).toBe(2);
      expect(warnings.filter((w) => w.code === 'WRN_RL_BUDGETS_RESTORED')).toHaveLength(2);
      await limiter.close();
    });
  }
});

describe('a store that lost its state with no reconnect (a FLUSHALL) is found by the answer that could not follow', () => {
  /** A limiter of 10 per minute of `algorithm` on an OutageStore, its warnings kept; `at` moves its clock. */
  const flushed = (algorithm: AlgorithmId) => {
    const clock = { t: 1_000 };
    const store = new OutageStore();
    const warnings: Record<string, unknown>[] = [];
    const limiter = createLimiter({
      policies: { algorithm, limit: 10, windowMs: 60_000 },
      store,
      clock: () => clock.t,
      logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
    });
    return { store, warnings, limiter, at: (ms: number) => (clock.t = ms) };
  };

  for (const algorithm of ['fixed-window', 'sliding-window', 'token-bucket', 'gcra'] as const) {
    it(`${algorithm}: a key with 8 of 10 used gets 2 after the loss, not 10; the other keys are charged again too`, async () => {
      const { store, warnings, limiter, at } = flushed(algorithm);
      expect(await admitted(limiter, 'a', 8)).toBe(8);
      expect(await admitted(limiter, 'b', 3)).toBe(3);
      expect(store.marks).toBe(1);
      store.wipe();
      at(2_000);
      // Before: 10 (the first answer after the loss was taken as it came, and every one after it).
      expect(await admitted(limiter, 'a', 10)).toBe(2);
      expect(store.marks).toBe(2);
      expect(warnings).toEqual([expect.objectContaining({ code: 'WRN_RL_BUDGETS_RESTORED', store: 'outage', keys: 2 })]);
      expect(Math.round(store.remainingOf('b', 2_000) / 1_000)).toBe(7);
      await limiter.close();
    });
  }

  const inFlight = (limiter: Limiter, key: string, n: number) =>
    Promise.all(Array.from({ length: n }, () => limiter.check(key))).then((ds) => ds.filter((d) => d.allowed).length);

  for (const algorithm of ['fixed-window', 'sliding-window', 'token-bucket', 'gcra'] as const) {
    it(`${algorithm}: the checks in flight with the answer that found the loss are decided by what the key had: 16 at once on a key with 10 of 10 used admit none, with 8 used 2`, async () => {
      const { store, warnings, limiter, at } = flushed(algorithm);
      expect(await admitted(limiter, 'a', 10)).toBe(10);
      expect(await admitted(limiter, 'b', 8)).toBe(8);
      store.wipe();
      at(2_000);
      // Before: 16 and 10 (the key read back past half its use by the checks in flight: the loss denied, nothing charged).
      expect(await inFlight(limiter, 'a', 16)).toBe(0);
      expect(await inFlight(limiter, 'b', 16)).toBe(2);
      expect(warnings).toEqual([expect.objectContaining({ code: 'WRN_RL_BUDGETS_RESTORED', keys: 2 })]);
      // Each ends with less than a request left (a bucket has refilled a sixth of one in the second since).
      expect([store.remainingOf('a', 2_000) < 1_000, store.remainingOf('b', 2_000) < 1_000]).toEqual([true, true]);
      expect(await admitted(limiter, 'a', 3)).toBe(0);
      await limiter.close();
    });
  }

  it('a key given budget back from elsewhere (a reset, the mark intact): the answers wait for the mark, then are taken as they are', async () => {
    let t = 1_000;
    const store = new OutageStore();
    const limiter = createLimiter({ policies: { limit: 10, windowMs: 60_000 }, store, clock: () => t, logger: quiet });
    expect(await admitted(limiter, 'a', 10)).toBe(10);
    store.reset('a', store.plan as StorePlan);
    t = 2_000;
    // A first version decided them by the record while the mark was asked: 4 refused, charged, told to wait 59 s.
    expect(await inFlight(limiter, 'a', 4)).toBe(4);
    expect(store.marks).toBe(2);
    expect(await admitted(limiter, 'a', 10)).toBe(6);
    await limiter.close();
  });

  it('asks for the mark at most once a second per node for answers that could not follow, but at once for one from a key the store lost most of', async () => {
    let t = 1_000;
    const store = new OutageStore();
    const limiter = createLimiter({ policies: { limit: 10, windowMs: 60_000 }, store, clock: () => t, logger: quiet });
    for (const key of ['a', 'b', 'c']) await admitted(limiter, key, 5);
    store.wipe();
    await admitted(limiter, 'a', 1);
    expect(store.marks).toBe(2);
    // The restore charges once the keys agree (a peek of each).
    await new Promise((r) => setTimeout(r, 0));
    // A key given 2 of its 6 back from elsewhere (a refund, a batch given back) within the second: not asked.
    store.inner.reset('b', store.plan as StorePlan);
    await store.inner.apply('b', store.plan as StorePlan, 4_000, t);
    t = 1_300;
    await admitted(limiter, 'b', 1);
    expect(store.marks).toBe(2);
    // The store loses its state again: an emptied key asks at once (it waited for the next second, and a
    // hot key took its whole limit again meanwhile), and the restore charges the other keys too.
    store.wipe();
    t = 1_500;
    await admitted(limiter, 'c', 1);
    expect(store.marks).toBe(3);
    t = 2_001;
    expect(await admitted(limiter, 'b', 6)).toBe(5);
    expect(store.marks).toBe(3);
    await limiter.close();
  });

  it('keys reset from elsewhere 50 times a second: the mark is asked twice a second at most, not once per reset', async () => {
    let t = 1_000;
    const store = new OutageStore();
    const limiter = createLimiter({ policies: { limit: 10, windowMs: 60_000 }, store, clock: () => t, logger: quiet });
    const keys = Array.from({ length: 50 }, (_, i) => `k${i}`);
    for (const key of keys) await admitted(limiter, key, 6);
    const before = store.marks;
    for (const key of keys) {
      t += 20;
      // Another process resets the key: its next answer here shows it emptied, as a loss would.
      store.reset(key, store.plan as StorePlan);
      await admitted(limiter, key, 1);
    }
    // Before: 50 (each emptied key asked at once, and with localBatch read the 1,000 most used keys).
    expect(store.marks - before).toBeLessThanOrEqual(2);
    await limiter.close();
  });

  it('a store that batches (localBatch) is asked for its mark by an answer that could not follow: a FLUSHALL is found, 5 of 10 admitted after it, not 10', async () => {
    const store = Object.assign(new OutageStore(), { batches: true });
    const limiter = createLimiter({ policies: { limit: 10, windowMs: 60_000 }, store, clock: () => 1_000, logger: quiet });
    expect(await admitted(limiter, 'a', 5)).toBe(5);
    store.wipe();
    // Before: 10 (not asked on answers at all).
    expect(await admitted(limiter, 'a', 10)).toBe(5);
    expect(store.marks).toBe(2);
    await limiter.close();
  });

  it("a store that batches: a key raised with nothing lost (a batch another process gave back) is asked about, and not charged by the answer's difference", async () => {
    const store = Object.assign(new OutageStore(), { batches: true });
    const warnings: Record<string, unknown>[] = [];
    const limiter = createLimiter({
      policies: { limit: 10, windowMs: 60_000 },
      store,
      clock: () => 1_000,
      logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
    });
    expect(await admitted(limiter, 'a', 5)).toBe(5);
    // All five given back elsewhere, the mark in place: the next answer has more than could come back.
    store.reset('a', store.plan as StorePlan);
    expect(await admitted(limiter, 'a', 1)).toBe(1);
    expect(store.marks).toBe(2);
    await new Promise((r) => setTimeout(r, 0));
    expect(Math.round(store.remainingOf('a', 1_000) / 1_000)).toBe(9);
    expect(warnings).toEqual([]);
    await limiter.close();
  });

  it('an answer to a call decided before the remembered one, that came after it, is no sign of a loss', async () => {
    let t = 1_000;
    const store = new OutageStore();
    const limiter = createLimiter({
      policies: { algorithm: 'fixed-window', limit: 10, windowMs: 60_000 },
      store,
      clock: () => t,
      logger: quiet,
    });
    await admitted(limiter, 'a', 5);
    // The first call runs at once and its reply waits; the second, decided later, is answered first.
    const apply = OutageStore.prototype.apply;
    let late: (() => void) | undefined;
    store.apply = (key, plan, cost, now, lease) => {
      store.apply = apply;
      const answer = apply.call(store, key, plan, cost, now, lease);
      return new Promise((resolve) => {
        late = () => resolve(answer);
      });
    };
    const first = limiter.check('a');
    t = 1_005;
    expect((await limiter.check('a')).remaining).toBe(3);
    late?.();
    expect((await first).remaining).toBe(4);
    expect(store.marks).toBe(1);
    await limiter.close();
  });

  it('a mark gone alone (evicted under allkeys-*, deleted by hand) while the keys kept their counts charges nothing twice', async () => {
    const store = new OutageStore();
    const warnings: Record<string, unknown>[] = [];
    const limiter = createLimiter({
      policies: { algorithm: 'fixed-window', limit: 10, windowMs: 60_000 },
      store,
      clock: () => 1_000,
      logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
    });
    for (const [key, n] of [
      ['a', 8],
      ['b', 5],
      ['c', 3],
    ] as const)
      await admitted(limiter, key, n);
    // The mark and one key evicted: that key's next answer could not follow, and the mark is gone.
    store.marked = false;
    store.inner.reset('b', store.plan as StorePlan);
    await admitted(limiter, 'b', 1);
    expect(store.marks).toBe(2);
    await new Promise((r) => setTimeout(r, 0));
    // Before: a charged its 8 again (exhausted), c its 3 again.
    expect([store.remainingOf('a', 1_000), store.remainingOf('c', 1_000)]).toEqual([2_000, 7_000]);
    expect(warnings).toEqual([]);
    // And at a reconnect that finds only the mark gone.
    store.marked = false;
    store.reconnect(false);
    await new Promise((r) => setTimeout(r, 0));
    expect([store.remainingOf('a', 1_000), store.remainingOf('c', 1_000)]).toEqual([2_000, 7_000]);
    expect(warnings).toEqual([]);
    await limiter.close();
  });

  it('a server that came back behind its answers (an older snapshot, a lagging replica; the mark intact): each key is charged the difference at its next answer', async () => {
    let t = 1_000;
    const store = new OutageStore();
    store.server = 's1';
    const warnings: Record<string, unknown>[] = [];
    const limiter = createLimiter({
      policies: { algorithm: 'fixed-window', limit: 10, windowMs: 60_000 },
      store,
      clock: () => t,
      logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
    });
    expect(await admitted(limiter, 'a', 8)).toBe(8);
    expect(await admitted(limiter, 'b', 6)).toBe(6);
    await flush();
    // The same server again (the connection dropped): a refund elsewhere raises a key, and nothing is charged.
    store.reconnect(false);
    await flush();
    store.inner.reset('b', store.plan as StorePlan);
    store.inner.apply('b', store.plan as StorePlan, 4_000, t);
    t += 10;
    expect((await limiter.check('b')).remaining).toBe(5);
    await flush();
    expect(store.remainingOf('b', t)).toBe(5_000);
    // Another server, which has 5 of a's 8.
    t += 10;
    store.behind('s2', 'a', 5_000, t);
    await flush();
    t += 10;
    // Before: 5 (the mark was there, so nothing was charged).
    expect(await admitted(limiter, 'a', 10)).toBe(2);
    expect(warnings).toEqual([expect.objectContaining({ code: 'WRN_RL_BUDGETS_RESTORED', behind: true })]);
    await limiter.close();
  });

  it('a closed limiter asks nothing', async () => {
    const store = new OutageStore();
    const limiter = createLimiter({ policies: { limit: 10, windowMs: 60_000 }, store, clock: () => 1_000, logger: quiet });
    await admitted(limiter, 'a', 5);
    await limiter.close();
    store.wipe();
    await limiter.check('a').catch(() => undefined);
    expect(store.marks).toBe(1);
  });

  it('never asks while nothing was lost: time passing, keys refilling and sliding, concurrent checks, refunds, a store that runs calls late (property)', async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 30_000 }) }),
      fc.record({
        kind: fc.constant('check' as const),
        key: fc.constantFrom('a', 'b'),
        cost: fc.integer({ min: 1, max: 3 }),
        n: fc.integer({ min: 1, max: 4 }),
      }),
      fc.record({ kind: fc.constant('refund' as const), key: fc.constantFrom('a', 'b') }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'gcra', 'leaky-bucket'),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1_000, max: 60_000 }),
        fc.array(op, { maxLength: 40 }),
        fc.array(fc.integer({ min: 0, max: 900 }), { maxLength: 8 }),
        async (algorithm, limit, windowMs, ops, lags) => {
          let t = 1_000;
          const store = new OutageStore();
          store.lags = lags;
          const limiter = createLimiter({ policies: { algorithm, limit, windowMs }, store, clock: () => t, logger: quiet });
          const last = new Map<string, Decision[]>();
          for (const o of ops) {
            if (o.kind === 'wait') t += o.ms;
            else if (o.kind === 'check') {
              const ds = await Promise.all(Array.from({ length: o.n }, () => limiter.check(o.key, { cost: o.cost })));
              last.set(o.key, ds);
            } else for (const d of last.get(o.key) ?? []) await limiter.refund(d);
          }
          expect(store.marks).toBe(1);
          await limiter.close();
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('AnswerMemory', () => {
  const policy = compilePolicy({ limit: 10, windowMs: 1_000 }, 'policies', false);
  const answer = (remaining: number, reset: number) => {
    const r = new Float64Array(RESULT_STRIDE);
    r[R_REMAINING] = remaining;
    r[R_RESET] = reset;
    return r;
  };

  it(`is bounded under a key flood: at most ${REMEMBERED_KEYS} keys, the oldest forgotten first`, () => {
    const m = new AnswerMemory([policy]);
    for (let i = 0; i < 3 * REMEMBERED_KEYS; i++) m.remember(`k${i}`, answer(1_000, 500), 0);
    expect(m.size).toBe(REMEMBERED_KEYS);
    expect(m.live('k0', 1)).toBeUndefined();
    expect(m.live(`k${3 * REMEMBERED_KEYS - 1}`, 1)).toBeDefined();
  });

  it('atLeast: a record counts at least what the store counted (a loss its replies told of), never less than it had', () => {
    const m = new AnswerMemory([compilePolicy({ algorithm: 'fixed-window', limit: 10, windowMs: 1_000 }, 'policies', false)]);
    m.remember('k', answer(7_000, 500), 100);
    m.atLeast('k', [9_000], 200);
    expect(m.counted(200)[0]?.used[0]).toBe(9_000);
    m.atLeast('k', [1_000], 200);
    expect(m.counted(200)[0]?.used[0]).toBe(9_000);
    // Gone with the window it counted.
    expect(m.counted(600)).toEqual([]);
  });

  it('atLeast: a bucket record counts the new use at `at` and refills from then at the rate it had', () => {
    const bucket = compilePolicy({ algorithm: 'token-bucket', limit: 10, windowMs: 1_000 }, 'policies', false);
    const m = new AnswerMemory([bucket]);
    // 3 used, full again in 300 ms: one unit per 100 ms.
    m.remember('k', answer(7_000, 300), 0);
    m.atLeast('k', [8_000], 100);
    expect(m.counted(100)[0]?.used[0]).toBe(8_000);
    expect(m.counted(300)[0]?.used[0]).toBeCloseTo(6_000);
  });

  it('forgets a record once every policy of it has reset', () => {
    const m = new AnswerMemory([policy]);
    m.remember('k', answer(0, 500), 100);
    expect(m.live('k', 599)).toBeDefined();
    expect(m.live('k', 600)).toBeUndefined();
    expect(m.size).toBe(0);
  });
});
