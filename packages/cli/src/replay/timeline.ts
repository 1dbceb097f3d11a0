/**
 * @module The replay's time series, in bounded memory however long the log: admitted and rejected per
 * candidate per slice, from the first request's second; slices start at 1 s and double (pairing up)
 * when there would be more than `maxPoints`. An average over a long slice flattens a burst, so each
 * slice also keeps its busiest second, and the `keepMinutes` minutes with the most requests are kept
 * second by second (chosen as the log streams by: a minute is judged when the next one starts).
 * Requests of a second already past (replayed late) are in the slice counts only.
 */
import type { BusyMinute, CandidateReport } from './replay-report.js';

export interface Timeline {
  /** Moves to the request at `at` (epoch ms); `count` then records each candidate's verdict on it. */
  place(at: number): void;
  count(candidate: number, allowed: boolean): void;
  /** The figures so far (the second and minute being read included, without closing them). */
  snapshot(): {
    readonly startMs: number;
    readonly bucketMs: number;
    series(candidate: number): CandidateReport['series'];
    readonly busiestMinutes: BusyMinute[];
  };
}

interface Minute {
  readonly startMs: number;
  readonly requests: number;
  /** [second][row], row = 2 x candidate + (rejected ? 1 : 0). */
  readonly detail: Float64Array;
}

export function createTimeline(n: number, maxPoints: number, keepMinutes: number): Timeline {
  let started = false;
  let startMs = 0;
  let bucketMs = 1000;
  /** Per candidate two rows (admitted, rejected) of `maxPoints` slices; `points` in use. */
  const series = new Float64Array(n * 2 * maxPoints);
  /** The same rows, each slice's busiest second. */
  const peaks = new Float64Array(n * 2 * maxPoints);
  let points = 0;
  let minute = Number.NEGATIVE_INFINITY;
  let minuteRequests = 0;
  let minuteDetail = new Float64Array(60 * 2 * n);
  let second = Number.NEGATIVE_INFINITY;
  const busiest: Minute[] = [];
  /** The slice of the last request, [bucketFrom, bucketTo): most requests fall in the one before them. */
  let bucketIndex = 0;
  let bucketFrom = 0;
  let bucketTo = Number.NEGATIVE_INFINITY;
  /** Where `count` writes: the slice, and the second's offset in `minuteDetail` (-1: a second already past). */
  let b = 0;
  let d0 = -1;

  /** Halves the resolution: slices pair up from `startMs`, so edges stay at `startMs + k * bucketMs`. */
  function coarsen(): void {
    const half = Math.ceil(points / 2);
    for (let r = 0; r < 2 * n; r++) {
      const o = r * maxPoints;
      for (let i = 0; i < half; i++) {
        const pair = 2 * i + 1 < points;
        series[o + i] = (series[o + 2 * i] as number) + (pair ? (series[o + 2 * i + 1] as number) : 0);
        peaks[o + i] = Math.max(peaks[o + 2 * i] as number, pair ? (peaks[o + 2 * i + 1] as number) : 0);
      }
      series.fill(0, o + half, o + maxPoints);
      peaks.fill(0, o + half, o + maxPoints);
    }
    points = half;
    bucketMs *= 2;
    bucketTo = Number.NEGATIVE_INFINITY;
  }

  function bucketOf(at: number): number {
    let i = Math.floor((Math.max(at, startMs) - startMs) / bucketMs);
    while (i >= maxPoints) {
      coarsen();
      i = Math.floor((Math.max(at, startMs) - startMs) / bucketMs);
    }
    if (i >= points) points = i + 1;
    bucketIndex = i;
    bucketFrom = at < startMs ? Number.NEGATIVE_INFINITY : startMs + i * bucketMs;
    bucketTo = startMs + (i + 1) * bucketMs;
    return i;
  }

  /** Folds the second being read into its slice's peaks (`into`: the live rows, or a copy for a snapshot). */
  function foldSecond(into: Float64Array): void {
    if (second === Number.NEGATIVE_INFINITY) return;
    const slice = Math.floor((Math.max(second * 1000, startMs) - startMs) / bucketMs);
    const o = (second - minute * 60) * 2 * n;
    for (let r = 0; r < 2 * n; r++) {
      const v = minuteDetail[o + r] as number;
      const at = r * maxPoints + slice;
      if (v > (into[at] as number)) into[at] = v;
    }
  }

  /** Where the minute being read goes among the busiest (`into`: the live list, or a copy). */
  function foldMinute(into: Minute[]): void {
    if (minute === Number.NEGATIVE_INFINITY || keepMinutes === 0) return;
    const entry: Minute = { startMs: minute * 60_000, requests: minuteRequests, detail: minuteDetail };
    if (into.length < keepMinutes) {
      into.push(entry);
      return;
    }
    let low = 0;
    for (let k = 1; k < into.length; k++) if ((into[k] as Minute).requests < (into[low] as Minute).requests) low = k;
    if (minuteRequests > (into[low] as Minute).requests) into[low] = entry;
  }

  /** Moves the per-second bookkeeping to the second (and minute) of `at`; false for a second already past. */
  function toSecond(at: number): boolean {
    const s = Math.floor(at / 1000);
    if (s === second) return true;
    if (s < second) return false;
    foldSecond(peaks);
    const m = Math.floor(s / 60);
    if (m !== minute) {
      foldMinute(busiest);
      minute = m;
      minuteRequests = 0;
      minuteDetail = new Float64Array(60 * 2 * n);
    }
    second = s;
    return true;
  }

  /** Row `r` of `rows` (2i admitted, 2i + 1 rejected of candidate i), over the slices in use. */
  function row(rows: Float64Array, r: number): number[] {
    return Array.from(rows.subarray(r * maxPoints, r * maxPoints + points));
  }

  return {
    place(at) {
      if (!started) {
        started = true;
        startMs = Math.floor(at / 1000) * 1000;
      }
      const inOrder = toSecond(at);
      b = at >= bucketFrom && at < bucketTo ? bucketIndex : bucketOf(at);
      if (inOrder) minuteRequests += 1;
      d0 = inOrder ? (second - minute * 60) * 2 * n : -1;
    },
    count(i, allowed) {
      const r = 2 * i + (allowed ? 0 : 1);
      const at = r * maxPoints + b;
      series[at] = (series[at] as number) + 1;
      if (d0 >= 0) minuteDetail[d0 + r] = (minuteDetail[d0 + r] as number) + 1;
    },
    snapshot() {
      const peaksNow = peaks.slice();
      foldSecond(peaksNow);
      const minutes = busiest.slice();
      foldMinute(minutes);
      return {
        startMs,
        bucketMs,
        series: (i) => ({
          admitted: row(series, 2 * i),
          rejected: row(series, 2 * i + 1),
          peakAdmitted: row(peaksNow, 2 * i),
          peakRejected: row(peaksNow, 2 * i + 1),
        }),
        busiestMinutes: minutes
          .sort((x, y) => x.startMs - y.startMs)
          .map((m) => ({
            startMs: m.startMs,
            requests: m.requests,
            candidates: Array.from({ length: n }, (_, i) => ({
              admitted: Array.from({ length: 60 }, (_, sec) => m.detail[sec * 2 * n + 2 * i] as number),
              rejected: Array.from({ length: 60 }, (_, sec) => m.detail[sec * 2 * n + 2 * i + 1] as number),
            })),
          })),
      };
    },
  };
}
