/**
 * @module The numbers every header format shares: how a policy's state becomes whole seconds and whole
 * units, and the writer contract the formats implement.
 */
import type { LimiterKey } from '../../limiter/limiter.js';
import type { Decision, PolicyResult } from '../../types.js';

/** One response header: name and value. */
export type HeaderPair = readonly [name: string, value: string];

export interface HeaderWriter {
  /**
   * Appends the headers describing `decision` to `into`. `exhausted` (a 429) lists only the policies
   * that rejected the request, with their waits; otherwise every enforced policy with its state.
   * `clock` is the limiter's, read only by formats that send a point in time (legacy's epoch reset).
   * `target` is what the decision was made for: with a key per policy, each policy's partition key
   * (draft-11 `pk`) is of that policy's own key; undefined or a string, of `decision.key`.
   */
  write(decision: Decision, exhausted: boolean, clock: () => number, into: HeaderPair[], target?: LimiterKey): void;
}

/** `w`: the window in whole seconds, rounded up, at least 1 (draft-11 §3.1.3 forbids 0). */
export function windowSeconds(windowMs: number): number {
  return Math.max(1, Math.ceil(windowMs / 1000));
}

/** `r`: what the policy has left, rounded down to whole units. */
export function remainingUnits(result: PolicyResult): number {
  return Math.floor(result.remaining);
}

/**
 * `t` and every "reset" of the older formats, in whole seconds rounded up. For a policy that rejected
 * the request: its wait (at least 1), so `t` never exceeds `Retry-After`. Otherwise: how long until
 * the policy is back to its full quota if the client sends nothing more (for fixed-window, the end of
 * the window).
 */
export function resetSeconds(result: PolicyResult, exhausted: boolean): number {
  return exhausted ? Math.max(1, Math.ceil(result.retryAfterMs / 1000)) : Math.ceil(result.resetMs / 1000);
}

/** A policy that rejected this request (as opposed to one whose cost can never fit). */
export function isExhausted(result: PolicyResult): boolean {
  return !result.allowed && result.reason === undefined;
}
