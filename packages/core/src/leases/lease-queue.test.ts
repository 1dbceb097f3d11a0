import { afterEach, describe, expect, it, vi } from 'vitest';
import { hasConcurrencyQueue, LeaseQueues, QUEUE_RETRY_MS } from './lease-queue.js';

/** Waiters on `q` whose attempts never succeed, each recording its name in `tries`; they give up after 5 s. */
function waiters(q: LeaseQueues) {
  const tries: string[] = [];
  const wait = (name: string, ids: string[]) =>
    q.wait(ids, Date.now() + 5_000, Date.now, undefined, 1_000, async () => {
      tries.push(name);
      return { done: false, retryMs: 1_000 };
    });
  return { tries, wait };
}

describe('LeaseQueues', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('lets only the head try, re-trying at most every QUEUE_RETRY_MS, then hands the turn on at once', async () => {
    vi.useFakeTimers();
    const q = new LeaseQueues();
    const tries: string[] = [];
    let free = false;
    const wait = (name: string) =>
      q.wait(['k'], Date.now() + 10_000, Date.now, undefined, 1_000, async () => {
        tries.push(name);
        return { done: free, retryMs: 1_000 };
      });
    const a = wait('a');
    const b = wait('b');
    expect(q.waiting('k')).toBe(2);
    await vi.advanceTimersByTimeAsync(QUEUE_RETRY_MS * 3);
    expect(tries).toEqual(['a', 'a', 'a']);
    free = true;
    q.wake('k');
    await expect(a).resolves.toBe(true);
    await expect(b).resolves.toBe(true);
    expect(tries).toEqual(['a', 'a', 'a', 'a', 'b']);
    expect(q.waiting('k')).toBe(0);
  });

  it('gives up at the deadline or on abort, leaving the queue', async () => {
    vi.useFakeTimers();
    const q = new LeaseQueues();
    const never = async () => ({ done: false, retryMs: 50 });
    const timedOut = q.wait(['k'], Date.now() + 200, Date.now, undefined, 50, never);
    const controller = new AbortController();
    const aborted = q.wait(['k'], Date.now() + 10_000, Date.now, controller.signal, 50, never);
    controller.abort();
    await expect(aborted).resolves.toBe(false);
    await vi.advanceTimersByTimeAsync(200);
    await expect(timedOut).resolves.toBe(false);
    expect(q.waiting('k')).toBe(0);
  });

  it('counts a waiter in every queue it joins, waits its turn in the first, and is woken by a release in any', async () => {
    vi.useFakeTimers();
    const q = new LeaseQueues();
    const tries: string[] = [];
    const free = new Set<string>();
    const wait = (name: string, ids: string[]) =>
      q.wait(ids, Date.now() + 10_000, Date.now, undefined, 1_000, async () => {
        tries.push(name);
        return { done: free.has(name), retryMs: 1_000 };
      });
    // Two users of one tenant: each waits in its user's queue, and the tenant's queue counts both.
    const a = wait('a', ['user:a', 'tenant:t']);
    const b = wait('b', ['user:b', 'tenant:t']);
    const c = wait('c', ['user:a', 'tenant:t']);
    expect([q.waiting('user:a'), q.waiting('user:b'), q.waiting('tenant:t')]).toEqual([2, 1, 3]);
    // Each asked the store before it queued (limiter/leased-decisions.ts): the heads re-try after QUEUE_RETRY_MS.
    await vi.advanceTimersByTimeAsync(0);
    expect(tries).toEqual([]);
    // A tenant lease released here wakes the tenant's waiters that head their own queues: a and b, not c.
    free.add('a');
    q.wake('tenant:t');
    await expect(a).resolves.toBe(true);
    // The release woke the head of each user's queue (a, b); a left user:a, whose next (c) tries at once.
    await vi.advanceTimersByTimeAsync(0);
    expect(tries.sort()).toEqual(['a', 'b', 'c']);
    expect([q.waiting('user:a'), q.waiting('user:b'), q.waiting('tenant:t')]).toEqual([1, 1, 2]);
    free.add('b');
    free.add('c');
    q.wake('user:b');
    q.wake('user:a');
    await expect(b).resolves.toBe(true);
    await expect(c).resolves.toBe(true);
    expect([q.waiting('user:a'), q.waiting('user:b'), q.waiting('tenant:t')]).toEqual([0, 0, 0]);
  });

  it('a queue that only counts a waiter does not make those who wait their turn there wait behind it', async () => {
    vi.useFakeTimers();
    const q = new LeaseQueues();
    const { tries, wait } = waiters(q);
    // a (a plan queuing per user and per tenant) waits its turn in user:a; b (a plan queuing per tenant) in tenant:t.
    const a = wait('a', ['user:a', 'tenant:t']);
    expect(q.hasTurns('tenant:t')).toBe(false);
    const b = wait('b', ['tenant:t']);
    expect([q.hasTurns('tenant:t'), q.hasTurns('user:a'), q.waiting('tenant:t')]).toEqual([true, true, 2]);
    q.wake('tenant:t');
    await vi.advanceTimersByTimeAsync(0);
    expect(tries).toEqual(['a', 'b']);
    await vi.advanceTimersByTimeAsync(5_000);
    await expect(a).resolves.toBe(false);
    await expect(b).resolves.toBe(false);
  });

  it('a woken waiter that is not the head of its own queue does not try', async () => {
    vi.useFakeTimers();
    const q = new LeaseQueues();
    const { tries, wait } = waiters(q);
    const a = wait('a', ['user:a', 'tenant:t']);
    const c = wait('c', ['user:a', 'tenant:t']);
    await vi.advanceTimersByTimeAsync(0);
    q.wake('tenant:t');
    q.wake('tenant:t');
    await vi.advanceTimersByTimeAsync(0);
    expect(tries).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(5_000);
    await expect(a).resolves.toBe(false);
    await expect(c).resolves.toBe(false);
    expect(q.waiting('tenant:t')).toBe(0);
  });
});

describe('hasConcurrencyQueue', () => {
  it('finds a queueing concurrency policy in policies or in any plan', () => {
    const queued = { algorithm: 'concurrency', limit: 1, queue: { size: 1, timeoutMs: 10 } };
    expect(hasConcurrencyQueue({ policies: queued })).toBe(true);
    expect(hasConcurrencyQueue({ plans: { free: [{ limit: 1, windowMs: 1 }], pro: [queued] } })).toBe(true);
    expect(hasConcurrencyQueue({ policies: [{ algorithm: 'concurrency', limit: 1 }] })).toBe(false);
  });
});
