/**
 * @module Waiting for a lease (`queue: { size, timeoutMs }` on a concurrency policy): a FIFO per key of
 * that policy, in this process. Only the head of a queue asks the store again: at once when a lease of its key
 * is released through this limiter, else at the earliest lease expiry the refusal named, at most every
 * `QUEUE_RETRY_MS`. Each attempt is a whole decision (every policy, all or nothing, one store call).
 * A plan with several queuing policies puts a waiter in each one's queue: it waits its turn in the first,
 * the others count it (each keeps its `size`) and wake it when it heads the first.
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
  /** The queue this waiter waits its turn in: it asks the store only as that queue's head. */
  readonly primary: string;
  /** Wakes the waiter to try again. */
  wake(): void;
  /** True while it waits (not while its attempt is on its way to the store). */
  waiting: boolean;
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
  /** Per queue id, its waiters in the order they came: those who wait their turn in it and those it only counts. */
  private readonly queues = new Map<string, Waiter[]>();
  /**
   * Per queue id, how many of its waiters it only counts (they wait their turn in another): absent for
   * a queue whose waiters all wait their turn in it (one queuing policy), whose head is then its first.
   */
  private readonly counted = new Map<string, number>();
  /** Set by `close`: no one waits any more, and no one starts to. */
  private closed = false;

  /** True once the limiter closed (`close`): a request is refused rather than queued. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** The limiter closes: every waiter leaves its queue now, unanswered by the store (`wait` resolves false), and none waits after. */
  close(): void {
    this.closed = true;
    for (const queue of this.queues.values()) for (const w of queue) w.wake();
  }

  /** True while no request waits in any queue: a release has no one to wake. */
  get idle(): boolean {
    return this.queues.size === 0;
  }

  /** Requests of `id` waiting now (its own and those it counts: see `wait`). */
  waiting(id: string): number {
    return this.queues.get(id)?.length ?? 0;
  }

  /** Whether a request waits its turn in `id` (not only counted there): a new one then queues behind it. */
  hasTurns(id: string): boolean {
    return this.headOf(id) !== undefined;
  }

  /** The waiter whose turn it is in `id`: the first that waits its turn there (not one `id` only counts). */
  private headOf(id: string): Waiter | undefined {
    const queue = this.queues.get(id);
    if (queue === undefined || !this.counted.has(id)) return queue?.[0];
    for (const w of queue) if (w.primary === id) return w;
    return undefined;
  }

  /**
   * Wakes the waiters of `id` that may ask the store (each the head of its own queue), in the order they
   * came: a lease of that key was released here, so the slot is theirs to try. In a queue that is every
   * waiter's own (one queuing policy) that is its head alone; in one that also counts the waiters of
   * other queues (a tenant's, whose users each have their own) it is the head of each, since the first
   * may still be refused by its own policy.
   */
  wake(id: string, onlyWaiting = false): void {
    const queue = this.queues.get(id);
    if (queue === undefined) return;
    const wake = (w: Waiter | undefined) => {
      if (w !== undefined && (!onlyWaiting || w.waiting)) w.wake();
    };
    if (!this.counted.has(id)) {
      wake(queue[0]);
      return;
    }
    for (const w of [...queue]) if (this.headOf(w.primary) === w) wake(w);
  }

  /**
   * Joins the back of every queue of `ids` and runs `attempt` each time this waiter is the head of the
   * first (`ids[0]`, the queue it waits its turn in) and is woken (a released lease, the re-try timer),
   * until it returns `true` (done), `deadline` passes, `signal` aborts or the queues close. The other queues only count it
   * (their `size` bounds), and a release there wakes it when it heads its own. Resolves true when an
   * attempt finished it.
   */
  async wait(
    ids: readonly string[],
    deadline: number,
    now: () => number,
    signal: AbortSignal | undefined,
    firstRetryMs: number,
    attempt: () => Promise<{ done: boolean; retryMs: number }>,
  ): Promise<boolean> {
    let wake: () => void = () => undefined;
    /** A wake that came while the waiter was not waiting (during its attempt): the next wait is skipped. */
    let woken = false;
    const me: Waiter = {
      primary: ids[0] as string,
      wake: () => {
        woken = true;
        wake();
      },
      waiting: false,
    };
    for (const id of ids) this.join(id, me);
    try {
      let retryMs = firstRetryMs > 0 ? Math.min(QUEUE_RETRY_MS, firstRetryMs) : 0;
      for (;;) {
        const left = deadline - now();
        if (left <= 0 || aborted(signal) || this.closed) return false;
        // Wait for the turn at the head, a release, the re-try timer, the deadline or the abort.
        me.waiting = true;
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', done);
            wake = () => undefined;
            resolve();
          };
          const head = this.headOf(me.primary) === me;
          const timer = setTimeout(done, head ? Math.min(left, Math.max(1, retryMs)) : left);
          wake = done;
          signal?.addEventListener('abort', done, { once: true });
          if (woken || (head && retryMs === 0)) done();
        });
        me.waiting = false;
        if (aborted(signal) || this.closed) return false;
        if (this.headOf(me.primary) !== me) continue;
        woken = false;
        const r = await attempt();
        if (r.done) return true;
        retryMs = Math.min(QUEUE_RETRY_MS, Math.max(1, r.retryMs));
      }
    } finally {
      this.leave(ids, me);
    }
  }

  private join(id: string, me: Waiter): void {
    const queue = this.queues.get(id);
    if (queue === undefined) this.queues.set(id, [me]);
    else queue.push(me);
    if (id !== me.primary) this.counted.set(id, (this.counted.get(id) ?? 0) + 1);
  }

  /** Takes `me` out of the queues of `ids`; when it headed its own, the next in line there tries at once (a slot may be free for it too). */
  private leave(ids: readonly string[], me: Waiter): void {
    const headed = this.headOf(me.primary) === me;
    for (const id of ids) {
      const queue = this.queues.get(id) as Waiter[];
      queue.splice(queue.indexOf(me), 1);
      if (queue.length === 0) this.queues.delete(id);
      if (id === me.primary) continue;
      const n = (this.counted.get(id) as number) - 1;
      if (n === 0) this.counted.delete(id);
      else this.counted.set(id, n);
    }
    if (headed) this.headOf(me.primary)?.wake();
  }
}
