/**
 * @module The Decision of the solo path (solo.ts): one policy, a string key, the store's own answer. What
 * every decision of that path shares (mode, cost, policy, plan, the receipt's issuer) lives once in a
 * `SoloShape`; a decision holds only its own numbers, so it is half the size of a `DecisionImpl` and
 * costs one allocation. It reads the same as the `DecisionImpl` the general path would build (the same
 * fields, `toJSON` and receipt); the fields it shares are getters on its prototype.
 */
import type { CompiledPolicy } from '../algorithms/kernel.js';
import { costUnits, decisionData, policyResult, type ReceiptSource } from '../decision.js';
import type { ChargeReceipt, Decision, DecisionReason, PolicyResult } from '../types.js';

/** What the decisions of one solo path, one plan and one cost have in common. */
export class SoloShape {
  constructor(
    readonly mode: 'enforce' | 'shadow',
    /** Milli-units, as the store is charged. */
    readonly milli: number,
    readonly policy: CompiledPolicy,
    readonly source: ReceiptSource,
  ) {
    this.cost = costUnits(milli);
  }

  /** Units, as `Decision.cost`. */
  readonly cost: number;
}

export class SoloDecision implements Decision {
  readonly #shape: SoloShape;
  readonly #exceeds: boolean;
  /** The charge's mark and position (Store.refund); NaN when nothing can be given back. */
  readonly #mark: number;
  readonly #position: number;
  /** The limiter's resets before the charge (limiter/reset-log.ts). */
  readonly #seq: number;
  #receipt: ChargeReceipt | undefined = undefined;
  #policies: readonly PolicyResult[] | undefined = undefined;
  readonly allowed: boolean;

  constructor(
    shape: SoloShape,
    readonly key: string,
    readonly limited: boolean,
    exceeds: boolean,
    readonly remaining: number,
    readonly retryAfterMs: number,
    readonly resetMs: number,
    readonly delayMs: number,
    mark: number,
    position: number,
    seq: number,
  ) {
    this.#shape = shape;
    this.#exceeds = exceeds;
    this.#mark = mark;
    this.#position = position;
    this.#seq = seq;
    this.allowed = !limited || shape.mode === 'shadow';
  }

  get reason(): DecisionReason {
    return this.#exceeds ? 'cost-exceeds-capacity' : this.limited ? 'limited' : 'allowed';
  }

  get mode(): 'enforce' | 'shadow' {
    return this.#shape.mode;
  }

  get cost(): number {
    return this.#shape.cost;
  }

  get policy(): string {
    return this.#shape.policy.name;
  }

  get shadow(): undefined {
    return undefined;
  }

  get degraded(): boolean {
    return false;
  }

  get plan(): string {
    return this.#shape.source.plan.name;
  }

  /** A solo plan has no concurrency policy: nothing to release or renew. */
  get release(): undefined {
    return undefined;
  }

  get renew(): undefined {
    return undefined;
  }

  /** What `limiter.refund()` takes to give the charge back, built on first read; undefined when nothing was charged. */
  get receipt(): ChargeReceipt | undefined {
    if (this.#receipt === undefined && !this.limited) {
      this.#receipt = this.#shape.source.receipt(this.key, this.#shape.cost, this.#mark, this.#position, this.#seq);
    }
    return this.#receipt;
  }

  /** The one policy's result, built on first read. */
  get policies(): readonly PolicyResult[] {
    if (this.#policies === undefined) this.#policies = [policyResult(this.#shape.policy, this)];
    return this.#policies;
  }

  /** Plain data, `policies` included, for logs and JSON bodies. */
  toJSON(): Decision {
    return decisionData(this);
  }
}
