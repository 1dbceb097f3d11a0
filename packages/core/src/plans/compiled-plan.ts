/**
 * @module Compiled plans and charge receipts. A plan is compiled once, at construction: its policies
 * (enforced, then the limiter's shadow policies) become one `StorePlan`, which a store prepares once (the
 * RedisStore generates its one Lua script). A receipt names one charge exactly (the plan, the keys, the
 * cost and, per policy, the mark of the state the charge went into), so `limiter.refund()` can give back
 * exactly that charge and nothing else.
 */

import type { CompiledPolicy } from '../algorithms/kernel.js';
import { codedError, describeValue } from '../errors.js';
import type { StoreKey, StorePlan } from '../stores/store.js';
import type { ChargeReceipt, PolicyDescription } from '../types.js';

/** One plan, ready for the store and the limiter. */
export interface CompiledPlan {
  readonly name: string;
  /** Enforced policies, then shadow policies. */
  readonly all: readonly CompiledPolicy[];
  readonly enforcedCount: number;
  readonly storePlan: StorePlan;
  /** `onStoreError: 'local'`: the scaled twins of `all`, and their plan. */
  readonly localPolicies: readonly CompiledPolicy[];
  readonly localPlan: StorePlan;
  /** Scratch for the failure mode's synthetic store result. */
  readonly synthetic: Float64Array;
  /** Rejections per policy of `all`, for `stats()`. */
  readonly rejected: Float64Array;
  /** Plan position by policy name, for keys given per policy. */
  readonly positions: ReadonlyMap<string, number>;
  readonly policies: readonly PolicyDescription[];
  readonly shadowPolicies: readonly PolicyDescription[];
  /** Some policy is a concurrency policy: an admitted request holds a lease (`decision.release`). */
  readonly leases: boolean;
  /** Per policy of `all`, 1 when `limiter.refund()` may give its charge back: a lease is given back by `release` instead. */
  readonly refundable: Uint8Array;
  /**
   * Concurrency policies with a `queue`: the shortest wait among them (leases/lease-queue.ts); undefined
   * when none may queue. Each bounds its own waiters per key (`queueAts`).
   */
  readonly queue: { readonly timeoutMs: number } | undefined;
  /**
   * The concurrency policies with a `queue` (their indexes in `all`), the smallest `limit` first (plan
   * order among equals): a waiting request is in the queue of each one's key, and waits its turn in the
   * first one's.
   */
  readonly queueAts: readonly number[];
  /** The concurrency policies (their indexes in `all`): a release wakes the queue of each one's key. */
  readonly leaseAts: readonly number[];
}

export function describePolicy(p: CompiledPolicy): PolicyDescription {
  return Object.freeze({
    name: p.name,
    algorithm: p.algorithm,
    limit: p.limit,
    windowMs: p.windowMs,
    capacity: p.capacity,
    unit: p.unit,
    shadow: p.shadow,
  });
}

export function compilePlan(
  name: string,
  enforced: readonly CompiledPolicy[],
  shadow: readonly CompiledPolicy[],
  local: readonly CompiledPolicy[],
): CompiledPlan {
  const all = [...enforced, ...shadow];
  const enforcedCount = enforced.length;
  // The queue a request waits its turn in comes first: the smallest limit's (per user, not per tenant),
  // so a request waits behind those its own key holds back, whatever the order the policies were listed in.
  const queueAts = enforced
    .flatMap((p, i) => (p.queue === undefined ? [] : [i]))
    .sort((a, b) => (enforced[a]?.limit ?? 0) - (enforced[b]?.limit ?? 0));
  const leaseAts = enforced.flatMap((p, i) => (p.algorithm === 'concurrency' ? [i] : []));
  const leases = leaseAts.length > 0;
  return Object.freeze({
    name,
    all,
    enforcedCount,
    storePlan: Object.freeze({ policies: all, enforcedCount }),
    localPolicies: local,
    localPlan: Object.freeze({ policies: local, enforcedCount }),
    synthetic: new Float64Array(all.length * 5),
    rejected: new Float64Array(all.length),
    positions: new Map(all.map((p, i) => [p.name, i])),
    policies: Object.freeze(enforced.map(describePolicy)),
    shadowPolicies: Object.freeze(shadow.map(describePolicy)),
    leases,
    refundable: Uint8Array.from(all, (p) => (leases && p.algorithm === 'concurrency' ? 0 : 1)),
    queue:
      queueAts.length === 0
        ? undefined
        : Object.freeze({ timeoutMs: Math.min(...queueAts.map((i) => enforced[i]?.queue?.timeoutMs ?? 0)) }),
    queueAts: Object.freeze(queueAts),
    leaseAts: Object.freeze(leaseAts),
  });
}

/**
 * The key of every policy of `plan` from `keys`, an object from policy name to key: the store key (one
 * per policy, in plan order) and the canonical text the Decision reports as its `key`. Every enforced
 * policy of the plan needs a key (`ERR_RL_MISSING_POLICY_KEY`); a shadow candidate without one counts
 * under the canonical text; names of other plans' policies are ignored.
 */
export function keysFor(
  plan: CompiledPlan,
  keys: Readonly<Record<string, string>>,
  normalize: (key: string) => string,
): { readonly storeKey: StoreKey; readonly text: string } {
  if (keys === null || typeof keys !== 'object' || Array.isArray(keys) || Object.keys(keys).length === 0) {
    throw codedError(
      TypeError,
      'ERR_RL_INVALID_KEY',
      `the key must be a string or a non-empty object of policy name -> key; received ${describeValue(keys)}`,
    );
  }
  const out: string[] = new Array(plan.all.length);
  const text: string[] = [];
  for (let i = 0; i < plan.all.length; i++) {
    const p = plan.all[i] as CompiledPolicy;
    const k = Object.hasOwn(keys, p.name) ? keys[p.name] : undefined;
    // A shadow candidate the object names no key for counts under the enforced keys together (the
    // decision's `key`), as a candidate of a one-key check counts under that key: adding one to a
    // limiter never makes its checks throw.
    if (k === undefined && i >= plan.enforcedCount) {
      out[i] = normalize(text.join('&'));
      continue;
    }
    if (k === undefined) {
      throw codedError(
        TypeError,
        'ERR_RL_MISSING_POLICY_KEY',
        `plan '${plan.name}' has a policy '${p.name}' but the keys object names no key for it (names given: ${Object.keys(keys).join(', ') || 'none'})`,
      );
    }
    out[i] = normalize(k);
    if (i < plan.enforcedCount) text.push(`${encodeURIComponent(p.name)}=${encodeURIComponent(out[i] as string)}`);
  }
  return { storeKey: out, text: text.join('&') };
}

/**
 * A receipt as the issuing limiter sees it. The state sits in private fields: a receipt cannot be forged
 * or edited, and one limiter never refunds another's charge.
 */
export class Receipt implements ChargeReceipt {
  readonly #issuer: object;
  readonly #plan: CompiledPlan;
  readonly #key: StoreKey;
  readonly #marks: readonly number[];
  /** The limiter's resets before the charge (limiter/reset-log.ts): a reset of its key since makes it stale. */
  readonly #seq: number;
  /** Milli-units not yet given back. */
  #left: number;

  constructor(
    issuer: object,
    plan: CompiledPlan,
    key: StoreKey,
    readonly cost: number,
    costMilli: number,
    marks: readonly number[],
    seq: number,
  ) {
    this.#issuer = issuer;
    this.#plan = plan;
    this.#key = key;
    this.#left = costMilli;
    this.#marks = marks;
    this.#seq = seq;
  }

  get plan(): string {
    return this.#plan.name;
  }

  /** The receipt's state for `issuer`, or undefined when another limiter issued it. */
  static open(value: unknown, issuer: object) {
    // `#issuer in`, not `instanceof`: an object made from the prototype (Object.create) has no private fields.
    if (typeof value !== 'object' || value === null || !(#issuer in value) || value.#issuer !== issuer) return undefined;
    return value;
  }

  get seq(): number {
    return this.#seq;
  }

  get compiled(): CompiledPlan {
    return this.#plan;
  }
  get key(): StoreKey {
    return this.#key;
  }
  get marks(): readonly number[] {
    return this.#marks;
  }
  get left(): number {
    return this.#left;
  }
  /** Marks `milli` as given back (before the store call: a failed refund is never sent twice). */
  spend(milli: number): void {
    this.#left -= milli;
  }

  toJSON(): ChargeReceipt {
    return { plan: this.plan, cost: this.cost };
  }
}

/** The answer to `limiter.refund()`. */
export interface RefundResult {
  /** True when at least one policy's state took the refund. */
  readonly refunded: boolean;
  /** Names of the policies whose state took it (the others had moved on: window rolled, bucket refilled). */
  readonly policies: readonly string[];
}
