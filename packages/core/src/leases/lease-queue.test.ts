import { afterEach, describe, expect, it, vi } from 'vitest';
import { hasConcurrencyQueue, LeaseQueues, QUEUE_RETRY_MS } from './lease-queue.js';

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
      q.wait('k', Date.now() + 10_000, Date.now, undefined, 1_000, async () => {
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
    const timedOut = q.wait('k', Date.now() + 200, Date.now, undefined, 50, never);
    const controller = new AbortController();
    const aborted = q.wait('k', Date.now() + 10_000, Date.now, controller.signal, 50, never);
    controller.abort();
    await expect(aborted).resolves.toBe(false);
    await vi.advanceTimersByTimeAsync(200);
    await expect(timedOut).resolves.toBe(false);
    expect(q.waiting('k')).toBe(0);
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
