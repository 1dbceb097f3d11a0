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

/** Slices of the log's time: counts and busiest seconds per (candidate, verdict) row, doubling in width past `maxPoints`. */
function createSlices(n: number, maxPoints: number) {
  const state = { startMs: 0, bucketMs: 1000, points: 0 };
  /** Per candidate two rows (admitted, rejected) of `maxPoints` slices; `points` in use. */
  const counts = new Float64Array(n * 2 * maxPoints);
  /** The same rows, each slice's busiest second. */
  const peaks = new Float64Array(n * 2 * maxPoints);
  /** The slice of the last request, [from, to): most requests fall in the one before them. */
  let last = 0;
  let from = 0;
  let to = Number.NEGATIVE_INFINITY;

  /** Halves the resolution: slices pair up from `startMs`, so edges stay at `startMs + k * bucketMs`. */
  function coarsen(): void {
    const half = Math.ceil(state.points / 2);
    for (let r = 0; r < 2 * n; r++) {
      const o = r * maxPoints;
      for (let i = 0; i < half; i++) {
        const pair = 2 * i + 1 < state.points;
        counts[o + i] = (counts[o + 2 * i] as number) + (pair ? (counts[o + 2 * i + 1] as number) : 0);
        peaks[o + i] = Math.max(peaks[o + 2 * i] as number, pair ? (peaks[o + 2 * i + 1] as number) : 0);
      }
      counts.fill(0, o + half, o + maxPoints);
      peaks.fill(0, o + half, o + maxPoints);
    }
    state.points = half;
    state.bucketMs *= 2;
    to = Number.NEGATIVE_INFINITY;
  }

  /** The slice index of `at` (before the start: the first), after coarsening as needed. */
  function indexOf(at: number): number {
    if (at >= from && at < to) return last;
    let i = Math.floor((Math.max(at, state.startMs) - state.startMs) / state.bucketMs);
    while (i >= maxPoints) {
      coarsen();
      i = Math.floor((Math.max(at, state.startMs) - state.startMs) / state.bucketMs);
    }
    if (i >= state.points) state.points = i + 1;
    last = i;
    from = at < state.startMs ? Number.NEGATIVE_INFINITY : state.startMs + i * state.bucketMs;
    to = state.startMs + (i + 1) * state.bucketMs;
    return i;
  }

  return {
    state,
    counts,
    peaks,
    indexOf,
    /** The slice holding second `second` (epoch s), without moving the cache. */
    sliceOfSecond: (second: number) => Math.floor((Math.max(second * 1000, state.startMs) - state.startMs) / state.bucketMs),
    /** Row `r` of `rows` over the slices in use. */
    row: (rows: Float64Array, r: number) => Array.from(rows.subarray(r * maxPoints, r * maxPoints + state.points)),
  };
}

export function createTimeline(n: number, maxPoints: number, keepMinutes: number): Timeline {
  let started = false;
  const slices = createSlices(n, maxPoints);
  let minute = Number.NEGATIVE_INFINITY;
  let minuteRequests = 0;
  let minuteDetail = new Float64Array(60 * 2 * n);
  let second = Number.NEGATIVE_INFINITY;
  const busiest: Minute[] = [];
  /** Where `count` writes: the slice, and the second's offset in `minuteDetail` (-1: a second already past). */
  let b = 0;
  let d0 = -1;

  /** Folds the second being read into its slice's peaks (`into`: the live rows, or a copy for a snapshot). */
  function foldSecond(into: Float64Array): void {
    if (second === Number.NEGATIVE_INFINITY) return;
    const slice = slices.sliceOfSecond(second);
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
    foldSecond(slices.peaks);
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

  return {
    place(at) {
      if (!started) {
        started = true;
        slices.state.startMs = Math.floor(at / 1000) * 1000;
      }
      const inOrder = toSecond(at);
      b = slices.indexOf(at);
      if (inOrder) minuteRequests += 1;
      d0 = inOrder ? (second - minute * 60) * 2 * n : -1;
    },
    count(i, allowed) {
      const r = 2 * i + (allowed ? 0 : 1);
      const at = r * maxPoints + b;
      slices.counts[at] = (slices.counts[at] as number) + 1;
      if (d0 >= 0) minuteDetail[d0 + r] = (minuteDetail[d0 + r] as number) + 1;
    },
    snapshot() {
      const peaksNow = slices.peaks.slice();
      foldSecond(peaksNow);
      const minutes = busiest.slice();
      foldMinute(minutes);
      return {
        startMs: slices.state.startMs,
        bucketMs: slices.state.bucketMs,
        series: (i) => ({
          admitted: slices.row(slices.counts, 2 * i),
          rejected: slices.row(slices.counts, 2 * i + 1),
          peakAdmitted: slices.row(peaksNow, 2 * i),
          peakRejected: slices.row(peaksNow, 2 * i + 1),
        }),
        busiestMinutes: minutes.sort((x, y) => x.startMs - y.startMs).map((m) => busyMinute(m, n)),
      };
    },
  };
}

function busyMinute(m: Minute, n: number): BusyMinute {
  return {
    startMs: m.startMs,
    requests: m.requests,
    candidates: Array.from({ length: n }, (_, i) => ({
      admitted: Array.from({ length: 60 }, (_, sec) => m.detail[sec * 2 * n + 2 * i] as number),
      rejected: Array.from({ length: 60 }, (_, sec) => m.detail[sec * 2 * n + 2 * i + 1] as number),
    })),
  };
}
