/**
 * @module Runs generated traffic through a real limiter on a virtual clock: the labs' one way to decide,
 * so their numbers are the library's numbers.
 */
import { createLimiter, type Decision, MemoryStore, type PolicyOptions } from '@tollgate/core';

export interface Arrival {
  readonly at: number;
  readonly key?: string;
}

export interface Verdict {
  readonly at: number;
  readonly key: string;
  readonly allowed: boolean;
  readonly delayMs: number;
}

/** Decides every arrival (in order) with a fresh limiter of `policy`. */
export function runTrace(policy: PolicyOptions, arrivals: readonly Arrival[]): Verdict[] {
  let now = 0;
  const limiter = createLimiter({ policies: policy, store: new MemoryStore({ sweepIntervalMs: 0 }), clock: () => now });
  return arrivals.map((a) => {
    now = a.at;
    const key = a.key ?? 'client';
    const d = limiter.decide(key) as Decision;
    return { at: a.at, key, allowed: d.allowed, delayMs: d.delayMs };
  });
}

/** Admitted verdicts with `from <= at < to`. */
export function admittedBetween(verdicts: readonly Verdict[], from: number, to: number): number {
  let n = 0;
  for (const v of verdicts) if (v.allowed && v.at >= from && v.at < to) n++;
  return n;
}

/** Admitted per `width` ms from `from` to `to`, as [start in s, count] points. */
export function admittedPer(verdicts: readonly Verdict[], from: number, to: number, width: number): [number, number][] {
  const points: [number, number][] = [];
  for (let t = from; t < to; t += width) points.push([t / 1000, admittedBetween(verdicts, t, t + width)]);
  return points;
}

export const ALGORITHMS = ['fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'gcra', 'leaky-bucket'] as const;
