/**
 * @module Waiting for a lease (`queue: { size, timeoutMs }` on a concurrency policy): a FIFO per key of
 * that policy, in this process. Only the head of a queue asks the store again: at once when a lease of its key
 * is released through this limiter, else at the earliest lease expiry the refusal named, at most every
 * `QUEUE_RETRY_MS`. Each attempt is a whole decision (every policy, all or nothing, one store call).
 *
 * What that gives, by store: on MemoryStore every release passes through the process, so a waiter gets
 * the slot freed for it at once, in order. On Redis the leases are shared but the queue is not: a slot
 * freed by another process is found by the head's next re-try (within `QUEUE_RETRY_MS`), and across
 * processes there is no order: a request that arrives in another process may take the slot first.
 * Queues stay bounded per process (`size` waiters per key), and a waiter leaves on timeout or abort.
 */

import { isConcurrencyOptions } from '../policy.js';

/** The longest a queue's head waits before it asks the store again (slots freed by other processes, leases that expired). */
export const QUEUE_RETRY_MS = 100;

interface Waiter {
  /** Wakes the waiter to try again. */
  wake(): void;
}

/** A function, not an inline test: the flag changes while the waiter awaits. */
export function aborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** True when some concurrency policy in `options` (its `policies` or any plan) may queue. */
export function hasConcurrencyQueue(options: { policies?: unknown; plans?: unknown }): boolean {
  const lists: unknown[] = [options?.policies];
  if (typeof options?.plans === 'object' && options.plans !== null) lists.push(...Object.values(options.plans));
  return lists.some((list) => (Array.isArray(list) ? list : [list]).some((p) => isConcurrencyOptions(p) && p.queue !== undefined));
}

export class LeaseQueues {
  private readonly queues = new Map<string, Waiter[]>();

  /** Requests of `id` waiting now. */
  waiting(id: string): number {
    return this.queues.get(id)?.length ?? 0;
  }

  /** Wakes the head of `id`'s queue (a lease of that key was released here). */
  wake(id: string): void {
    this.queues.get(id)?.[0]?.wake();
  }

  /**
   * Joins the back of `id`'s queue and runs `attempt` each time this waiter is the head and is woken
   * (released lease, re-try timer), until it returns `true` (done), `deadline` passes or `signal` aborts.
   * Resolves true when an attempt finished it.
   */
  async wait(
    id: string,
    deadline: number,
    now: () => number,
    signal: AbortSignal | undefined,
    firstRetryMs: number,
    attempt: () => Promise<{ done: boolean; retryMs: number }>,
  ): Promise<boolean> {
    let queue = this.queues.get(id);
    if (queue === undefined) {
      queue = [];
      this.queues.set(id, queue);
    }
    let wake: () => void = () => undefined;
    /** A wake that came while the waiter was not waiting (during its attempt): the next wait is skipped. */
    let woken = false;
    const me: Waiter = {
      wake: () => {
        woken = true;
        wake();
      },
    };
    queue.push(me);
    try {
      let retryMs = firstRetryMs > 0 ? Math.min(QUEUE_RETRY_MS, firstRetryMs) : 0;
      for (;;) {
        const left = deadline - now();
        if (left <= 0 || aborted(signal)) return false;
        // Wait for the turn at the head, a release, the re-try timer, the deadline or the abort.
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', done);
            wake = () => undefined;
            resolve();
          };
          const head = queue[0] === me;
          const timer = setTimeout(done, head ? Math.min(left, Math.max(1, retryMs)) : left);
          wake = done;
          signal?.addEventListener('abort', done, { once: true });
          if (woken || (head && retryMs === 0)) done();
        });
        if (aborted(signal)) return false;
        if (queue[0] !== me) continue;
        woken = false;
        const r = await attempt();
        if (r.done) return true;
        retryMs = Math.min(QUEUE_RETRY_MS, Math.max(1, r.retryMs));
      }
    } finally {
      const at = queue.indexOf(me);
      if (at >= 0) queue.splice(at, 1);
      if (queue.length === 0) this.queues.delete(id);
      // The next in line tries at once: a slot may be free for it too.
      else if (at === 0) queue[0]?.wake();
    }
  }
}
