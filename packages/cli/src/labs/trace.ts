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

/**
 * The most admitted verdicts in any rolling window of `width` ms, `(t - width, t]` (what a sliding log
 * allows at most `limit` of), and where the first such window ends: [count, end ms].
 */
export function rollingMax(verdicts: readonly Verdict[], width: number): [number, number] {
  const times = verdicts.filter((v) => v.allowed).map((v) => v.at);
  let best = 0;
  let end = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while ((times[j] as number) <= (times[i] as number) - width) j++;
    if (i - j + 1 > best) {
      best = i - j + 1;
      end = times[i] as number;
    }
  }
  return [best, end];
}

export const ALGORITHMS = ['fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'gcra', 'leaky-bucket'] as const;
