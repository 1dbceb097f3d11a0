/**
 * @module The replay engine: every candidate is a real limiter (createLimiter on its own MemoryStore)
 * whose clock is the log's time, so a replay decides exactly as production would, with the store's
 * bounded memory and eviction. Requests go through every candidate in one pass; the engine keeps
 * per-candidate counters, per-client counters (bounded), reject streaks, shaped delays and a time
 * series whose resolution halves when it grows too long, so memory stays flat however long the log.
 * Averages over long slices flatten bursts, so each slice also keeps its busiest second, and the
 * busiest minutes of the log are kept second by second (a few, chosen as the log streams by).
 */
import type { Logger, PolicyOptions } from '@tollgate/core';
import { ownString } from '../input/own-string.js';
import { type CandidateLimiter, createCandidateLimiter } from './candidate-limiter.js';
import type { BusyMinute, CandidateReport, ClientRow, ReplayReport, StreakBucket } from './replay-report.js';

export interface Candidate {
  readonly label: string;
  readonly policies: readonly PolicyOptions[];
}

export interface ReplayOptions {
  /** Most limiter state entries per candidate (MemoryStore `maxKeys`). Defaults to 1,000,000. */
  readonly maxKeys?: number;
  /** Most clients tracked for per-client figures. Defaults to `maxKeys`. */
  readonly maxClients?: number;
  /** Rows in the top-clients lists. Defaults to 10. */
  readonly top?: number;
  /** Most points of the time series; resolution starts at 1 s and doubles past this. Defaults to 1200. */
  readonly maxPoints?: number;
  /** How many of the busiest minutes (most requests) are kept second by second. Defaults to 6. */
  readonly busiestMinutes?: number;
  readonly logger?: Logger;
}

export interface ReplayInputSummary {
  readonly files: ReplayReport['input']['files'];
  readonly lines: number;
  readonly malformed: number;
  readonly malformedSamples: ReplayReport['input']['malformedSamples'];
  readonly order?: ReplayReport['input']['order'];
}

export interface ReplayEngine {
  /** Decides one request at `at` (epoch ms) for `key` with `cost` in every candidate. Throws on a key or cost the core refuses. */
  push(at: number, key: string, cost: number): void;
  readonly candidates: readonly Candidate[];
  /** The figures so far. */
  report(input?: ReplayInputSummary): ReplayReport;
}

const SILENT: Logger = { warn() {}, error() {} };
/** Per client: [requests, then per candidate: rejected, current streak, longest streak, disagreements]. */
const C_REJECTED = 0;
const C_STREAK = 1;
const C_LONGEST = 2;
const C_DISAGREE = 3;
const PER_CANDIDATE = 4;
const STREAK_BUCKETS = 32;

function streakBucket(length: number): number {
  return 31 - Math.clz32(length);
}

/** Nearest-rank percentile of a histogram of integer values. */
function percentile(sorted: readonly [number, number][], total: number, p: number): number {
  const rank = Math.max(1, Math.ceil(p * total));
  let seen = 0;
  for (const [value, count] of sorted) {
    seen += count;
    if (seen >= rank) return value;
  }
  return sorted.length === 0 ? 0 : (sorted[sorted.length - 1] as [number, number])[0];
}

/** Per client its own copy of the key (see own-string.ts) and its counters. */
interface Client {
  readonly key: string;
  readonly c: Int32Array;
}

export function createReplayEngine(candidates: readonly Candidate[], options: ReplayOptions = {}): ReplayEngine {
  if (candidates.length === 0) throw new TypeError('createReplayEngine needs at least one candidate');
  const maxKeys = options.maxKeys ?? 1_000_000;
  const maxClients = options.maxClients ?? maxKeys;
  const top = options.top ?? 10;
  const maxPoints = options.maxPoints ?? 1200;
  const logger = options.logger ?? SILENT;
  const n = candidates.length;
  let now = 0;
  const clock = (): number => now;
  const limiters: CandidateLimiter[] = candidates.map((c) => createCandidateLimiter(c.policies, clock, maxKeys, logger));
  const shaper = candidates.map((c) => c.policies.some((p) => p.algorithm === 'leaky-bucket'));
  const admitted = new Float64Array(n);
  const rejected = new Float64Array(n);
  const exceeds = new Float64Array(n);
  const onlyThis = new Float64Array(n);
  const onlyFirst = new Float64Array(n);
  /** Streak-length histograms, `STREAK_BUCKETS` per candidate. */
  const streaks = new Float64Array(n * STREAK_BUCKETS);
  const delays = candidates.map(() => new Map<number, number>());
  const clients = new Map<string, Client>();
  let untracked = 0;
  let requests = 0;
  let outOfOrder = 0;
  let firstMs: number | null = null;
  let lastMs = Number.NEGATIVE_INFINITY;
  let startMs = 0;
  let bucketMs = 1000;
  /** Per candidate two rows (admitted, rejected) of `maxPoints` buckets; `points` in use. */
  const series = new Float64Array(n * 2 * maxPoints);
  /** The same rows, each bucket's busiest second (requests in time order; late ones are in `series` only). */
  const peaks = new Float64Array(n * 2 * maxPoints);
  let points = 0;
  const keepMinutes = options.busiestMinutes ?? 6;
  /** The minute being read, second by second: [second][row], row = 2 x candidate + (rejected ? 1 : 0). */
  let minute = Number.NEGATIVE_INFINITY;
  let minuteRequests = 0;
  let minuteDetail = new Float64Array(60 * 2 * n);
  let second = Number.NEGATIVE_INFINITY;
  const busiest: { startMs: number; requests: number; detail: Float64Array }[] = [];

  /** Halves the resolution: buckets pair up from `startMs`, so edges stay at `startMs + k * bucketMs`. */
  function coarsen(): void {
    const half = Math.ceil(points / 2);
    for (let r = 0; r < 2 * n; r++) {
      const o = r * maxPoints;
      for (let i = 0; i < half; i++) {
        series[o + i] = (series[o + 2 * i] as number) + (2 * i + 1 < points ? (series[o + 2 * i + 1] as number) : 0);
        peaks[o + i] = Math.max(peaks[o + 2 * i] as number, 2 * i + 1 < points ? (peaks[o + 2 * i + 1] as number) : 0);
      }
      series.fill(0, o + half, o + maxPoints);
      peaks.fill(0, o + half, o + maxPoints);
    }
    points = half;
    bucketMs *= 2;
    bucketTo = Number.NEGATIVE_INFINITY;
  }

  /** The bucket of the last request, [bucketFrom, bucketTo): most requests fall in the one before them. */
  let bucketIndex = 0;
  let bucketFrom = 0;
  let bucketTo = Number.NEGATIVE_INFINITY;

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

  let current: Client | undefined;

  /** Folds the second being read into its bucket's peaks (`into`: the live rows, or a copy for a report so far). */
  function foldSecond(into: Float64Array): void {
    if (second === Number.NEGATIVE_INFINITY) return;
    const b = Math.floor((Math.max(second * 1000, startMs) - startMs) / bucketMs);
    const o = (second - minute * 60) * 2 * n;
    for (let r = 0; r < 2 * n; r++) {
      const v = minuteDetail[o + r] as number;
      const at = r * maxPoints + b;
      if (v > (into[at] as number)) into[at] = v;
    }
  }

  /** Where the minute being read goes among the busiest (`into`: the live list, or a copy). */
  function foldMinute(into: typeof busiest, detail: Float64Array): void {
    if (minute === Number.NEGATIVE_INFINITY || keepMinutes === 0) return;
    const entry = { startMs: minute * 60_000, requests: minuteRequests, detail };
    if (into.length < keepMinutes) {
      into.push(entry);
      return;
    }
    let low = 0;
    for (let k = 1; k < into.length; k++) if ((into[k] as typeof entry).requests < (into[low] as typeof entry).requests) low = k;
    if (minuteRequests > (into[low] as typeof entry).requests) into[low] = entry;
  }

  /** Moves the per-second bookkeeping to the second (and minute) of `at`; false for a request of a second already past. */
  function toSecond(at: number): boolean {
    const s = Math.floor(at / 1000);
    if (s === second) return true;
    if (s < second) return false;
    foldSecond(peaks);
    const m = Math.floor(s / 60);
    if (m !== minute) {
      foldMinute(busiest, minuteDetail);
      minute = m;
      minuteRequests = 0;
      minuteDetail = new Float64Array(60 * 2 * n);
    }
    second = s;
    return true;
  }

  /**
   * Finds (or creates) the client of `logKey` into `current` and returns the key to hand the stores: the
   * client's own copy, so neither `clients` nor the stores keep a view into the log. Past `maxClients`,
   * `current` is undefined and the request counts in the totals only.
   */
  function clientKey(logKey: string): string {
    let client = clients.get(logKey);
    if (client === undefined) {
      if (clients.size >= maxClients) {
        untracked += 1;
        current = undefined;
        return ownString(logKey);
      }
      const key = ownString(logKey);
      client = { key, c: new Int32Array(1 + PER_CANDIDATE * n) };
      clients.set(key, client);
    }
    client.c[0] = (client.c[0] as number) + 1;
    current = client;
    return client.key;
  }

  function push(at: number, logKey: string, cost: number): void {
    const key = clientKey(logKey);
    if (firstMs === null) {
      firstMs = at;
      startMs = Math.floor(at / 1000) * 1000;
    }
    if (at < lastMs) outOfOrder += 1;
    else lastMs = at;
    now = at;
    requests += 1;
    const inOrder = toSecond(at);
    const b = at >= bucketFrom && at < bucketTo ? bucketIndex : bucketOf(at);
    const c = current?.c;
    if (inOrder) minuteRequests += 1;
    const d0 = (second - minute * 60) * 2 * n;
    let first = true;
    // One pass per candidate: decide, then count it everywhere it shows.
    for (let i = 0; i < n; i++) {
      const l = limiters[i] as CandidateLimiter;
      l.decide(key, cost);
      const d = l.verdict;
      const ok = d.allowed;
      const row = (2 * i + (ok ? 0 : 1)) * maxPoints + b;
      series[row] = (series[row] as number) + 1;
      if (inOrder) minuteDetail[d0 + 2 * i + (ok ? 0 : 1)] = (minuteDetail[d0 + 2 * i + (ok ? 0 : 1)] as number) + 1;
      if (ok) {
        admitted[i] = (admitted[i] as number) + 1;
        if (shaper[i]) {
          const m = delays[i] as Map<number, number>;
          m.set(d.delayMs, (m.get(d.delayMs) ?? 0) + 1);
        }
      } else {
        rejected[i] = (rejected[i] as number) + 1;
        if (d.exceeds) exceeds[i] = (exceeds[i] as number) + 1;
      }
      if (i === 0) first = ok;
      else if (ok !== first) {
        if (ok) onlyFirst[i] = (onlyFirst[i] as number) + 1;
        else onlyThis[i] = (onlyThis[i] as number) + 1;
      }
      if (c === undefined) continue;
      const o = 1 + i * PER_CANDIDATE;
      if (ok) {
        const streak = c[o + C_STREAK] as number;
        if (streak > 0) {
          const sb = i * STREAK_BUCKETS + streakBucket(streak);
          streaks[sb] = (streaks[sb] as number) + 1;
          c[o + C_STREAK] = 0;
        }
      } else {
        c[o + C_REJECTED] = (c[o + C_REJECTED] as number) + 1;
        const streak = (c[o + C_STREAK] as number) + 1;
        c[o + C_STREAK] = streak;
        if (streak > (c[o + C_LONGEST] as number)) c[o + C_LONGEST] = streak;
      }
      if (i > 0 && ok !== first) c[o + C_DISAGREE] = (c[o + C_DISAGREE] as number) + 1;
    }
  }

  function row(key: string, c: Int32Array, i: number): ClientRow {
    const o = 1 + i * PER_CANDIDATE;
    return {
      key,
      requests: c[0] as number,
      rejected: c[o + C_REJECTED] as number,
      longestStreak: c[o + C_LONGEST] as number,
      disagreements: c[o + C_DISAGREE] as number,
    };
  }

  /** The `top` clients by counter `field` of candidate `i` (ties: more requests, then key order). */
  function topBy(i: number, field: number): ClientRow[] {
    const o = 1 + i * PER_CANDIDATE + field;
    const best: [string, Int32Array][] = [];
    const better = (a: [string, Int32Array], b: [string, Int32Array]): boolean => {
      const va = a[1][o] as number;
      const vb = b[1][o] as number;
      if (va !== vb) return va > vb;
      if (a[1][0] !== b[1][0]) return (a[1][0] as number) > (b[1][0] as number);
      return a[0] < b[0];
    };
    for (const { key, c } of clients.values()) {
      const entry: [string, Int32Array] = [key, c];
      if ((entry[1][o] as number) === 0) continue;
      if (best.length === top && !better(entry, best[best.length - 1] as [string, Int32Array])) continue;
      let j = best.length < top ? best.length : top - 1;
      best[j] = entry;
      while (j > 0 && better(best[j] as [string, Int32Array], best[j - 1] as [string, Int32Array])) {
        const t = best[j - 1] as [string, Int32Array];
        best[j - 1] = best[j] as [string, Int32Array];
        best[j] = t;
        j -= 1;
      }
    }
    return best.map(([k, c]) => row(k, c, i));
  }

  function report(input?: ReplayInputSummary): ReplayReport {
    const peaksNow = peaks.slice();
    foldSecond(peaksNow);
    const busiestNow = busiest.slice();
    foldMinute(busiestNow, minuteDetail);
    const reports: CandidateReport[] = candidates.map((cand, i) => {
      const o = 1 + i * PER_CANDIDATE;
      let clientsRejected = 0;
      let longest = 0;
      let longestKey: string | null = null;
      const hist = streaks.slice(i * STREAK_BUCKETS, (i + 1) * STREAK_BUCKETS);
      for (const { key, c } of clients.values()) {
        if ((c[o + C_REJECTED] as number) > 0) clientsRejected += 1;
        const l = c[o + C_LONGEST] as number;
        if (l > longest || (l === longest && l > 0 && longestKey !== null && key < longestKey)) {
          longest = l;
          longestKey = key;
        }
        const open = c[o + C_STREAK] as number;
        if (open > 0) hist[streakBucket(open)] = (hist[streakBucket(open)] as number) + 1;
      }
      const buckets: StreakBucket[] = [];
      let last = -1;
      hist.forEach((count, b) => {
        if (count > 0) last = b;
      });
      for (let b = 0; b <= last; b++) buckets.push({ from: 2 ** b, to: 2 ** (b + 1) - 1, count: hist[b] as number });
      const m = delays[i] as Map<number, number>;
      const sorted = [...m.entries()].sort((a, b) => a[0] - b[0]);
      const delayed = admitted[i] as number;
      const total = i === 0 ? 0 : (onlyThis[i] as number) + (onlyFirst[i] as number);
      return {
        index: i,
        label: cand.label,
        policies: cand.policies,
        requests,
        admitted: admitted[i] as number,
        rejected: rejected[i] as number,
        costExceedsCapacity: exceeds[i] as number,
        clientsRejected,
        clientsRejectedShare: clients.size === 0 ? 0 : clientsRejected / clients.size,
        longestStreak: { length: longest, key: longestKey },
        delayMs: shaper[i]
          ? {
              p50: percentile(sorted, delayed, 0.5),
              p99: percentile(sorted, delayed, 0.99),
              max: sorted.length === 0 ? 0 : (sorted[sorted.length - 1] as [number, number])[0],
            }
          : null,
        disagreement:
          i === 0
            ? null
            : { onlyThis: onlyThis[i] as number, onlyFirst: onlyFirst[i] as number, total, share: requests === 0 ? 0 : total / requests },
        topRejected: topBy(i, C_REJECTED),
        topDisagreeing: i === 0 ? [] : topBy(i, C_DISAGREE),
        streaks: buckets,
        series: {
          admitted: seriesRow(series, 2 * i),
          rejected: seriesRow(series, 2 * i + 1),
          peakAdmitted: seriesRow(peaksNow, 2 * i),
          peakRejected: seriesRow(peaksNow, 2 * i + 1),
        },
      };
    });
    let evictions = 0;
    for (const l of limiters) evictions += l.store.evictions;
    return {
      input: {
        files: input?.files ?? [],
        lines: input?.lines ?? requests,
        requests,
        malformed: input?.malformed ?? 0,
        malformedSamples: input?.malformedSamples ?? [],
        outOfOrder,
        order: input?.order ?? null,
      },
      clients: clients.size,
      untrackedRequests: untracked,
      evictions,
      timeline: { firstMs, lastMs: firstMs === null ? null : lastMs, startMs, bucketMs },
      busiestMinutes: busiestNow
        .sort((a, b) => a.startMs - b.startMs)
        .map(
          (m): BusyMinute => ({
            startMs: m.startMs,
            requests: m.requests,
            candidates: candidates.map((_, i) => ({
              admitted: Array.from({ length: 60 }, (_, sec) => m.detail[sec * 2 * n + 2 * i] as number),
              rejected: Array.from({ length: 60 }, (_, sec) => m.detail[sec * 2 * n + 2 * i + 1] as number),
            })),
          }),
        ),
      candidates: reports,
    };
  }

  /** Row `r` of `rows` (2i admitted, 2i + 1 rejected of candidate i), over the buckets in use. */
  function seriesRow(rows: Float64Array, r: number): number[] {
    return Array.from(rows.subarray(r * maxPoints, r * maxPoints + points));
  }

  return { push, candidates, report };
}
