/**
 * @module Test support (not exported by the package): every algorithm once, and fixed-window with both
 * anchors, so contract tests run on each variant a user can configure.
 */
import type { AlgorithmId, PolicyOptions } from '../types.js';

export interface AlgorithmVariant {
  readonly label: string;
  readonly algorithm: AlgorithmId;
  readonly anchor?: 'clock' | 'first-request';
}

export const ALGORITHM_VARIANTS: readonly AlgorithmVariant[] = [
  { label: 'fixed-window (clock)', algorithm: 'fixed-window' },
  { label: 'fixed-window (first-request)', algorithm: 'fixed-window', anchor: 'first-request' },
  { label: 'sliding-log', algorithm: 'sliding-log' },
  { label: 'sliding-window', algorithm: 'sliding-window' },
  { label: 'token-bucket', algorithm: 'token-bucket' },
  { label: 'gcra', algorithm: 'gcra' },
  { label: 'leaky-bucket', algorithm: 'leaky-bucket' },
];

/** The variant as a policy with the given numbers. */
export function variantPolicy(
  v: AlgorithmVariant,
  numbers: Pick<PolicyOptions, 'limit' | 'windowMs' | 'burst' | 'delayAfter'>,
): PolicyOptions {
  return {
    algorithm: v.algorithm,
    limit: numbers.limit,
    windowMs: numbers.windowMs,
    ...(v.anchor === undefined ? {} : { anchor: v.anchor }),
    ...(numbers.burst === undefined ? {} : { burst: numbers.burst }),
    ...(numbers.delayAfter === undefined ? {} : { delayAfter: numbers.delayAfter }),
  };
}

/** Whether the algorithm takes a `burst` (the bucket family). */
export function hasBurst(algorithm: AlgorithmId): boolean {
  return algorithm === 'token-bucket' || algorithm === 'gcra' || algorithm === 'leaky-bucket';
}
