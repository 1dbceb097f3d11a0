/**
 * @module Replays a stream through one limiter per algorithm, all with the same `limit` and `windowMs`,
 * in virtual time, and measures what a team choosing an algorithm needs to know.
 */
import { createLimiter, type Decision, MemoryStore, type PolicyOptions } from '@tollgate/core';
import type { Phase } from './stream.js';

export interface Candidate {
  readonly label: string;
  readonly policy: PolicyOptions;
}

/** Every algorithm (fixed-window with both anchors) at `limit` per `windowMs`, defaults otherwise. */
export function candidates(limit: number, windowMs: number): Candidate[] {
  return [
    { label: 'fixed-window', policy: { algorithm: 'fixed-window', limit, windowMs } },
    { label: 'fixed-window (anchored)', policy: { algorithm: 'fixed-window', limit, windowMs, anchor: 'first-request' } },
    { label: 'sliding-window', policy: { algorithm: 'sliding-window', limit, windowMs } },
    { label: 'sliding-log', policy: { algorithm: 'sliding-log', limit, windowMs } },
    { label: 'token-bucket', policy: { algorithm: 'token-bucket', limit, windowMs } },
    { label: 'gcra', policy: { algorithm: 'gcra', limit, windowMs } },
    { label: 'leaky-bucket', policy: { algorithm: 'leaky-bucket', limit, windowMs } },
  ];
}

/** One request's fate. */
export interface Outcome {
  readonly at: number;
  readonly allowed: boolean;
  readonly retryAfterMs: number;
  readonly delayMs: number;
}

export interface Report {
  readonly label: string;
  /** Per phase, per request, in stream order. */
  readonly outcomes: readonly (readonly Outcome[])[];
  readonly passed: number;
  readonly passedByPhase: readonly number[];
  /** Most requests reaching the backend (after any delay) in any rolling window `(t - windowMs, t]`. */
  readonly mostInWindow: number;
  readonly longestRetryAfterMs: number;
  readonly longestDelayMs: number;
}

/** Most of `times` (sorted or not) inside any `(t - windowMs, t]`. */
export function mostInRollingWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let from = 0;
  for (let to = 0; to < sorted.length; to++) {
    while ((sorted[from] as number) <= (sorted[to] as number) - windowMs) from += 1;
    most = Math.max(most, to - from + 1);
  }
  return most;
}

export function replayStream(candidate: Candidate, phases: readonly Phase[], windowMs: number): Report {
  let now = 0;
  const limiter = createLimiter({ policies: candidate.policy, store: new MemoryStore({ sweepIntervalMs: 0 }), clock: () => now });
  const outcomes = phases.map((phase) =>
    phase.arrivals.map((at): Outcome => {
      now = at;
      const d = limiter.decide('client', { cost: 1 }) as Decision;
      return { at, allowed: d.allowed, retryAfterMs: d.retryAfterMs, delayMs: d.delayMs };
    }),
  );
  const all = outcomes.flat();
  const admitted = all.filter((o) => o.allowed);
  return {
    label: candidate.label,
    outcomes,
    passed: admitted.length,
    passedByPhase: outcomes.map((os) => os.filter((o) => o.allowed).length),
    mostInWindow: mostInRollingWindow(
      admitted.map((o) => o.at + o.delayMs),
      windowMs,
    ),
    longestRetryAfterMs: Math.max(0, ...all.map((o) => o.retryAfterMs)),
    longestDelayMs: Math.max(0, ...all.map((o) => o.delayMs)),
  };
}

export function compareAlgorithms(phases: readonly Phase[], limit: number, windowMs: number): Report[] {
  return candidates(limit, windowMs).map((c) => replayStream(c, phases, windowMs));
}
