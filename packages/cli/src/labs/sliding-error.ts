/**
 * @module Lab D's measure: the sliding-window estimate judged request by request against the exact
 * sliding log on the same history. Two limiters run side by side diverge after their first
 * disagreement (each then decides on what it alone admitted), so counting their differing verdicts
 * mixes the estimate's error with the consequences of earlier errors. Here both decide on one history,
 * the requests the exact log admitted, and every verdict of the estimate is right or wrong.
 *
 * The estimate is the core's sliding-window rule (algorithms/sliding-window.ts) in the same integer
 * arithmetic: clock-aligned windows of `W`, `e` ms into the current one, a request admitted when
 * `prev x (W - e) + (curr + 1) x W <= limit x W`. labs.test.ts proves it decides as the library does.
 */
import type { Arrival } from './trace.js';

export interface SlidingError {
  readonly requests: number;
  /** Admitted by the exact sliding log (on the history followed). */
  readonly exactAdmitted: number;
  /** The estimate admits, the exact log rejects. */
  readonly wronglyAdmitted: number;
  /** The estimate rejects, the exact log admits. */
  readonly wronglyRejected: number;
  /** Estimated count minus the exact count in the rolling window, per request: mean of its size, and the largest size. */
  readonly countError: { readonly mean: number; readonly worst: number };
  /** Wrong verdicts of one client within one clock window: mean over the client-windows with requests, and the worst. */
  readonly perClientWindow: { readonly mean: number; readonly worst: number };
}

/** The count of `times` (sorted) in [from, to). */
function countIn(times: readonly number[], from: number, to: number): number {
  const lower = (x: number): number => {
    let lo = 0;
    let hi = times.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((times[mid] as number) < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return lower(to) - lower(from);
}

/** The estimate's verdict at `now` on the admitted `times` of one client (sorted, all at or before `now`). */
export function estimateAdmits(times: readonly number[], now: number, limit: number, windowMs: number): boolean {
  const start = Math.floor(now / windowMs) * windowMs;
  const prev = countIn(times, start - windowMs, start);
  const curr = countIn(times, start, now + 1);
  return prev * (windowMs - (now - start)) + (curr + 1) * windowMs <= limit * windowMs;
}

/**
 * Decides every arrival (sorted by time) by the exact log and by the estimate, both on one history: the
 * requests `follow` admitted (`exact`: the log's, `estimate`: what the estimate admits in production).
 */
export function compareOnHistory(
  arrivals: readonly Arrival[],
  limit: number,
  windowMs: number,
  follow: 'exact' | 'estimate',
): SlidingError {
  const admitted = new Map<string, number[]>();
  const wrongPer = new Map<string, number>();
  let exactAdmitted = 0;
  let wronglyAdmitted = 0;
  let wronglyRejected = 0;
  let errorSum = 0;
  let errorWorst = 0;
  for (const a of arrivals) {
    const key = a.key ?? 'client';
    let times = admitted.get(key);
    if (times === undefined) {
      times = [];
      admitted.set(key, times);
    }
    const now = a.at;
    // Exact: admitted requests in (now - W, now].
    const exactCount = countIn(times, now - windowMs + 1, now + 1);
    const exact = exactCount < limit;
    const estimate = estimateAdmits(times, now, limit, windowMs);
    const start = Math.floor(now / windowMs) * windowMs;
    const estimated = (countIn(times, start - windowMs, start) * (windowMs - (now - start))) / windowMs + countIn(times, start, now + 1);
    const error = Math.abs(estimated - exactCount);
    errorSum += error;
    if (error > errorWorst) errorWorst = error;
    const cell = `${key} ${start}`;
    const wrong = wrongPer.get(cell) ?? 0;
    if (estimate && !exact) wronglyAdmitted++;
    if (!estimate && exact) wronglyRejected++;
    wrongPer.set(cell, wrong + (estimate !== exact ? 1 : 0));
    if (exact) exactAdmitted++;
    if (follow === 'exact' ? exact : estimate) times.push(now);
  }
  let worstCell = 0;
  let sumCells = 0;
  for (const w of wrongPer.values()) {
    sumCells += w;
    if (w > worstCell) worstCell = w;
  }
  return {
    requests: arrivals.length,
    exactAdmitted,
    wronglyAdmitted,
    wronglyRejected,
    countError: { mean: arrivals.length === 0 ? 0 : errorSum / arrivals.length, worst: errorWorst },
    perClientWindow: { mean: wrongPer.size === 0 ? 0 : sumCells / wrongPer.size, worst: worstCell },
  };
}
