/**
 * @module The limiter's side of concurrency leases, after the store has decided: an admitted decision of
 * a plan with concurrency policies gets `release` and `renew` (bound to the store that took the lease:
 * the limiter's, or the local fallback's), the lease gauges (`tollgate.leases.active`,
 * `tollgate.queue.length`) count what this limiter holds, a release wakes the key's queue
 * (lease-queue.ts), and a failed release or renewal is logged once per run of failures (the lease then
 * ends by its lease time). create-limiter.ts assembles decisions; this module keeps what they hold.
 */
import { MAX_LEASE_RETRY_MS } from '../algorithms/concurrency.js';
import { costUnits, DecisionImpl, Result } from '../decision.js';
import { type Logger, safeLog } from '../logging.js';
import { type InFlightSource, reportInFlight } from '../observability/in-flight.js';
import type { CompiledPlan } from '../plans/compiled-plan.js';
import { isPromiseLike, type Store, type StoreKey, type StorePlan } from '../stores/store.js';
import type { Decision } from '../types.js';
import { LeaseQueues } from './lease-queue.js';

export class LeaseKeeper {
  /** Requests waiting for a lease in this process (concurrency policies with a queue). */
  readonly queues = new LeaseQueues();
  /** A release or renewal failed and was logged; cleared by the next that succeeds. */
  private failing = false;
  /** Per concurrency policy name: leases held by this limiter's decisions, and requests in its queues. */
  private readonly inFlight = new Map<string, { leases: number; queued: number }>();
  /** Held here: `reportInFlight` keeps its source weakly. */
  private readonly source: InFlightSource = () => [...this.inFlight].map(([policy, n]) => ({ policy, leases: n.leases, queued: n.queued }));
  private readonly stopReporting: (() => void) | undefined;

  constructor(
    plans: Iterable<CompiledPlan>,
    private readonly logger: Logger,
    private readonly storeKind: string,
    private readonly now: () => number,
  ) {
    for (const cp of plans) {
      for (const p of cp.all) if (p.algorithm === 'concurrency') this.inFlight.set(p.name, { leases: 0, queued: 0 });
    }
    this.stopReporting = this.inFlight.size > 0 ? reportInFlight(this.source) : undefined;
  }

  /**
   * Gives `d`, admitted with lease `lease` of `key` in `store` under `plan`, its `release` (once; wakes
   * the queue `queue`) and `renew`.
   */
  hold(d: DecisionImpl, cp: CompiledPlan, key: StoreKey, lease: number, store: Store, plan: StorePlan, queue: string): void {
    let released = false;
    this.count(cp, 'leases', 1);
    d.release = () => {
      if (released) return;
      released = true;
      this.count(cp, 'leases', -1);
      this.send(() => store.release?.(key, plan, lease, this.now()));
      this.queues.wake(queue);
    };
    d.renew = () => {
      if (released) return false;
      const answer = this.send(() => store.renew?.(key, plan, lease, this.now()) ?? false);
      return typeof answer === 'boolean' ? answer : answer !== 'failed';
    };
  }

  /**
   * Ends `lease`, best effort and silently: its call was judged failed (silent past storeTimeoutMs) but
   * may have taken it, so a slow reply does not hold a slot for leaseMs. Sent after the apply on the same
   * connection, it runs after it; when the node is down it fails, and nothing was taken.
   */
  abandon(store: Store, key: StoreKey, plan: StorePlan, lease: number, now: number): void {
    try {
      const pending = store.release?.(key, plan, lease, now);
      if (isPromiseLike(pending)) pending.then(undefined, () => undefined);
    } catch {
      // Nothing was taken.
    }
  }

  /** Adds `n` to the waiters of the queueing concurrency policies of `cp`. */
  countQueued(cp: CompiledPlan, n: number): void {
    this.count(cp, 'queued', n);
  }

  close(): void {
    this.stopReporting?.();
  }

  /** Runs a release or renewal: its synchronous answer, 'sent' while it is on its way, 'failed' when it threw. */
  private send<T>(call: () => T | Promise<T> | undefined): T | 'sent' | 'failed' {
    try {
      const pending = call();
      if (!isPromiseLike(pending)) return pending as T;
      pending.then(
        () => {
          this.failing = false;
        },
        (error: unknown) => this.failed(error),
      );
      return 'sent';
    } catch (error) {
      this.failed(error);
      return 'failed';
    }
  }

  /** A release or renewal the store refused: the lease ends by its lease time; logged once per run of failures. */
  private failed(error: unknown): void {
    if (this.failing) return;
    this.failing = true;
    safeLog(
      this.logger,
      'error',
      { code: 'ERR_RL_STORE_FAILED', store: this.storeKind, operation: 'lease', err: error },
      'ERR_RL_STORE_FAILED: a lease could not be released or renewed; it ends by itself after its leaseMs',
    );
  }

  private count(cp: CompiledPlan, field: 'leases' | 'queued', n: number): void {
    for (const p of cp.all) {
      if (p.algorithm !== 'concurrency' || (field === 'queued' && p.queue === undefined)) continue;
      const c = this.inFlight.get(p.name);
      if (c !== undefined) c[field] += n;
    }
  }
}

/** A refusal a queued request may wait out: only concurrency policies with a queue refused it. */
export function waitsOut(d: Decision, cp: CompiledPlan): boolean {
  return d.reason === 'limited' && d.policies.every((r, i) => r.allowed || cp.all[i]?.queue !== undefined);
}

/**
 * The refusal of a waiter whose client went away before its turn: nothing was asked of the store, so
 * nothing is taken; the queueing policies refuse, the others show their capacity (not evaluated).
 */
export function leftQueue(cp: CompiledPlan, key: string, cost: number, mode: 'enforce' | 'shadow'): DecisionImpl {
  const results = cp.all.slice(0, cp.enforcedCount).map((p) => {
    const waited = p.queue !== undefined;
    return new Result(
      p.name,
      p.algorithm,
      !waited,
      false,
      p.limit,
      p.windowMs,
      p.capacity,
      waited ? 0 : p.capacity,
      waited ? MAX_LEASE_RETRY_MS : 0,
      0,
      0,
      undefined,
    );
  });
  const b = results.find((r) => !r.allowed) as Result;
  const d = new DecisionImpl(
    mode === 'shadow',
    true,
    'limited',
    mode,
    key,
    costUnits(cost),
    b.name,
    0,
    b.retryAfterMs,
    0,
    0,
    results,
    undefined,
    false,
  );
  d.plan = cp.name;
  return d;
}
