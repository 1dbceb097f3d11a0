/**
 * @module Decisions: turns a store's per-policy numbers into `PolicyResult`s, picks the binding policy
 * of each group and builds the `Decision`. Plain classes with fixed fields, so V8 keeps one shape.
 */

import type { CompiledPolicy } from './algorithms/kernel.js';
import { fromMilli, MILLI } from './internal/fixed-point.js';
import { type CompiledPlan, Receipt } from './plans/compiled-plan.js';
import {
  F_ALLOWED,
  F_CHARGED,
  F_EXCEEDS,
  R_DELAY,
  R_FLAGS,
  R_REMAINING,
  R_RESET,
  R_RETRY_AFTER,
  RESULT_STRIDE,
  type StoreResult,
} from './stores/store.js';
import type { ChargeReceipt, Decision, DecisionReason, PolicyAlgorithm, PolicyResult, ShadowVerdict } from './types.js';

export class Result implements PolicyResult {
  constructor(
    readonly name: string,
    readonly algorithm: PolicyAlgorithm,
    readonly allowed: boolean,
    readonly shadow: boolean,
    readonly limit: number,
    readonly windowMs: number,
    readonly capacity: number,
    readonly remaining: number,
    readonly retryAfterMs: number,
    readonly resetMs: number,
    readonly delayMs: number,
    readonly reason: 'cost-exceeds-capacity' | undefined,
  ) {}
}

/** Who issues a plan's receipts: the limiter (its token) and the plan, for the receipts DecisionImpl builds on first read. */
export class ReceiptSource {
  constructor(
    readonly issuer: object,
    readonly plan: CompiledPlan,
  ) {}

  /**
   * The receipt of a charge of `cost` units of the plan's one policy under `key`, marked `mark` at
   * `position` (Store.refund), made after `seq` resets (limiter/reset-log.ts).
   */
  receipt(key: string, cost: number, mark: number, position: number, seq: number): Receipt {
    return new Receipt(this.issuer, this.plan, key, cost, Math.round(cost * MILLI), [mark, position], seq);
  }
}

export class DecisionImpl implements Decision {
  /**
   * The per-policy results, or, for a decision of a single policy, that policy: its one result is then
   * built on first read (most callers never read it) from the decision's own numbers.
   */
  #source: readonly PolicyResult[] | CompiledPolicy;
  /** Set by the limiter after construction (plans/compiled-plan.ts). */
  plan = 'default';
  #receipt: ChargeReceipt | undefined = undefined;
  /**
   * A charge of a single policy under a string key, whose receipt is built on first read (`receipt`):
   * most callers never read it. Its plan and issuer, then the policy's mark and position (Store.refund).
   */
  #charged: ReceiptSource | undefined = undefined;
  #mark = 0;
  #position = 0;
  #seq = 0;
  /** For a decision over several keys (`{ ip, user }`), the binding policy's own key: `keyed`. */
  #bindingKey: string | undefined = undefined;
  /** Set by the limiter on an admitted decision of a plan with concurrency policies (its leases). */
  release: (() => void) | undefined = undefined;
  renew: (() => boolean) | undefined = undefined;

  constructor(
    readonly allowed: boolean,
    readonly limited: boolean,
    readonly reason: DecisionReason,
    readonly mode: 'enforce' | 'shadow',
    readonly key: string,
    readonly cost: number,
    readonly policy: string,
    readonly remaining: number,
    readonly retryAfterMs: number,
    readonly resetMs: number,
    readonly delayMs: number,
    source: readonly PolicyResult[] | CompiledPolicy,
    readonly shadow: ShadowVerdict | undefined,
    readonly degraded: boolean,
  ) {
    this.#source = source;
  }

  /** What `limiter.refund()` takes to give the charge back; undefined when nothing was charged. */
  get receipt(): ChargeReceipt | undefined {
    if (this.#receipt === undefined && this.#charged !== undefined) this.#receipt = this.#build(this.#charged);
    return this.#receipt;
  }

  set receipt(receipt: ChargeReceipt | undefined) {
    this.#receipt = receipt;
    this.#charged = undefined;
  }

  /**
   * Marks the decision as a charge of one policy under the string key `key` (the decision's own), at
   * `mark` and `position` (NaN: not refundable), made after `seq` resets, whose receipt is built on first read.
   */
  charge(source: ReceiptSource, mark: number, position: number, seq: number): void {
    this.#charged = source;
    this.#mark = mark;
    this.#position = position;
    this.#seq = seq;
  }

  /** A decision over the keys `keys`, one per policy of `all` (Target.storeKey): remembers the binding policy's. */
  keyed(keys: readonly string[], all: readonly { readonly name: string }[]): void {
    const i = all.findIndex((p) => p.name === this.policy);
    this.#bindingKey = i < 0 ? undefined : keys[i];
  }

  /**
   * The key the binding policy counts `d` under: for a decision over several keys, that policy's own
   * (hot keys name the key that is over its limit, not the combination, which changes with every
   * other key); else `d.key`.
   */
  static bindingKeyOf(d: Decision): string {
    return d instanceof DecisionImpl && d.#bindingKey !== undefined ? d.#bindingKey : d.key;
  }

  #build(source: ReceiptSource): Receipt {
    return source.receipt(this.key, this.cost, this.#mark, this.#position, this.#seq);
  }

  /** One result per enforced policy, in configured order. */
  get policies(): readonly PolicyResult[] {
    const source = this.#source;
    if (Array.isArray(source)) return source;
    const results = [policyResult(source as CompiledPolicy, this)];
    this.#source = results;
    return results;
  }

  /** Plain data, `policies` included, for logs and JSON bodies. */
  toJSON(): Decision {
    return decisionData(this);
  }
}

/** The one result of a decision of a single policy `p`, from the decision's own numbers. */
export function policyResult(p: CompiledPolicy, d: Decision): Result {
  // A single policy is its own group: it admitted exactly when the request was charged.
  return new Result(
    p.name,
    p.algorithm,
    !d.limited,
    p.shadow,
    p.limit,
    p.windowMs,
    p.capacity,
    d.remaining,
    d.retryAfterMs,
    d.resetMs,
    d.delayMs,
    d.reason === 'cost-exceeds-capacity' ? 'cost-exceeds-capacity' : undefined,
  );
}

/** A decision as plain data, `policies` and `receipt` included (every Decision class's `toJSON`). */
export function decisionData(d: Decision): Decision {
  return {
    allowed: d.allowed,
    limited: d.limited,
    reason: d.reason,
    mode: d.mode,
    key: d.key,
    cost: d.cost,
    policy: d.policy,
    remaining: d.remaining,
    retryAfterMs: d.retryAfterMs,
    resetMs: d.resetMs,
    delayMs: d.delayMs,
    policies: d.policies,
    shadow: d.shadow,
    degraded: d.degraded,
    plan: d.plan,
    receipt: d.receipt,
  };
}

export class Verdict implements ShadowVerdict {
  /** A check of a key per policy: its store keys, and where the candidates' begin (keyOf). */
  #keys: readonly string[] | undefined = undefined;
  #first = 0;

  constructor(
    readonly allowed: boolean,
    readonly reason: DecisionReason,
    readonly policy: string,
    readonly remaining: number,
    readonly retryAfterMs: number,
    readonly policies: readonly PolicyResult[],
  ) {}

  /** The check gave a key per policy, `keys`, the candidates' from index `first` on. */
  keyed(keys: readonly string[], first: number): void {
    this.#keys = keys;
    this.#first = first;
  }

  /**
   * The key candidate `i` counted under: its store key when the check gave a key per policy (its own, or
   * the enforced keys joined for a candidate the object names none for), else `key`, the decision's.
   */
  keyOf(i: number, key: string): string {
    return this.#keys?.[this.#first + i] ?? key;
  }
}

/** The results of one group (enforced or shadow) and what they add up to. */
export class Group {
  results: PolicyResult[] = [];
  /** Every policy admitted and was charged. */
  charged = false;
  reason: DecisionReason = 'allowed';
  /** The binding result: on rejection the longest wait, else the least remaining. */
  binding: PolicyResult | undefined;
  retryAfterMs = 0;
  delayMs = 0;
}

function resultAt(r: StoreResult, p: CompiledPolicy, o: number): Result {
  const flags = r[o + R_FLAGS] as number;
  return new Result(
    p.name,
    p.algorithm,
    (flags & F_ALLOWED) !== 0,
    p.shadow,
    p.limit,
    p.windowMs,
    p.capacity,
    fromMilli(r[o + R_REMAINING] as number),
    // An admitted policy waits for nothing (a charged one's slot holds its position: store.ts R_POSITION).
    (flags & F_ALLOWED) !== 0 ? 0 : (r[o + R_RETRY_AFTER] as number),
    r[o + R_RESET] as number,
    r[o + R_DELAY] as number,
    (flags & F_EXCEEDS) !== 0 ? 'cost-exceeds-capacity' : undefined,
  );
}

/** Whether `a` has less left than `b` (on a tie, the later reset): the headline of an admitted decision, and of a peek. */
export function leavesLess(a: PolicyResult, b: PolicyResult): boolean {
  return a.remaining < b.remaining || (a.remaining === b.remaining && a.resetMs > b.resetMs);
}

/** Reads `policies[from..to)` out of a store result into `g`. */
export function readGroup(g: Group, r: StoreResult, policies: readonly CompiledPolicy[], from: number, to: number): Group {
  const results: PolicyResult[] = new Array(to - from);
  let charged = true;
  let exceeds: PolicyResult | undefined;
  let binding: PolicyResult | undefined;
  let worstRetry = -1;
  let delayMs = 0;
  for (let i = from; i < to; i++) {
    const o = i * RESULT_STRIDE;
    const flags = r[o + R_FLAGS] as number;
    const res = resultAt(r, policies[i] as CompiledPolicy, o);
    results[i - from] = res;
    if ((flags & F_CHARGED) === 0) charged = false;
    if (res.reason !== undefined && exceeds === undefined) exceeds = res;
    if (!res.allowed) {
      if (res.retryAfterMs > worstRetry) {
        worstRetry = res.retryAfterMs;
        binding = res;
      }
    } else if (worstRetry < 0 && (binding === undefined || leavesLess(res, binding))) {
      binding = res;
    }
    if (res.delayMs > delayMs) delayMs = res.delayMs;
  }
  g.results = results;
  g.charged = charged;
  g.binding = exceeds ?? binding;
  g.reason = exceeds !== undefined ? 'cost-exceeds-capacity' : charged ? 'allowed' : 'limited';
  g.retryAfterMs = exceeds !== undefined || charged ? 0 : worstRetry;
  g.delayMs = charged ? delayMs : 0;
  return g;
}

/** Cost in policy units from milli-units. */
export function costUnits(milli: number): number {
  return milli / MILLI;
}
