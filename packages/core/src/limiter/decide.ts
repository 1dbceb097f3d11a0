/**
 * @module The decision path of plans without concurrency policies (leases/leased-decisions.ts adds
 * theirs): target, clock, breaker, one store call, the Decision, the observer. A check the store cannot
 * answer (its node's breaker is open, the call threw, failed or was too slow) is answered by the
 * failure mode (failure/fallback.ts) and reported as a `store-error` event.
 *
 * The inlining budget: V8 inlines the most frequent calls first and charges each inlined callee's whole
 * bytecode, rare branches included, to the caller's budget (920 bytes on Node 20). Spent on anything
 * else, it leaves the store's `apply` and its kernel out of line. So `decideAt` keeps rare branches (a
 * named plan, a given cost, an unhealthy node, a new key) in callees, and the observer runs in
 * `decideNow`. Check a change with `node --trace-turbo-inlining` (bench/README.md, section O).
 */
import type { DecisionImpl } from '../decision.js';
import type { Remembering } from '../failure/answer-memory.js';
import type { Fallback, Owed } from '../failure/fallback.js';
import { SureCharges } from '../failure/restore/sure-charges.js';
import type { CallFailure, StoreGuard } from '../failure/store-guard.js';
import { isResultOf } from '../failure/store-result-error.js';
import { isPromiseLike } from '../internal/promise.js';
import { catchRejection } from '../internal/rejection.js';
import type { DecisionObserver } from '../observability/decision-observer.js';
import type { StoreTimer } from '../observability/store-timer.js';
import type { CompiledPlan } from '../plans/compiled-plan.js';
import { F_ALLOWED, R_FLAGS, RESULT_STRIDE, type StoreResult } from '../stores/store.js';
import type { CheckOptions, Clock, Decision } from '../types.js';
import { type DecisionBuilder, marksOf } from './build-decision.js';
import { OwedCarry } from './carry-owed.js';
import type { Counters } from './counters.js';
import type { LimiterEventHub } from './events.js';
import type { LimiterKey } from './limiter.js';
import { costOf, type Target, type Targets } from './target.js';

/** The parts a decision path is assembled from (create-limiter.ts builds them once). */
export interface DecisionParts {
  readonly targets: Targets;
  readonly builder: DecisionBuilder;
  readonly guard: StoreGuard;
  /** The store, timed while an exporter is attached. */
  readonly store: StoreTimer;
  readonly observer: DecisionObserver;
  /** The failure mode of each plan. */
  readonly fallbacks: ReadonlyMap<CompiledPlan, Fallback>;
  readonly counters: Counters;
  readonly events: LimiterEventHub;
  /** The limiter's clock, checked. */
  readonly now: Clock;
  /** The limiter's default cost, in milli-units. */
  readonly defaultCost: number;
  /** `'local'` counts a degraded answer as a request of its own (its fallback limiter builds it). */
  readonly countsDegraded: boolean;
}

export class Decider {
  private readonly targets: Targets;
  private readonly builder: DecisionBuilder;
  readonly guard: StoreGuard;
  private readonly store: StoreTimer;
  private readonly observer: DecisionObserver;
  private readonly fallbacks: ReadonlyMap<CompiledPlan, Fallback>;
  private readonly counters: Counters;
  private readonly events: LimiterEventHub;
  readonly now: Clock;
  private readonly defaultCost: number;
  private readonly countsDegraded: boolean;
  /** Some plan's failure mode continues keys from the store's last answers (failure/answer-memory.ts). */
  private readonly remembers: boolean;
  /** Charges the store what the failure mode admitted while it could not be asked. */
  private readonly carrier: OwedCarry;
  /** Charges a budget depends on, sent until they land (the carry's, and a restore's: failure/restore/budget-restore.ts). */
  readonly sure: SureCharges;

  constructor(parts: DecisionParts) {
    this.targets = parts.targets;
    this.builder = parts.builder;
    this.guard = parts.guard;
    this.store = parts.store;
    this.observer = parts.observer;
    this.fallbacks = parts.fallbacks;
    this.counters = parts.counters;
    this.events = parts.events;
    this.now = parts.now;
    this.defaultCost = parts.defaultCost;
    this.countsDegraded = parts.countsDegraded;
    this.remembers = [...parts.fallbacks.values()].some((f) => f.remembers);
    this.sure = new SureCharges(this.guard, this.store, this.now);
    this.carrier = new OwedCarry(this.guard, this.store, this.sure, this.now, (t, cost, r, at, full) =>
      this.giveBack(t, cost, r, at, full),
    );
  }

  /** Stops what runs in the background: the failure modes' timers and the charges sent until they land. */
  close(): void {
    this.sure.close();
    for (const f of this.fallbacks.values()) f.close();
  }

  /** `limiter.decide`: the Decision itself when the store answers synchronously, else a promise of it. */
  readonly decide = (rawKey: LimiterKey, opts?: CheckOptions): Decision | Promise<Decision> => {
    const t = this.targets.of(rawKey, opts);
    const cost = costOf(opts, this.defaultCost);
    const starting = this.guard.starting();
    if (starting !== undefined) return starting.then(() => this.decideNow(t, cost, opts));
    return this.decideNow(t, cost, opts);
  };

  /** Decides the string key `key` at the default cost at `at`, observed (solo.ts, when the store's node is failing). */
  decideStringAt(key: string, at: number): Decision | Promise<Decision> {
    const t = this.targets.of(key, undefined);
    const d = this.decideAt(t, this.defaultCost, at, undefined);
    return isPromiseLike(d) ? d : this.observer.observe(d, undefined, at);
  }

  /** The failure mode's answer, observed, for a check of `key` whose store call numbered `seq` threw `error` (solo.ts). */
  threw(key: string, cost: number, at: number, seq: number, error: unknown): Decision {
    const t = this.targets.of(key, undefined);
    this.store.threw();
    const d = this.failed(t, cost, at, this.guard.failure(this.guard.nodeOf(key), seq, error, false));
    return this.observer.observe(d, undefined, at);
  }

  /** Decides `t` now, observed (metrics, diagnostics channel, hot keys, shadow record). */
  decideNow(t: Target, cost: number, opts: CheckOptions | undefined): Decision | Promise<Decision> {
    const at = this.now();
    const d = this.decideAt(t, cost, at, opts);
    return isPromiseLike(d) ? d : this.observer.observe(d, opts, at);
  }

  /**
   * Decides `t` at `at`. A decision made at once (a synchronous store, a call skipped by the breaker or
   * failed) comes back unobserved: `decideNow` passes it to the observer. On an asynchronous store the
   * decision is built and observed in the step that settles the store's call (StoreGuard.watch).
   */
  private decideAt(t: Target, cost: number, at: number, opts: CheckOptions | undefined): Decision | Promise<Decision> {
    const guard = this.guard;
    const node = guard.nodeOfKey(t.storeKey);
    if (!guard.allow(node, at)) return this.unreached(t, cost, at, node);
    const seq = guard.next();
    let r: StoreResult | Promise<StoreResult>;
    try {
      r = this.store.apply(t.storeKey, t.cp.storePlan, cost, at);
    } catch (error) {
      this.store.threw();
      return this.failed(t, cost, at, guard.failure(node, seq, error, false));
    }
    if (isPromiseLike(r)) {
      let answered: Decision | undefined;
      // What the failure mode's answer owed the store for this request (its entry), if it admitted it.
      let owedBy: Owed | undefined;
      return guard.watch(
        node,
        seq,
        r,
        (o) => {
          if (!isResultOf(o, t.cp.storePlan)) return this.observer.observe(this.junk(t, cost, at, node, seq, o), opts, at);
          const d = this.answer(t, cost, o, at);
          return isPromiseLike(d)
            ? d.then((x) => this.observer.observe(this.called(x, at), opts, at))
            : this.observer.observe(this.called(d, at), opts, at);
        },
        (f) => {
          answered = this.failed(t, cost, at, f);
          if (this.remembers && answered.allowed && !answered.limited) owedBy = (this.fallbacks.get(t.cp) as Fallback).owedFor(t.key);
          return this.observer.observe(answered, opts, at);
        },
        (late) => {
          // The store ran it after all: a refusal's charge goes back, weighed against what the key owes it
          // from an outage (carry-owed.ts `ranLate`; without a memory of answers it owes nothing).
          if (answered !== undefined && (answered.allowed === false || answered.limited === false))
            this.carrier.ranLate(t, this.fallbacks.get(t.cp) as Fallback, owedBy, answered.allowed, cost, late, at);
        },
      );
    }
    guard.answered(node);
    if (!isResultOf(r, t.cp.storePlan)) return this.junk(t, cost, at, node, seq, r);
    // A synchronous answer of a store that can fail (RedisStore's `localBatch`) is remembered as an
    // asynchronous one is: an outage continues the key from it, not from the last round trip's.
    const d = this.answer(t, cost, r, at);
    return isPromiseLike(d) ? d.then((x) => this.observer.observe(x, opts, at)) : d;
  }

  /**
   * The Decision for the store's answer `r`, remembered by the failure mode (when it remembers). An answer
   * sent before the carry of what the failure mode admitted for the key (the call that ended the outage)
   * did not count those admissions: where they leave a policy no room for it, it is refused, and its charge
   * goes back from the policies that had room (the carry charges them all it owes).
   */
  private answer(t: Target, cost: number, r: StoreResult, at: number): Decision | Promise<Decision> {
    if (!this.remembers) return this.built(t, cost, r, at);
    const f = this.fallbacks.get(t.cp) as Fallback;
    const held = this.remember(t, r, at, cost);
    if (held === true) return this.refusedFor(t, cost, r, at, f.againstRecord(t.key, r, cost, at));
    // The question on whether the store lost the key is out: the answer waits for its verdict (held
    // checks wait as long, StoreGuard.holdFor). Lost: decided by what the key had; else taken as it is.
    if (held !== false) return held.then((lost) => this.judged(t, cost, r, at, f, lost));
    return this.refusedFor(t, cost, r, at, f.overdrawn(t.key, r, cost, at));
  }

  /** `answer` once the verdict on whether the store lost `t`'s key is in: by the key's record, or `r` remembered and taken. */
  private judged(t: Target, cost: number, r: StoreResult, at: number, f: Fallback, lost: boolean): Decision {
    if (lost) return this.refusedFor(t, cost, r, at, f.againstRecord(t.key, r, cost, at));
    f.accept(t.key, r, at, t.storeKey);
    return this.built(t, cost, r, at);
  }

  /**
   * The Decision for the store's answer `r`, or for `over`, `r` as a refusal by the policies without room
   * (Fallback.overdrawn, Fallback.againstRecord): `r`'s charge then goes back from the policies that had
   * room (a carry, or the restore, charges them what it owes).
   */
  private refusedFor(t: Target, cost: number, r: StoreResult, at: number, over: StoreResult | undefined): Decision {
    if (over === undefined || over === r) return this.built(t, cost, r, at);
    const room: boolean[] = [];
    for (let i = 0; i < t.cp.enforcedCount; i++) room.push(((over[i * RESULT_STRIDE + R_FLAGS] as number) & F_ALLOWED) !== 0);
    // Admitted by the record (`over` only says what it has left): the charge stays.
    if (room.some(Boolean) && !room.every(Boolean)) this.giveBack(t, cost, r, at, room);
    return this.built(t, cost, over, at);
  }

  /** The failure mode's answer, unobserved, for the call numbered `seq` whose answer `r` is not a result (store-result-error.ts). */
  private junk(t: Target, cost: number, at: number, node: string, seq: number, r: unknown): Decision {
    return this.failed(t, cost, at, this.guard.junk(node, seq, r, t.cp.storePlan));
  }

  /**
   * The store charged a request after the failure mode refused it (its reply came too late: a slow
   * Redis, a Cluster decision waiting on a silent master): a refusal charges nothing, so the charge goes
   * back, best effort. (A request the failure mode admitted keeps it: it did run.)
   */
  giveBack(t: Target, cost: number, r: StoreResult, at: number, full?: readonly boolean[]): void {
    const marks = marksOf(t.cp, r, at);
    // Only from the policies `full` marks (carry-owed.ts `afterCarry`): the others keep it.
    if (full !== undefined) for (let i = 0, n = t.cp.all.length; i < full.length; i++) if (!full[i]) marks[i] = marks[n + i] = Number.NaN;
    if (marks.every((m) => Number.isNaN(m))) return;
    // Best effort: a refund that throws or rejects leaves the charge to end with its state, as any charge does.
    try {
      catchRejection(this.guard.aside(t.storeKey, this.store.refund(t.storeKey, t.cp.storePlan, cost, marks, this.now())), () => undefined);
    } catch {}
  }

  /** `d` waited for a store call: counted for `hotKeys().busy` (only with hot keys on). */
  private called(d: Decision, at: number): Decision {
    this.observer.storeCalled(d, at);
    return d;
  }

  /** The Decision for the store's answer `r`, counted and labelled. */
  built(t: Target, cost: number, r: StoreResult, at: number): Decision {
    const d: DecisionImpl = this.builder.build(t.key, cost, r, t.cp, t.cp.all, false, 'count');
    return this.builder.label(d, t, cost, r, at);
  }

  /**
   * Hands the store's answer to the plan's failure mode, which continues the key from it in an outage;
   * what the failure mode admitted for the key meanwhile is charged to the store now (carry-owed.ts).
   * See `Remembering` for what comes back (false in the common case).
   */
  remember(t: Target, r: StoreResult, at: number, cost = 0): Remembering {
    if (!this.remembers) return false;
    const f = this.fallbacks.get(t.cp) as Fallback;
    if (!f.remembers) return false;
    const held = f.remember(t.key, r, at, t.storeKey, cost);
    const owed = f.takeOwed(t.key, at);
    if (owed !== undefined) this.carrier.carry(t, f, owed);
    return held;
  }

  /** `remember` for what the store holds in process while its node fails: nothing is carried to it. */
  private rememberHeld(t: Target, r: StoreResult, at: number): void {
    if (!this.remembers) return;
    const f = this.fallbacks.get(t.cp) as Fallback;
    if (f.remembers) f.remember(t.key, r, at, t.storeKey);
  }

  /**
   * A store node's breaker closed (it answers again): every key's owed admissions are charged now, before
   * the checks that follow reach it, not with each key's next answer, when the checks in flight with it
   * would have been admitted first (a probe, four processes of 16 concurrent loops: 1,222 over a limit of
   * 5,000 that way). Only the keys `node` serves: the others wait for their own node.
   */
  carryAllOwed(node: string): void {
    if (!this.remembers) return;
    const at = this.now();
    const guard = this.guard;
    const carrying: Promise<void>[] = [];
    for (const [cp, f] of this.fallbacks) {
      const owed = f.takeAllOwed(at, (o) => guard.nodeOfKey(o.storeKey) === node);
      for (const o of owed) carrying.push(this.carrier.carry({ cp, storeKey: o.storeKey, key: o.key }, f, o));
    }
    // The checks that follow wait for the carries, so that one refused for want of room charges what is
    // left before they take it (StoreGuard.holdFor's bound).
    if (carrying.length > 0) guard.holdFor(Promise.all(carrying));
  }

  /** The breaker keeps the store from being called: what it holds in process answers (Store.held), else the failure mode. */
  private unreached(t: Target, cost: number, at: number, node: string): Decision {
    const held = this.store.held(t.storeKey, t.cp.storePlan, cost, at);
    if (held === undefined) return this.skipped(t, cost, at, node);
    this.rememberHeld(t, held, at);
    return this.built(t, cost, held, at);
  }

  /** The failure mode's answer for a check that skips the store (its node's breaker is open). */
  skipped(t: Target, cost: number, at: number, node: string, lease?: number): Decision {
    this.counters.storeErrors += 1;
    const d = (this.fallbacks.get(t.cp) as Fallback).answer(t.key, cost, at, this.guard.retryMs(node, at), t.storeKey, lease);
    if (!this.countsDegraded) this.counters.requests += 1;
    (d as DecisionImpl).plan = t.cp.name;
    return d;
  }

  /** The failure mode's answer for a check the store failed on. */
  failed(t: Target, cost: number, at: number, failure: CallFailure, lease?: number): Decision {
    if (failure.scope === 'key') this.guard.logKeyFailure(t.key, failure);
    this.events.emit('store-error', { error: failure.error, key: t.key, scope: failure.scope, node: failure.node });
    return this.skipped(t, cost, at, failure.node, lease);
  }
}
