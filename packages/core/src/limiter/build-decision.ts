/**
 * @module Builds a Decision from a store result: the binding policy of the enforced group, the shadow
 * group's verdict, the counters, and for a charged decision the receipt `refund()` takes: for the
 * store's answers and `'local'`'s alike (Fallback's `finish`). Two kinds of decision are made without a
 * store result, elsewhere: the `'open'`/`'closed'` answers (Fallback.answer, failure/fallback.ts), counted
 * by Decider.skipped (limiter/decide.ts: `storeErrors`, and `requests` unless `'local'` built it here);
 * they refuse with `reason: 'store-error'`, no policy's rejection, so `limited` and the policies'
 * `rejected` stay as they were; and a waiter refused without asking the store (leftQueue,
 * leases/lease-keeper.ts), counted with the other queued decisions by Counters.decision
 * (leases/leased-decisions.ts).
 */
import type { CompiledPolicy } from '../algorithms/kernel.js';
import { costUnits, DecisionImpl, Group, ReceiptSource, readGroup, Verdict } from '../decision.js';
import { fromMilli } from '../internal/fixed-point.js';
import { type CompiledPlan, Receipt } from '../plans/compiled-plan.js';
import {
  F_ALLOWED,
  F_CHARGED,
  F_EXCEEDS,
  R_DELAY,
  R_FLAGS,
  R_POSITION,
  R_REMAINING,
  R_RESET,
  R_RETRY_AFTER,
  RESULT_STRIDE,
  resultNow,
  type StoreKey,
  type StoreResult,
} from '../stores/store.js';
import type { Decision, PolicyResult, ShadowVerdict } from '../types.js';
import type { Counters } from './counters.js';
import type { ResetLog } from './reset-log.js';
import { SoloDecision, SoloShape } from './solo-decision.js';
import type { Target } from './target.js';

/** Whether a built decision goes into the counters: a peek's does not. */
export type Counting = 'count' | 'uncounted';

export class DecisionBuilder {
  private readonly enforced = new Group();
  private readonly candidates = new Group();
  private readonly shadowMode: boolean;
  /** The receipt source of the plan decided last: a limiter usually decides one plan. */
  private lastSource: ReceiptSource | undefined = undefined;
  /** The solo path's shape (solo-decision.ts). */
  private soloShape: SoloShape | undefined = undefined;

  constructor(
    private readonly mode: 'enforce' | 'shadow',
    private readonly hasShadow: boolean,
    private readonly counters: Counters,
    /** Identifies this limiter's receipts. */
    readonly issuer: object,
    /** The keys `limiter.reset()` forgot: a receipt records how many resets came before its charge. */
    readonly resets: ResetLog,
  ) {
    this.shadowMode = mode === 'shadow';
  }

  /**
   * The decision for `r`, a result over `policies` (the plan's own, or the failure mode's local twins);
   * `degraded` marks answers of the failure mode.
   */
  build(
    key: string,
    cost: number,
    r: StoreResult,
    cp: CompiledPlan,
    policies: readonly CompiledPolicy[],
    degraded: boolean,
    counting: Counting,
  ): DecisionImpl {
    const count = counting === 'count';
    if (count) this.counters.requests += 1;
    if (policies.length === 1) return this.single(key, cost, r, cp, policies[0] as CompiledPolicy, degraded, count);
    const { enforced, candidates } = this;
    readGroup(enforced, r, policies, 0, cp.enforcedCount);
    const limited = !enforced.charged;
    if (count) this.countPolicies(r, cp, policies.length, limited);
    let shadow: ShadowVerdict | undefined;
    if (this.hasShadow) {
      readGroup(candidates, r, policies, cp.enforcedCount, policies.length);
      const b = candidates.binding as PolicyResult;
      shadow = new Verdict(candidates.charged, candidates.reason, b.name, b.remaining, candidates.retryAfterMs, candidates.results);
      if (count) this.counters.shadow(candidates.charged, limited);
    }
    const b = enforced.binding as PolicyResult;
    return new DecisionImpl(
      !limited || this.shadowMode,
      limited,
      enforced.reason,
      this.mode,
      key,
      costUnits(cost),
      b.name,
      b.remaining,
      enforced.retryAfterMs,
      b.resetMs,
      enforced.delayMs,
      enforced.results,
      shadow,
      degraded,
    );
  }

  private countPolicies(r: StoreResult, cp: CompiledPlan, n: number, limited: boolean): void {
    if (limited) this.counters.limited += 1;
    const rejected = cp.rejected;
    for (let i = 0; i < n; i++) {
      if (((r[i * RESULT_STRIDE + R_FLAGS] as number) & F_ALLOWED) === 0) rejected[i] = (rejected[i] as number) + 1;
    }
  }

  /** The common case, one enforced policy and no shadow: no loops, and `policies` built only if read. */
  private single(
    key: string,
    cost: number,
    r: StoreResult,
    cp: CompiledPlan,
    p: CompiledPolicy,
    degraded: boolean,
    count: boolean,
  ): DecisionImpl {
    const flags = r[R_FLAGS] as number;
    const limited = (flags & F_CHARGED) === 0;
    const exceeds = (flags & F_EXCEEDS) !== 0;
    if (limited && count) {
      this.counters.limited += 1;
      cp.rejected[0] = (cp.rejected[0] as number) + 1;
    }
    return new DecisionImpl(
      !limited || this.shadowMode,
      limited,
      exceeds ? 'cost-exceeds-capacity' : limited ? 'limited' : 'allowed',
      this.mode,
      key,
      costUnits(cost),
      p.name,
      fromMilli(r[R_REMAINING] as number),
      limited && !exceeds ? (r[R_RETRY_AFTER] as number) : 0,
      r[R_RESET] as number,
      limited ? 0 : (r[R_DELAY] as number),
      p,
      undefined,
      degraded,
    );
  }

  /** Labels a decision the store made with its plan and, when it charged, a receipt for `refund()`. */
  label(d: DecisionImpl, t: Target, cost: number, r: StoreResult, at: number): Decision {
    const cp = t.cp;
    d.plan = cp.name;
    // A candidate may count by a key of its own (shadow stats name the keys it would block by it).
    if (typeof t.storeKey !== 'string') {
      d.keyed(t.storeKey, cp.all);
      if (d.shadow !== undefined) (d.shadow as Verdict).keyed(t.storeKey, cp.enforcedCount);
    }
    // `=== false`, not `!`: a compare with the boolean, where `!` compiles to a full truthiness test.
    if (d.limited === false && d.degraded === false) {
      if (cp.all.length === 1 && typeof t.storeKey === 'string') this.charge(d, cp, r, at);
      else d.receipt = this.receipt(cp, t.storeKey, cost, r, at);
    }
    return d;
  }

  /** Counts `d`, a rejection of the solo path answered again (solo.ts), as `solo` counted it; returns it. */
  soloAgain(d: Decision, cp: CompiledPlan): Decision {
    this.counters.requests += 1;
    this.countSoloRejection(cp);
    return d;
  }

  /** A rejection of the solo path's one policy, in the limiter's counters and the plan's. */
  private countSoloRejection(cp: CompiledPlan): void {
    this.counters.limited += 1;
    cp.rejected[0] = (cp.rejected[0] as number) + 1;
  }

  /**
   * The decision of the solo path (solo.ts): a plan of one policy, a string key, the store's answer, counted.
   * The same numbers `build` then `label` give, in a `SoloDecision`.
   */
  solo(key: string, cost: number, r: StoreResult, cp: CompiledPlan, at: number): Decision {
    this.counters.requests += 1;
    let shape = this.soloShape;
    if (shape === undefined || shape.source.plan !== cp || shape.milli !== cost) shape = this.shapeFor(cp, cost);
    const flags = r[R_FLAGS] as number;
    const remaining = fromMilli(r[R_REMAINING] as number);
    if ((flags & F_CHARGED) === 0) {
      this.countSoloRejection(cp);
      const exceeds = (flags & F_EXCEEDS) !== 0;
      const retry = exceeds ? 0 : (r[R_RETRY_AFTER] as number);
      return new SoloDecision(shape, key, true, exceeds, remaining, retry, r[R_RESET] as number, 0, Number.NaN, Number.NaN, 0);
    }
    const reset = r[R_RESET] as number;
    if (cp.refundable[0] !== 1)
      return new SoloDecision(shape, key, false, false, remaining, 0, reset, r[R_DELAY] as number, Number.NaN, Number.NaN, 0);
    const storeNow = resultNow(r, 1, at);
    const position = r[R_POSITION] as number;
    return new SoloDecision(
      shape,
      key,
      false,
      false,
      remaining,
      0,
      reset,
      r[R_DELAY] as number,
      storeNow + reset,
      position,
      this.resets.seq,
    );
  }

  /** The solo path's shape for `cp` at `cost` milli-units, kept for the next decisions. */
  private shapeFor(cp: CompiledPlan, cost: number): SoloShape {
    const shape = new SoloShape(this.mode, cost, cp.all[0] as CompiledPolicy, this.sourceOf(cp));
    this.soloShape = shape;
    return shape;
  }

  /**
   * The receipt of a charge of one policy under a string key, built on first read (DecisionImpl.receipt):
   * most callers never read it, and two objects fewer per admitted check is a tenth of its cost.
   */
  private charge(d: DecisionImpl, cp: CompiledPlan, r: StoreResult, at: number): void {
    const charged = cp.refundable[0] === 1 && ((r[R_FLAGS] as number) & F_CHARGED) !== 0;
    const storeNow = resultNow(r, 1, at);
    const mark = charged ? storeNow + (r[R_RESET] as number) : Number.NaN;
    d.charge(this.sourceOf(cp), mark, charged ? (r[R_POSITION] as number) : Number.NaN, this.resets.seq);
  }

  private sourceOf(cp: CompiledPlan): ReceiptSource {
    const last = this.lastSource;
    if (last !== undefined && last.plan === cp) return last;
    const made = new ReceiptSource(this.issuer, cp);
    this.lastSource = made;
    return made;
  }

  private receipt(cp: CompiledPlan, storeKey: StoreKey, cost: number, r: StoreResult, at: number): Receipt {
    return new Receipt(this.issuer, cp, storeKey, costUnits(cost), cost, marksOf(cp, r, at), this.resets.seq);
  }
}

/**
 * What `Store.refund` takes to give back the charges of the store's answer `r` for plan `cp` decided at
 * `at`: per policy its mark, then per policy its position; NaN for a policy not charged (or whose
 * algorithm gives nothing back).
 */
export function marksOf(cp: CompiledPlan, r: StoreResult, at: number): number[] {
  const n = cp.all.length;
  const storeNow = resultNow(r, n, at);
  const marks: number[] = new Array(2 * n);
  const none = Number.NaN;
  for (let i = 0, o = 0; i < n; i++, o += RESULT_STRIDE) {
    const charged = cp.refundable[i] === 1 && ((r[o + R_FLAGS] as number) & F_CHARGED) !== 0;
    marks[i] = charged ? storeNow + (r[o + R_RESET] as number) : none;
    marks[n + i] = charged ? (r[o + R_POSITION] as number) : none;
  }
  return marks;
}
