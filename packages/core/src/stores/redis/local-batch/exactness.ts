/**
 * @module Which policies a batch can hold exactly, and until when a held unit may still be spent.
 *
 * A batch charges `n` units in Redis at store time `c`, with the algorithm's own kernel, as if `n`
 * requests came at `c`; this process then admits from it in memory. That is exact (the admissions
 * are a trace the policy admits, whatever other processes do) when each unit is spent while the
 * state it went into still stands:
 *
 * - **fixed-window**: within the window it was charged in (until the window's end). The window's
 *   count is what Redis counted, so no window ever admits more than its limit.
 * - **sliding-window**: within the window it was charged in. The estimate Redis checked at `c` counts
 *   every unit charged by then, and the previous window's weight only falls, so each admission at
 *   `t >= c` would have passed the check at `t` too.
 * - **token-bucket, gcra**: while the unit's slot lies ahead. Redis gives the batch the slots
 *   `[TAT - n*T, TAT)` (T: ms per unit, TAT: when the bucket would be full again); a unit admitted at
 *   `t` needs a slot at or after `t`, so with `h` units left the batch is spendable while
 *   `h * T <= TAT - t`: the held units of all processes then sit in disjoint future slots, the bucket in
 *   Redis plus everything held never passes the burst, and no refill is lost to the cap. Units whose
 *   slot has passed are dropped: that time has already flowed back into the bucket, they cost nothing.
 * - **sliding-log, leaky-bucket, concurrency**: not batched (the round trip, as without `localBatch`).
 *   A sliding-log entry charged at `c` leaves the window at `c + W`, before a request admitted later
 *   would have: another process could then admit in its place, over the limit. A leaky bucket's delay
 *   and a lease belong to one request each.
 *
 * Plans with shadow policies are not batched either: a shadow group is charged on its own, which one
 * batch cannot follow. The property test (test/integration/redis/local-batch.property.test.ts) checks
 * every window of random traces over several processes against these rules.
 */
import type { CompiledPolicy } from '../../../algorithms/kernel.js';
import type { StorePlan } from '../../store.js';

/** How a policy's batch goes stale. */
export const FIXED_WINDOW = 1;
export const SLIDING_WINDOW = 2;
export const BUCKET = 3;
export type BatchKind = typeof FIXED_WINDOW | typeof SLIDING_WINDOW | typeof BUCKET;

/** The batch kind of one policy, or undefined when its algorithm falls back to the round trip. */
export function batchKind(p: CompiledPolicy): BatchKind | undefined {
  switch (p.algorithm) {
    case 'fixed-window':
      return FIXED_WINDOW;
    case 'sliding-window':
      return SLIDING_WINDOW;
    case 'token-bucket':
    case 'gcra':
      return BUCKET;
    default:
      return undefined;
  }
}

/** The kinds of every policy of `plan`, or undefined when the plan is not batched (see the module comment). */
export function planKinds(plan: StorePlan): Uint8Array | undefined {
  if (plan.enforcedCount !== plan.policies.length || plan.policies.length === 0) return undefined;
  const kinds = new Uint8Array(plan.policies.length);
  for (let i = 0; i < kinds.length; i++) {
    const k = batchKind(plan.policies[i] as CompiledPolicy);
    if (k === undefined) return undefined;
    kinds[i] = k;
  }
  return kinds;
}

/** Milli-units a bucket policy refills per ms. */
export function milliPerMs(p: CompiledPolicy): number {
  return (1000 * p.limit) / p.windowMs;
}
