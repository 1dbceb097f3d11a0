/**
 * @module The failure mode's answers, when a check cannot be decided by the store (its node is down or
 * silent, or the key's state gave an error): `'local'` decides with an in-process MemoryStore holding
 * `localShare` of each limit (created on first use); `'open'` admits as if every policy had room;
 * `'closed'` refuses with `reason: 'store-error'`, which is not a quota verdict (adapters answer 503).
 * A cost above a policy's capacity stays `cost-exceeds-capacity` whatever the mode.
 */

import type { CompiledPolicy } from '../algorithms/kernel.js';
import { costUnits, DecisionImpl, Group, readGroup } from '../decision.js';
import type { LimiterConfig } from '../options.js';
import { MemoryStore } from '../stores/memory-store.js';
import {
  F_ALLOWED,
  F_CHARGED,
  F_EXCEEDS,
  R_FLAGS,
  R_REMAINING,
  R_RETRY_AFTER,
  RESULT_STRIDE,
  type StoreKey,
  type StorePlan,
  type StoreResult,
} from '../stores/store.js';
import type { Decision, DecisionReason, PolicyResult } from '../types.js';

/** Builds a decision from a store result over `policies` (the limiter's own `finish`). */
export type Finish = (key: string, cost: number, r: StoreResult, policies: readonly CompiledPolicy[], degraded: boolean) => Decision;

export class Fallback {
  private local: MemoryStore | undefined;
  private readonly localPlan: StorePlan;
  private readonly all: readonly CompiledPolicy[];
  private readonly group = new Group();
  private readonly synthetic: Float64Array;

  constructor(
    private readonly config: LimiterConfig,
    private readonly finish: Finish,
  ) {
    this.all = [...config.policies, ...config.shadowPolicies];
    this.localPlan = Object.freeze({ policies: config.localPolicies, enforcedCount: config.policies.length });
    this.synthetic = new Float64Array(this.all.length * RESULT_STRIDE);
  }

  /**
   * The failure mode's decision for a request of `cost` on `key` at `at`; `retryMs` is how long until
   * the store may be tried again (a hint for `'closed'`, at least one second).
   */
  answer(key: string, cost: number, at: number, retryMs: number, storeKey: StoreKey = key, lease?: number): Decision {
    const { onStoreError, mode } = this.config;
    if (onStoreError === 'local') {
      if (this.local === undefined) this.local = new MemoryStore();
      return this.finish(key, cost, this.local.apply(storeKey, this.localPlan, cost, at, lease), this.config.localPolicies, true);
    }
    const open = onStoreError === 'open';
    const retry = open ? 0 : Math.max(1000, retryMs);
    const all = this.all;
    const synthetic = this.synthetic;
    for (let i = 0; i < all.length; i++) {
      const p = all[i] as CompiledPolicy;
      const o = i * RESULT_STRIDE;
      // A lease is one slot whatever the cost.
      const exceeds = p.algorithm !== 'concurrency' && cost > p.capMilli;
      synthetic[o + R_FLAGS] = exceeds ? F_EXCEEDS : open ? F_ALLOWED | F_CHARGED : 0;
      synthetic[o + R_REMAINING] = open && !exceeds ? p.capMilli - cost : 0;
      synthetic[o + R_RETRY_AFTER] = exceeds ? 0 : retry;
    }
    const g = readGroup(this.group, synthetic, all, 0, this.config.policies.length);
    const b = g.binding as PolicyResult;
    const exceeded = g.reason === 'cost-exceeds-capacity';
    const reason: DecisionReason = exceeded ? 'cost-exceeds-capacity' : 'store-error';
    return new DecisionImpl(
      mode === 'shadow' || (open && !exceeded),
      exceeded,
      reason,
      mode,
      key,
      costUnits(cost),
      b.name,
      b.remaining,
      exceeded || open ? 0 : retry,
      0,
      0,
      g.results,
      undefined,
      true,
    );
  }

  /** `onStoreError: 'local'`: the in-process store and plan whose leases a degraded decision holds. */
  get leases(): { readonly store: MemoryStore; readonly plan: StorePlan } | undefined {
    return this.local === undefined ? undefined : { store: this.local, plan: this.localPlan };
  }

  reset(key: string): void {
    this.local?.reset(key, this.localPlan);
  }

  close(): void {
    this.local?.close();
  }
}
