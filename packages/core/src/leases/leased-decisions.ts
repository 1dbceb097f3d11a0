/**
 * @module The decision path of plans with concurrency policies, on top of the plain one
 * (limiter/decide.ts): the store call carries a lease id, an admitted decision gets `release` and
 * `renew` for its leases, and a plan whose concurrency policies queue makes a request wait its turn
 * (lease-queue.ts). A limiter none of whose plans has a concurrency policy never builds this.
 */
import type { CompiledPolicy } from '../algorithms/kernel.js';
import { DecisionImpl } from '../decision.js';
import type { Fallback } from '../failure/fallback.js';
import { CallFailure, type StoreGuard } from '../failure/store-guard.js';
import { isResultOf } from '../failure/store-result-error.js';
import { StoreTimeoutError } from '../failure/store-timeout-error.js';
import { isPromiseLike } from '../internal/promise.js';
import type { DecisionBuilder } from '../limiter/build-decision.js';
import type { Counters } from '../limiter/counters.js';
import type { Decider } from '../limiter/decide.js';
import type { LimiterKey } from '../limiter/limiter.js';
import { costOf, type Target, type Targets } from '../limiter/target.js';
import type { DecisionObserver } from '../observability/decision-observer.js';
import type { StoreTimer } from '../observability/store-timer.js';
import type { CompiledPlan } from '../plans/compiled-plan.js';
import { F_CHARGED, R_FLAGS, RESULT_STRIDE, type Store, type StoreResult } from '../stores/store.js';
import type { CheckOptions, Decision } from '../types.js';
import { type LeaseKeeper, leftQueue, RESTORE_WAIT_MS, type Restored, waitsOut } from './lease-keeper.js';
import { aborted } from './lease-queue.js';

/**
 * Lease ids, unique within the process (limiters sharing a store never end each other's leases); a
 * RedisStore prefixes them with its own random id, unique across processes. Counted from a random start
 * (a safe integer for ages): a process that loads this package twice (its ESM and CommonJS builds) has
 * two counters, and limiters of both may share a store.
 */
let nextLease = 1 + Math.floor(Math.random() * 2 ** 40);

/** What the leased path needs besides the plain one. */
export interface LeasedParts {
  readonly plain: Decider;
  readonly targets: Targets;
  readonly builder: DecisionBuilder;
  readonly guard: StoreGuard;
  readonly timed: StoreTimer;
  /** The store itself, where admitted leases are released and renewed. */
  readonly store: Store;
  readonly keeper: LeaseKeeper;
  readonly fallbacks: ReadonlyMap<CompiledPlan, Fallback>;
  readonly observer: DecisionObserver;
  readonly counters: Counters;
  readonly mode: 'enforce' | 'shadow';
  readonly defaultCost: number;
}

/** Whether a leased decision is counted and observed now, or later by `account` (a queued request's attempts). */
type Observing = 'observe' | 'quiet';

/**
 * How many times a decision asks again for a lease granted across a connection event (`LeaseKeeper.epoch`)
 * or beside leases the store lost (`LeaseKeeper.lostBeside`) before the failure mode answers it: each time
 * needs the connection to close or reopen, or the store to lose leases again, while the call is on its
 * way, so this is reached only by a connection that flaps or a store that keeps losing its keys.
 */
const STALE_LEASE_TRIES = 3;

/** Whether `o` took a lease: a concurrency policy of `cp` was charged. */
function tookLease(o: StoreResult, cp: CompiledPlan): boolean {
  for (let i = 0; i < cp.all.length; i++) {
    if (cp.all[i]?.algorithm === 'concurrency' && ((o[i * RESULT_STRIDE + R_FLAGS] as number) & F_CHARGED) !== 0) return true;
  }
  return false;
}

/** Why a decision was answered by the failure mode after leases granted across connection events. */
class StaleLeaseError extends Error {
  constructor(tries: number) {
    super(
      `the store's connection closed or reopened, or the store lost the leases held, while each of ${tries} lease calls was on its way`,
    );
    this.name = 'StaleLeaseError';
  }
}

export class LeasedDecider {
  constructor(private readonly parts: LeasedParts) {}

  /** `limiter.decide` for a limiter with concurrency policies in some plan. */
  readonly decide = (rawKey: LimiterKey, opts?: CheckOptions): Decision | Promise<Decision> => {
    const { targets, guard, mode, defaultCost } = this.parts;
    const t = targets.of(rawKey, opts);
    const cost = costOf(opts, defaultCost);
    if (t.cp.queue !== undefined && mode !== 'shadow') return this.queuedNow(t, cost, opts);
    const starting = guard.starting();
    if (starting !== undefined) return starting.then(() => this.decideNow(t, cost, opts));
    return this.decideNow(t, cost, opts);
  };

  private decideNow(t: Target, cost: number, opts: CheckOptions | undefined): Decision | Promise<Decision> {
    const plain = this.parts.plain;
    if (!t.cp.leases) return plain.decideNow(t, cost, opts);
    return this.leased(t, cost, plain.now(), opts, 'observe');
  }

  /**
   * Decides `t` at `at` with a lease id; an admitted decision gets `release` and `renew` (in the store, or
   * the local fallback's).
   */
  private leased(
    t: Target,
    cost: number,
    at: number,
    opts: CheckOptions | undefined,
    observing: Observing,
    restored = false,
    tries = 1,
  ): Decision | Promise<Decision> {
    const { plain, guard, timed, keeper, store } = this.parts;
    const node = guard.nodeOfKey(t.storeKey);
    // The store lost leases this limiter holds (a restart, a failover): they go back before a new one
    // (waited for once, at most RESTORE_WAIT_MS); not while its node's breaker is open, when the failure mode answers.
    const restoring = restored || guard.refuses(node, at) ? undefined : keeper.restoring(store, node);
    if (restoring !== undefined) {
      // Not all back (late, or the restore failed): the failure mode answers now (a store-error event, as
      // for any call the store did not answer), not after a store call's own timeout too.
      return restoring.then((how) =>
        how === 'back'
          ? this.leased(t, cost, plain.now(), opts, observing, true, tries)
          : this.unrestored(t, cost, plain.now(), node, how, opts, observing),
      );
    }
    if (!guard.allow(node, at)) return this.skipped(t, cost, at, node, opts, observing);
    const lease = nextLease++;
    const epoch = keeper.epoch(store);
    const seq = guard.next();
    let r: StoreResult | Promise<StoreResult>;
    try {
      r = timed.apply(t.storeKey, t.cp.storePlan, cost, at, lease);
    } catch (error) {
      timed.threw();
      const failure = guard.failure(node, seq, error, false);
      return this.failedWith(t, cost, at, failure, lease, opts, observing);
    }
    if (isPromiseLike(r)) {
      let failed: Decision | undefined;
      return guard.watch(
        node,
        seq,
        r,
        (o) => {
          // Junk (a custom store's bug): the lease the call may have taken is given up, as for no answer.
          if (!isResultOf(o, t.cp.storePlan))
            return this.unanswered(t, cost, guard.junk(node, seq, o, t.cp.storePlan), at, lease, opts, observing);
          // Granted across a reconnect, maybe before the held leases were back: given up, asked again.
          if (keeper.epoch(store) !== epoch && tookLease(o, t.cp))
            return this.again(t, cost, o, at, lease, opts, observing, node, seq, tries);
          // Granted by a store that lost leases held here (fewer in use than held): given up, asked again once they are back.
          if (this.lostBeside(t, o, node)) return this.again(t, cost, o, at, lease, opts, observing, node, seq, tries);
          // As the plain path does: an outage continues the key's rate budget from this answer.
          plain.remember(t, o, at, cost);
          return this.answered(t, cost, o, at, lease, opts, observing);
        },
        (f) => {
          // Given up on while still on its way, `r` may yet run (a Cluster client sends it again): its
          // lease is given up again once it settles. A call that failed has settled already.
          failed = this.unanswered(t, cost, f, at, lease, opts, observing, f.error instanceof StoreTimeoutError ? r : undefined);
          return failed;
        },
        // The lease the late reply took is given up (unanswered); its rate charges go back when the failure mode refused.
        (late) => {
          if (failed?.allowed === false) plain.giveBack(t, cost, late, at);
        },
      );
    }
    guard.answered(node);
    if (!isResultOf(r, t.cp.storePlan))
      return this.unanswered(t, cost, guard.junk(node, seq, r, t.cp.storePlan), at, lease, opts, observing);
    if (this.lostBeside(t, r, node)) return this.again(t, cost, r, at, lease, opts, observing, node, seq, tries);
    plain.remember(t, r, at, cost);
    return this.answered(t, cost, r, at, lease, opts, observing);
  }

  /** Whether `o` granted a lease of `t` beside leases the store lost (LeaseKeeper.lostBeside). */
  private lostBeside(t: Target, o: StoreResult, node: string): boolean {
    return tookLease(o, t.cp) && this.parts.keeper.lostBeside(this.parts.store, t.cp, t.storeKey, o, node);
  }

  /** The failure mode's decision for a check that does not call the store (its node's breaker is open, or its held leases are not back). */
  private skipped(t: Target, cost: number, at: number, node: string, opts: CheckOptions | undefined, observing: Observing): Decision {
    const lease = nextLease++;
    return this.seen(this.holding(this.parts.plain.skipped(t, cost, at, node, lease), t, lease), observing, opts, at);
  }

  /**
   * The failure mode's decision when the held leases are not all back: the restore was late (the node's
   * breaker is left alone: it answered, only slowly), or failed with `how.error`, a failure of the node
   * judged as a check's is (StoreGuard.failure: an outage counted in `stats().outages`, its one log line,
   * the breaker). A restore that kept failing on a client not ready once answered thousands of checks by
   * the failure mode with no outage told and no breaker.
   */
  private unrestored(
    t: Target,
    cost: number,
    at: number,
    node: string,
    how: Exclude<Restored, 'back'>,
    opts: CheckOptions | undefined,
    observing: Observing,
  ): Decision {
    const lease = nextLease++;
    const guard = this.parts.guard;
    const failure =
      how === 'late'
        ? new CallFailure(new StoreTimeoutError(RESTORE_WAIT_MS, node, 'leases'), 'node', node)
        : guard.failure(node, guard.next(), how.error, false);
    return this.failedWith(t, cost, at, failure, lease, opts, observing);
  }

  /** Observes `d` unless it is decided quietly (a queued attempt, observed once with its last decision). */
  private seen(d: Decision, observing: Observing, opts: CheckOptions | undefined, at: number): Decision {
    return observing === 'quiet' ? d : this.parts.observer.observe(d, opts, at);
  }

  /** The decision from the store's answer for lease `lease` (methods, not closures: a synchronous store allocates none). */
  private answered(
    t: Target,
    cost: number,
    o: StoreResult,
    at: number,
    lease: number,
    opts: CheckOptions | undefined,
    observing: Observing,
  ): Decision {
    const builder = this.parts.builder;
    const d = builder.build(t.key, cost, o, t.cp, t.cp.all, false, observing === 'quiet' ? 'uncounted' : 'count');
    return this.seen(this.holding(builder.label(d, t, cost, o, at), t, lease), observing, opts, at);
  }

  /**
   * Gives up `lease`, granted by the answer `o` in a later connection epoch than it was sent in or beside
   * leases the store lost, with what `o` charged the rate policies (the next ask charges them again), and
   * decides again (after the held leases are back); after STALE_LEASE_TRIES, the failure mode answers,
   * and the charges go back if it refuses (as for a late reply).
   */
  private again(
    t: Target,
    cost: number,
    o: StoreResult,
    at: number,
    lease: number,
    opts: CheckOptions | undefined,
    observing: Observing,
    node: string,
    seq: number,
    tries: number,
  ): Decision | Promise<Decision> {
    const { keeper, store, guard, plain } = this.parts;
    if (tries < STALE_LEASE_TRIES) {
      keeper.abandon(store, t.cp, t.storeKey, t.cp.storePlan, lease, at);
      // The charges go back just before the ask, on a client ready to send them (node-redis refuses commands until then).
      const ask = () => {
        plain.giveBack(t, cost, o, at);
        return this.leased(t, cost, plain.now(), opts, observing, false, tries + 1);
      };
      // Answered before the client is ready again (node-redis): asked once it is, and the held leases are back.
      const back = keeper.reconnecting(store);
      return back === undefined ? ask() : back.then(ask);
    }
    const d = this.unanswered(t, cost, guard.failure(node, seq, new StaleLeaseError(tries), false), at, lease, opts, observing);
    if (!d.allowed) plain.giveBack(t, cost, o, at);
    return d;
  }

  /** The failure mode's decision when the store did not answer; the lease it may have taken is given up (again when `applied`, the call, settles). */
  private unanswered(
    t: Target,
    cost: number,
    f: CallFailure,
    at: number,
    lease: number,
    opts: CheckOptions | undefined,
    observing: Observing,
    applied?: PromiseLike<unknown>,
  ): Decision {
    this.parts.keeper.abandon(this.parts.store, t.cp, t.storeKey, t.cp.storePlan, lease, at, applied);
    return this.failedWith(t, cost, at, f, lease, opts, observing);
  }

  /** The failure mode's decision for `failure`, with lease `lease` held when it admits, observed. */
  private failedWith(
    t: Target,
    cost: number,
    at: number,
    failure: CallFailure,
    lease: number,
    opts: CheckOptions | undefined,
    observing: Observing,
  ): Decision {
    return this.seen(this.holding(this.parts.plain.failed(t, cost, at, failure, lease), t, lease), observing, opts, at);
  }

  /** Gives an admitted decision of a leased plan its `release` and `renew`. */
  private holding(d: Decision, t: Target, lease: number): Decision {
    if (d.limited || !(d instanceof DecisionImpl)) return d;
    const { store, keeper } = this.parts;
    if (!d.degraded) {
      keeper.hold(d, t.cp, t.storeKey, lease, store, t.cp.storePlan, () => queueIds(t, t.cp.leaseAts));
      return d;
    }
    // 'local' took the lease in its own store ('open' admitted without one); it goes into the store too once it answers.
    const local = (this.parts.fallbacks.get(t.cp) as Fallback).leases;
    if (local !== undefined)
      keeper.hold(d, t.cp, t.storeKey, lease, local.store, local.plan, () => queueIds(t, t.cp.leaseAts), { store, plan: t.cp.storePlan });
    return d;
  }

  /**
   * `queued`, but a request that no one waits before, on a store that answers at once (the memory store),
   * is answered at once when its first attempt settles it (a lease, or a refusal no queue waits out):
   * `decide()` is then a Decision, as without a queue. Only a request that waits gets a Promise.
   */
  private queuedNow(t: Target, cost: number, opts: CheckOptions | undefined): Decision | Promise<Decision> {
    const ids = queueIds(t, t.cp.queueAts);
    // Behind someone waiting: it waits too, unless it is answered at once (its queues full, say).
    if (this.parts.keeper.queues.hasTurns(ids[0] as string))
      return this.atOnce(t, cost, ids, undefined, opts) ?? this.queued(t, cost, opts, ids, undefined);
    if (this.parts.guard.starting() !== undefined) return this.queued(t, cost, opts, ids, undefined);
    const first = this.leased(t, cost, this.parts.plain.now(), opts, 'quiet');
    const settle = (d: Decision): Decision | Promise<Decision> =>
      !waitsOut(d, t.cp) ? this.account(d, t.cp, opts) : (this.atOnce(t, cost, ids, d, opts) ?? this.queued(t, cost, opts, ids, d));
    return isPromiseLike(first) ? first.then(settle) : settle(first);
  }

  /**
   * The answer of a request that would wait but does not: its client left, the limiter closed, or one of
   * its queues is full (refused without asking the store, so a slot freed for the head is not taken by
   * one that came after everyone in the queue). `d`, its refusal so far, else one made here. Undefined: it waits.
   */
  private atOnce(
    t: Target,
    cost: number,
    ids: readonly string[],
    d: Decision | undefined,
    opts: CheckOptions | undefined,
  ): Decision | undefined {
    const { keeper, mode } = this.parts;
    if (aborted(opts?.signal) || keeper.queues.isClosed) return this.account(d ?? leftQueue(t.cp, t.key, cost, mode), t.cp, opts);
    const fullAt = fullQueues(keeper, ids, t.cp);
    if (fullAt.length === 0) return undefined;
    return this.account(d ?? leftQueue(t.cp, t.key, cost, mode, (i) => fullAt.includes(i)), t.cp, opts);
  }

  /**
   * A request of a plan whose concurrency policies may queue: decided at once when no one waits for its
   * key here and it gets a lease (`first`, when `queuedNow` made that attempt); else it waits its turn.
   * Counted and observed once, with its last decision.
   */
  private async queued(
    t: Target,
    cost: number,
    opts: CheckOptions | undefined,
    ids: string[],
    first: Decision | undefined,
  ): Promise<Decision> {
    const { keeper, guard, plain, mode } = this.parts;
    const queue = t.cp.queue as NonNullable<CompiledPlan['queue']>;
    const attempt = async (): Promise<Decision> => {
      await guard.starting();
      return this.leased(t, cost, plain.now(), opts, 'quiet');
    };
    let d = first;
    let firstRetryMs = first?.retryAfterMs ?? 0;
    if (d === undefined && !keeper.queues.hasTurns(ids[0] as string)) {
      d = await attempt();
      if (!waitsOut(d, t.cp) || aborted(opts?.signal)) return this.account(d, t.cp, opts);
      firstRetryMs = d.retryAfterMs;
    }
    const now = this.atOnce(t, cost, ids, d, opts);
    if (now !== undefined) return now;
    keeper.countQueued(t.cp, 1);
    try {
      await keeper.queues.wait(ids, plain.now() + queue.timeoutMs, plain.now, opts?.signal, firstRetryMs, async () => {
        d = await attempt();
        return { done: !waitsOut(d, t.cp), retryMs: d.retryAfterMs };
      });
    } finally {
      keeper.countQueued(t.cp, -1);
    }
    if (d !== undefined) return this.account(d, t.cp, opts);
    // Never at the head: a client that went away, or a limiter that closed, is refused without a lease; a timeout tries once more.
    const left = aborted(opts?.signal) || keeper.queues.isClosed;
    return this.account(left ? leftQueue(t.cp, t.key, cost, mode) : await attempt(), t.cp, opts);
  }

  /** Counts and observes a decision made quietly (`queued`); degraded answers counted themselves. */
  private account(d: Decision, cp: CompiledPlan, opts: CheckOptions | undefined): Decision {
    if (!d.degraded) this.parts.counters.decision(d, cp);
    // A queued request's decision time is not at hand here (its last attempt made it): the observer's clock.
    return this.parts.observer.observe(d, opts, this.parts.observer.now());
  }
}

/**
 * The queues of the policies at `at` for a request of `t` (a queued request is in the queue of each of
 * its queuing policies; a release wakes the queue of each concurrency policy): the policy's state and its
 * key, so requests of one tenant wait in one queue whatever their other keys (`{ user, tenant }`), and
 * plans that share the policy share the queue.
 */
function queueIds(t: Target, at: readonly number[]): string[] {
  return at.map((i) => `${(t.cp.all[i] as CompiledPolicy).id}\n${typeof t.storeKey === 'string' ? t.storeKey : (t.storeKey[i] as string)}`);
}

/** The queuing policies of `cp` (indexes in `all`) whose queue, of `ids` in `queueAts` order, holds its `queue.size` waiters. */
function fullQueues(keeper: LeaseKeeper, ids: readonly string[], cp: CompiledPlan): number[] {
  return cp.queueAts.filter((at, j) => keeper.queues.waiting(ids[j] as string) >= ((cp.all[at] as CompiledPolicy).queue?.size ?? 0));
}
