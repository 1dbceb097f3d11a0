/**
 * createShaper on virtual time: an in-process MemoryStore, the limiter's clock injected, fake timers for
 * every wait. The cross-process run on a real redis-server is test/integration/redis/client-shaper.test.ts.
 */
import { createLimiter, MemoryStore, type Store } from '@tollgate/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createShaper, RateLimitClientError } from './index.js';

const clock = () => Date.now();

beforeEach(() => {
  vi.useFakeTimers({ now: 1_800_000_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

/** A MemoryStore whose answers come `ms` later (a Redis round trip). */
function slowStore(ms: number): Store {
  return new Proxy(new MemoryStore(), {
    get(target, name) {
      if (name === 'apply')
        return async (...args: Parameters<MemoryStore['apply']>) => {
          const r = target.apply(...args).slice();
          await new Promise((resolve) => setTimeout(resolve, ms));
          return r;
        };
      const value: unknown = Reflect.get(target, name);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The most starts in any left-open window (t - windowMs, t]. */
function maxInWindow(starts: readonly number[], windowMs: number): number {
  let max = 0;
  for (const t of starts) max = Math.max(max, starts.filter((s) => s > t - windowMs && s <= t).length);
  return max;
}

describe('createShaper', () => {
  it('starts tasks no faster than the policy allows, each as soon as it allows', async () => {
    const shaper = createShaper({ policies: { algorithm: 'sliding-log', limit: 10, windowMs: 1_000 }, clock });
    const t0 = Date.now();
    const starts: number[] = [];
    const all = Promise.all(Array.from({ length: 35 }, (_, i) => shaper.schedule(() => starts.push(Date.now() - t0) && i)));
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await all).toEqual(Array.from({ length: 35 }, (_, i) => i));
    expect(maxInWindow(starts, 1_000)).toBe(10);
    // Exactly on time: ten at once, then ten each time the log's oldest entries leave the window.
    expect(starts.filter((s) => s === 0)).toHaveLength(10);
    expect(starts.slice(10, 20).every((s) => s === 1_000)).toBe(true);
    expect(starts[34]).toBe(3_000);
    expect(shaper.stats()).toMatchObject({ queued: 0, started: 35, delay: { count: 35, maxMs: 3_000 } });
    await shaper.close();
  });

  it('a smooth gcra policy spaces starts by windowMs / limit', async () => {
    const shaper = createShaper({ policies: { algorithm: 'gcra', limit: 10, windowMs: 1_000, burst: 1 }, clock });
    const t0 = Date.now();
    const starts: number[] = [];
    const all = Promise.all(Array.from({ length: 5 }, () => shaper.schedule(() => starts.push(Date.now() - t0))));
    await vi.advanceTimersByTimeAsync(1_000);
    await all;
    expect(starts).toEqual([0, 100, 200, 300, 400]);
  });

  it('rejects a task that cannot start before its deadline, and never runs it late', async () => {
    const shaper = createShaper({ policies: { algorithm: 'gcra', limit: 1, windowMs: 1_000, burst: 1 }, clock, maxDelayMs: 1_500 });
    const ran: number[] = [];
    const t0 = Date.now();
    const outcomes = Array.from({ length: 4 }, (_, i) =>
      shaper
        .schedule(() => ran.push(i))
        .then(
          () => ({ i, at: Date.now() - t0 }),
          (e: RateLimitClientError) => ({ i, code: e.code, at: Date.now() - t0 }),
        ),
    );
    const short = shaper.schedule(() => ran.push(9), { maxDelayMs: 200 }).catch((e: RateLimitClientError) => e.code);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await Promise.all(outcomes)).toEqual([
      { i: 0, at: 0 },
      { i: 1, at: 1_000 },
      { i: 2, code: 'ERR_RL_TASK_EXPIRED', at: 1_000 }, // its slot (2 s) is past its deadline (1.5 s): rejected once known
      { i: 3, code: 'ERR_RL_TASK_EXPIRED', at: 1_000 },
    ]);
    expect(await short).toBe('ERR_RL_TASK_EXPIRED');
    expect(ran).toEqual([0, 1]);
    expect(shaper.stats().rejected.expired).toBe(3);
  });

  it('runs higher priorities first, in order of scheduling within one priority', async () => {
    const shaper = createShaper({ policies: { algorithm: 'gcra', limit: 10, windowMs: 1_000, burst: 1 }, clock });
    const order: string[] = [];
    const tasks = [
      shaper.schedule(() => order.push('a0')),
      shaper.schedule(() => order.push('b0')),
      shaper.schedule(() => order.push('c5'), { priority: 5 }),
      shaper.schedule(() => order.push('d-1'), { priority: -1 }),
      shaper.schedule(() => order.push('e5'), { priority: 5 }),
    ];
    await vi.advanceTimersByTimeAsync(1_000);
    await Promise.all(tasks);
    // a0 was decided at once (the queue was empty); the rest by priority.
    expect(order).toEqual(['a0', 'c5', 'e5', 'b0', 'd-1']);
  });

  it('a full queue rejects with ERR_RL_QUEUE_FULL; a cancelled task leaves at once and frees its place', async () => {
    const shaper = createShaper({ policies: { algorithm: 'gcra', limit: 1, windowMs: 1_000, burst: 1 }, clock, maxQueue: 2 });
    const ran: string[] = [];
    const first = shaper.schedule(() => ran.push('first'));
    await vi.advanceTimersByTimeAsync(0);
    const controller = new AbortController();
    const cancelled = shaper.schedule(() => ran.push('cancelled'), { signal: controller.signal }).catch((e: Error) => e.name);
    const kept = shaper.schedule(() => ran.push('kept'));
    await expect(shaper.schedule(() => ran.push('over'))).rejects.toMatchObject({ code: 'ERR_RL_QUEUE_FULL' });
    controller.abort();
    expect(await cancelled).toBe('AbortError');
    expect(shaper.stats().queued).toBe(1);
    const late = shaper.schedule(() => ran.push('took the freed place'));
    await vi.advanceTimersByTimeAsync(3_000);
    await Promise.all([first, kept, late]);
    expect(ran).toEqual(['first', 'kept', 'took the freed place']);
    expect(shaper.stats().rejected).toMatchObject({ queueFull: 1, cancelled: 1 });
  });

  it('a cost that can never fit is ERR_RL_TASK_TOO_COSTLY; close() rejects what waits and refuses new tasks', async () => {
    const shaper = createShaper({ policies: { algorithm: 'token-bucket', limit: 5, windowMs: 1_000 }, clock });
    await expect(shaper.schedule(() => 1, { cost: 6 })).rejects.toMatchObject({ code: 'ERR_RL_TASK_TOO_COSTLY' });
    const admitted = shaper.schedule(() => 'ok', { cost: 5 });
    const waiting = shaper.schedule(() => 'never', { cost: 5 }).catch((e: RateLimitClientError) => e.code);
    await vi.advanceTimersByTimeAsync(10);
    expect(await admitted).toBe('ok');
    await shaper.close();
    expect(await waiting).toBe('ERR_RL_SHAPER_CLOSED');
    await expect(shaper.schedule(() => 1)).rejects.toBeInstanceOf(RateLimitClientError);
  });

  it('a task that throws rejects with its own error and does not stop the queue', async () => {
    const shaper = createShaper({ policies: { limit: 100, windowMs: 1_000 }, clock });
    await expect(
      shaper.schedule(() => {
        throw new Error('partner down');
      }),
    ).rejects.toThrow('partner down');
    await expect(shaper.schedule(async () => 2)).resolves.toBe(2);
    expect(shaper.stats().running).toBe(0);
  });

  it('leaky-bucket: a task admitted with a delay still waits in stats(), leaves on its signal or on close(), its slot kept', async () => {
    const shaper = createShaper({ policies: { algorithm: 'leaky-bucket', limit: 2, windowMs: 1_000, burst: 5 }, clock });
    const t0 = Date.now();
    const ran: string[] = [];
    const cancel = new AbortController();
    const results = ['a', 'b', 'c', 'd'].map((name) =>
      shaper
        .schedule(
          () => {
            ran.push(`${name}@${Date.now() - t0}`);
            return name;
          },
          name === 'c' ? { signal: cancel.signal } : {},
        )
        .then(
          (v) => `resolved ${v}`,
          (e: unknown) => `rejected ${(e as Error).name}`,
        ),
    );
    await vi.advanceTimersByTimeAsync(100);
    expect(shaper.stats()).toMatchObject({ queued: 3, started: 1 });
    cancel.abort();
    await vi.advanceTimersByTimeAsync(450);
    // b started at 500 ms, on its slot; c left at once and never ran; d keeps its slot at 1500 ms.
    expect(ran).toEqual(['a@0', 'b@500']);
    expect(shaper.stats().queued).toBe(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(ran).toEqual(['a@0', 'b@500', 'd@1500']);
    // c's slot was not given back (d holds the one after it): e waits its own 500 ms after d.
    const late = shaper.schedule(() => ran.push('e')).catch((e: unknown) => (e as RateLimitClientError).code);
    await vi.advanceTimersByTimeAsync(10);
    expect(shaper.stats().queued).toBe(1);
    await shaper.close();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await Promise.all(results)).toEqual(['resolved a', 'resolved b', 'rejected AbortError', 'resolved d']);
    expect(await late).toBe('ERR_RL_SHAPER_CLOSED');
    expect(ran).not.toContain('e');
    expect(shaper.stats().rejected).toMatchObject({ cancelled: 1, closed: 1 });
  });

  it('a cancelled head wakes the queue: the task behind it starts as soon as it fits', async () => {
    const shaper = createShaper({ policies: { algorithm: 'token-bucket', limit: 5, windowMs: 1_000, burst: 5 }, clock });
    await shaper.schedule(() => undefined, { cost: 4 });
    const t0 = Date.now();
    const cancel = new AbortController();
    const big = shaper.schedule(() => 'big', { cost: 5, priority: 1, signal: cancel.signal }).catch((e: unknown) => (e as Error).name);
    const small = shaper.schedule(() => Date.now() - t0, { cost: 1 });
    await vi.advanceTimersByTimeAsync(50);
    cancel.abort();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await big).toBe('AbortError');
    expect(await small).toBe(50);
    await shaper.close();
  });

  it('shapers on one store share the budget of their key and policy names, and leave unnamed limiters alone', async () => {
    const store = new MemoryStore();
    const policy = { name: 'p', algorithm: 'gcra', limit: 2, windowMs: 1_000, burst: 2 } as const;
    const a = createShaper({ policies: policy, store, key: 'k', clock });
    const b = createShaper({ policies: policy, store, key: 'k', clock });
    const other = createShaper({ policies: policy, store, key: 'other', clock });
    const unnamed = createShaper({ policies: { limit: 5, windowMs: 1_000 }, store, key: 'x', clock });
    const alsoUnnamed = createShaper({ policies: { limit: 9, windowMs: 1_000 }, store, key: 'y', clock });
    // An unrelated unnamed limiter on the same store does not collide with a shaper's state.
    expect(() => createLimiter({ policies: policy, store })).not.toThrow();
    const t0 = Date.now();
    const starts = Promise.all([a, b, a, b].map((s) => s.schedule(() => Date.now() - t0)));
    const apart = other.schedule(() => Date.now() - t0);
    await vi.advanceTimersByTimeAsync(2_000);
    // One budget of 2 (burst 2, then one every 500 ms) for both shapers on key 'k'; key 'other' has its own.
    expect(await starts).toEqual([0, 0, 500, 1_000]);
    expect(await apart).toBe(0);
    for (const s of [a, b, other, unnamed, alsoUnnamed]) await s.close();
  });

  it('never starts a task after its deadline, even when the event loop was blocked past it', async () => {
    let blockedMs = 0;
    const lagging = () => Date.now() + blockedMs;
    const shaper = createShaper({ policies: { algorithm: 'gcra', limit: 4, windowMs: 1_000, burst: 1 }, clock: lagging });
    const ran: string[] = [];
    const first = shaper.schedule(() => ran.push('A'));
    const late = shaper.schedule(() => ran.push('B'), { maxDelayMs: 300 }).catch((e: RateLimitClientError) => e.code);
    await vi.advanceTimersByTimeAsync(50);
    // The loop is blocked from 50 ms to 600 ms: the clock moves on, no timer fires meanwhile.
    blockedMs = 550;
    await vi.advanceTimersByTimeAsync(1_000);
    await first;
    expect(await late).toBe('ERR_RL_TASK_EXPIRED');
    expect(ran).toEqual(['A']);
    expect(shaper.stats()).toMatchObject({ started: 1, rejected: { expired: 1 } });
    await shaper.close();
  });

  it('on its default clock, a task that blocks the loop as it starts makes the next one late, so that one is rejected, not started late', async () => {
    // Real time: the core's per-turn reading (shared by the decisions of one event-loop turn) would still say
    // the time before A's work when B is judged in the same turn, and B started 150 ms past its deadline.
    vi.useRealTimers();
    const shaper = createShaper({ policies: { algorithm: 'gcra', limit: 10, windowMs: 1_000 } });
    const ran: string[] = [];
    const first = shaper.schedule(() => {
      const end = performance.now() + 150;
      while (performance.now() < end);
      ran.push('A');
    });
    const late = shaper.schedule(() => ran.push('B'), { maxDelayMs: 30 }).catch((e: RateLimitClientError) => e.code);
    await first;
    expect(await late).toBe('ERR_RL_TASK_EXPIRED');
    expect(ran).toEqual(['A']);
    await shaper.close();
  });

  it('a leaky-bucket task whose delay ends after its deadline (the loop blocked) is rejected, not started', async () => {
    let blockedMs = 0;
    const lagging = () => Date.now() + blockedMs;
    const shaper = createShaper({ policies: { algorithm: 'leaky-bucket', limit: 2, windowMs: 1_000, burst: 2 }, clock: lagging });
    const ran: number[] = [];
    const tasks = [0, 1].map((i) => shaper.schedule(() => ran.push(i), { maxDelayMs: 600 }).catch((e: RateLimitClientError) => e.code));
    await vi.advanceTimersByTimeAsync(10);
    blockedMs = 1_000;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await Promise.all(tasks)).toEqual([1, 'ERR_RL_TASK_EXPIRED']);
    expect(ran).toEqual([0]);
    await shaper.close();
  });

  it("checks a task's cost at schedule() with ERR_RL_INVALID_COST, before it takes a place in the queue", async () => {
    const shaper = createShaper({ policies: { limit: 5, windowMs: 1_000 }, clock, maxQueue: 1 });
    for (const cost of ['abc', 0, -1, Number.NaN, 0.0001, null, Number.POSITIVE_INFINITY]) {
      expect(() => shaper.schedule(() => 1, { cost: cost as number })).toThrow(
        expect.objectContaining({ code: 'ERR_RL_INVALID_COST', option: 'cost' }),
      );
    }
    expect(shaper.stats()).toMatchObject({ queued: 0, rejected: { tooCostly: 0, expired: 0 } });
    const fine = shaper.schedule(() => 'ran', { cost: 2.5 });
    await vi.advanceTimersByTimeAsync(0);
    expect(await fine).toBe('ran');
    await shaper.close();
  });

  it("a task scheduled ahead of the head while its check is in flight is decided at once, not after the head's wait", async () => {
    // A store that answers 40 ms later (a Redis round trip): the queue's head is in flight most of the time.
    const memory = new MemoryStore();
    const slow: Store = new Proxy(memory, {
      get(target, name) {
        if (name === 'apply')
          return async (...args: Parameters<MemoryStore['apply']>) => {
            const r = target.apply(...args).slice();
            await new Promise((resolve) => setTimeout(resolve, 40));
            return r;
          };
        const value: unknown = Reflect.get(target, name);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const shaper = createShaper({
      policies: { algorithm: 'token-bucket', limit: 10, windowMs: 1_000 },
      store: slow,
      storeTimeoutMs: 1_000,
      clock,
    });
    const t0 = Date.now();
    const at = (name: string) => () => ({ name, at: Date.now() - t0 });
    const a = shaper.schedule(at('a'), { cost: 10 }); // empties the bucket
    const b = shaper.schedule(at('b'), { cost: 10 }); // refused: about 1 s to refill
    await vi.advanceTimersByTimeAsync(50); // b's check is in flight
    const c = shaper.schedule(at('c'), { cost: 1, priority: 5 }); // ahead of b: one token refills in 100 ms
    await vi.advanceTimersByTimeAsync(3_000);
    expect(await a).toEqual({ name: 'a', at: 40 });
    expect((await c).at).toBeLessThan(300);
    expect((await b).at).toBeGreaterThanOrEqual(1_000);
    await shaper.close();
  });

  it('refuses a signal that is not an AbortSignal at schedule(), before the task takes a place or a timer', async () => {
    const shaper = createShaper({ policies: { limit: 5, windowMs: 1_000 }, clock });
    const timers = vi.getTimerCount();
    for (const signal of [{ aborted: false }, {}, 'stop', 1]) {
      expect(() => shaper.schedule(() => 1, { signal: signal as never })).toThrow(
        expect.objectContaining({ code: 'ERR_RL_INVALID_OPTION', option: 'signal' }),
      );
    }
    expect(vi.getTimerCount()).toBe(timers);
    expect(shaper.stats()).toMatchObject({ queued: 0, rejected: { expired: 0, cancelled: 0 } });
    await shaper.close();
  });

  it("writes its limiter's lines to the logger given, and validate silences its warnings", async () => {
    const failing: Store = new Proxy(new MemoryStore(), {
      get(target, name) {
        if (name === 'apply') return () => Promise.reject(new Error('connection refused'));
        const value: unknown = Reflect.get(target, name);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const lines: string[] = [];
    const logger = {
      warn: (f: { code?: string }) => lines.push(`warn ${f.code}`),
      error: (f: { code?: string }) => lines.push(`error ${f.code}`),
    };
    const shaper = createShaper({ policies: { limit: 5, windowMs: 1_000 }, store: failing, clock, logger, validate: false });
    const ran = shaper.schedule(() => 'ran');
    await vi.advanceTimersByTimeAsync(10);
    expect(await ran).toBe('ran'); // 'local' decided it
    expect(lines).toEqual(['error ERR_RL_STORE_FAILED']);
    await shaper.close();
    expect(() => createShaper({ policies: { limit: 5, windowMs: 1_000 }, validate: { WRN_RL_NOPE: false } as never })).toThrow(
      /ERR_RL_INVALID_OPTION: 'validate\.WRN_RL_NOPE'/,
    );
  });

  it('shapers sharing a budget take turns once a head is refused: a costly task is not starved by cheaper ones', async () => {
    // The tester's starve-memory probe: B's cost-5 tasks all expired while A's cost-1 tasks took every
    // unit as it freed (a refusal takes nothing, so five were never found free at once).
    const store = new MemoryStore();
    const policies = { name: 'p', algorithm: 'gcra', limit: 10, windowMs: 1_000, burst: 10 } as const;
    const a = createShaper({ policies, store, key: 'partner', clock, maxQueue: 10_000 });
    const b = createShaper({ policies, store, key: 'partner', clock });
    const t0 = Date.now();
    const starts: { at: number; cost: number }[] = [];
    const aDone = Promise.all(Array.from({ length: 60 }, () => a.schedule(() => starts.push({ at: Date.now() - t0, cost: 1 }))));
    await vi.advanceTimersByTimeAsync(300);
    const bDone = Promise.all(
      Array.from({ length: 2 }, () =>
        b
          .schedule(() => starts.push({ at: Date.now() - t0, cost: 5 }) && Date.now() - t0, { cost: 5, maxDelayMs: 3_000 })
          .catch((e: RateLimitClientError) => e.code),
      ),
    );
    await vi.advanceTimersByTimeAsync(10_000);
    await aDone;
    const bStarts = await bDone;
    // Both started within their 3 s (from 300 ms), one after the other, A's tasks between them.
    expect(bStarts.every((at) => typeof at === 'number' && at <= 3_300)).toBe(true);
    expect(starts.filter((s) => s.cost === 1)).toHaveLength(60);
    // The budget held all along: 10 at once, then 10 units a second (gcra), whoever took them.
    for (const s of starts) {
      const units = starts.filter((x) => x.at <= s.at).reduce((sum, x) => sum + x.cost, 0);
      expect(units).toBeLessThanOrEqual(10 + Math.floor((s.at * 10) / 1_000));
    }
    await a.close();
    await b.close();
  });

  it('maxDelayMs 0 ("start now or never"): a task the store admits at once starts, however long the answer took', async () => {
    // A store that answers 40 ms later (a Redis round trip): the deadline passes while the check is in flight.
    const shaper = createShaper({
      policies: { algorithm: 'gcra', limit: 10, windowMs: 1_000, burst: 10 },
      store: slowStore(40),
      storeTimeoutMs: 1_000,
      clock,
    });
    const outcomes: (string | undefined)[] = [];
    for (let i = 0; i < 5; i++) {
      const task = shaper.schedule(() => 'ran', { maxDelayMs: i === 4 ? 1 : 0 }).catch((e: RateLimitClientError) => e.code);
      await vi.advanceTimersByTimeAsync(100);
      outcomes.push(await task);
    }
    // Before: every one ERR_RL_TASK_EXPIRED, its charge refunded.
    expect(outcomes).toEqual(['ran', 'ran', 'ran', 'ran', 'ran']);
    // Refused at once (the bucket emptied): a wait is past its deadline, and it is not run late.
    const empty = shaper.schedule(() => 'ran', { cost: 10 });
    const refused = shaper.schedule(() => 'ran', { maxDelayMs: 0 }).catch((e: RateLimitClientError) => e.code);
    await vi.advanceTimersByTimeAsync(100);
    expect(await empty).toBe('ran');
    expect(await refused).toBe('ERR_RL_TASK_EXPIRED');
    expect(shaper.stats()).toMatchObject({ started: 6, rejected: { expired: 1 } });
    await shaper.close();
  });

  it('rejects bad options at construction', () => {
    expect(() => createShaper({} as never)).toThrow(/ERR_RL_NO_POLICIES/);
    // The message names what a shaper takes, not the core's `plans`, which it refuses.
    expect(() => createShaper({ policies: [] })).toThrow(
      expect.objectContaining({ code: 'ERR_RL_NO_POLICIES', message: expect.not.stringMatching(/plans/) }),
    );
    expect(() => createShaper({ policies: { limit: 1, windowMs: 1 }, maxQueue: -1 })).toThrow(/ERR_RL_INVALID_OPTION: 'maxQueue'/);
    // A queue of 0 would refuse every task.
    expect(() => createShaper({ policies: { limit: 1, windowMs: 1 }, maxQueue: 0 })).toThrow(/ERR_RL_INVALID_OPTION: 'maxQueue'/);
    expect(() => createShaper({ policies: { limit: 1, windowMs: 1 }, queue: 5 } as never)).toThrow(/ERR_RL_UNKNOWN_OPTION: 'queue'/);
    expect(() => createShaper({ policies: { algorithm: 'concurrency', limit: 1 } as never })).toThrow(/ERR_RL_INVALID_OPTION: 'policies'/);
    expect(() => createShaper({ policies: { limit: 0, windowMs: 1 } })).toThrow(/ERR_RL_INVALID_LIMIT/);
    expect(() => createShaper({ policies: { limit: 1, windowMs: 1 }, storeTimeoutMs: 0 })).toThrow(
      /ERR_RL_INVALID_OPTION: 'storeTimeoutMs'/,
    );
  });
});
