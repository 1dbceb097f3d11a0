/**
 * @module Test support (not exported by the package): fast-check arbitraries for policies and request
 * traces. Windows include awkward lengths (1 ms, 7 ms, 999 ms) so fractional emission intervals and
 * boundaries get exercised; gaps are often 0 (bursts), often about one emission interval, sometimes long.
 */
import fc from 'fast-check';
import type { PolicyOptions } from '../types.js';
import type { TraceStep } from './replay.js';
import { type AlgorithmVariant, hasBurst, variantPolicy } from './variants.js';

/** Random numbers for `variant`, as a policy. */
export function policyArb(variant: AlgorithmVariant): fc.Arbitrary<PolicyOptions> {
  const bucket = hasBurst(variant.algorithm);
  return fc
    .record({
      limit: fc.integer({ min: 1, max: 12 }),
      windowMs: fc.oneof(fc.constantFrom(1, 7, 100, 999, 1000, 1500, 60_000), fc.integer({ min: 1, max: 5000 })),
      burst: bucket ? fc.option(fc.integer({ min: 1, max: 25 }), { nil: undefined }) : fc.constant(undefined),
      delayAfter:
        variant.algorithm === 'leaky-bucket' ? fc.option(fc.integer({ min: 0, max: 8 }), { nil: undefined }) : fc.constant(undefined),
    })
    .map((n) => variantPolicy(variant, n));
}

/** The largest cost `policy` can ever admit. */
export function capacityOf(policy: PolicyOptions): number {
  return policy.burst ?? policy.limit;
}

export interface TraceShape {
  /** Times never decrease (default) or wander back and forth. */
  readonly monotone?: boolean;
  /** Costs of 1 only (default), or any multiple of 1/1000 up to the capacity (sometimes above). */
  readonly weighted?: boolean;
  readonly maxLength?: number;
  /** Keys drawn from `k0 .. k{keys - 1}`; default one key. */
  readonly keys?: number;
}

/** A trace of requests for `policy`, times starting at 0. */
export function traceArb(policy: PolicyOptions, shape: TraceShape = {}): fc.Arbitrary<TraceStep[]> {
  const { monotone = true, weighted = false, maxLength = 30, keys = 1 } = shape;
  const w = policy.windowMs;
  const interval = Math.max(1, Math.ceil(w / policy.limit));
  const gap = fc.oneof(
    { arbitrary: fc.constant(0), weight: 3 },
    { arbitrary: fc.integer({ min: 0, max: 2 * interval }), weight: 3 },
    { arbitrary: fc.integer({ min: 0, max: 2 * w }), weight: 1 },
  );
  const move = monotone ? gap : fc.oneof({ arbitrary: gap, weight: 3 }, { arbitrary: gap.map((g) => -g), weight: 1 });
  const cap = capacityOf(policy);
  const cost = weighted
    ? fc.oneof(
        { arbitrary: fc.constant(1), weight: 2 },
        { arbitrary: fc.integer({ min: 1, max: cap * 1000 }).map((m) => m / 1000), weight: 3 },
        { arbitrary: fc.integer({ min: 1, max: cap }), weight: 1 },
        { arbitrary: fc.integer({ min: cap * 1000 + 1, max: cap * 1000 + 2000 }).map((m) => m / 1000), weight: 1 },
      )
    : fc.constant(1);
  const key = keys > 1 ? fc.integer({ min: 0, max: keys - 1 }).map((i) => `k${i}`) : fc.constant(undefined);
  return fc.array(fc.record({ move, cost, key }), { minLength: 1, maxLength }).map((steps) => {
    let at = 0;
    return steps.map((s, i): TraceStep => {
      if (i > 0) at += s.move;
      return s.key === undefined ? { at, cost: s.cost } : { at, cost: s.cost, key: s.key };
    });
  });
}

/** A policy for `variant` together with a trace for it. */
export function policyAndTraceArb(variant: AlgorithmVariant, shape: TraceShape = {}) {
  return policyArb(variant).chain((policy) => traceArb(policy, shape).map((trace) => ({ policy, trace })));
}
