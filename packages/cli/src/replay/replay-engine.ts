/**
 * @module The replay engine: every candidate is a real limiter (createLimiter on its own MemoryStore)
 * whose clock is the log's time, so a replay decides exactly as production would, with the store's
 * bounded memory and eviction. Requests go through every candidate in one pass; the engine keeps
 * per-candidate counters, per-client counters (bounded), reject streaks, shaped delays and the time
 * series (timeline.ts), so memory stays flat however long the log.
 */
import type { Logger, PolicyOptions } from '@tollgate/core';
import { ownString } from '../input/own-string.js';
import { type CandidateLimiter, createCandidateLimiter } from './candidate-limiter.js';
import type { CandidateReport, ClientRow, ReplayReport, StreakBucket } from './replay-report.js';
import { createTimeline, type Timeline } from './timeline.js';

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
  readonly times?: ReplayReport['input']['times'];
}

export interface ReplayEngine {
  /** Decides one request at `at` (epoch ms) for `key` with `cost` in every candidate. Throws on a key or cost the core refuses, and then counts nothing. */
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
function topBy(clients: ReadonlyMap<string, Client>, top: number, i: number, field: number): ClientRow[] {
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

/** What the engine counts, shared by `push` and the report. */
interface Counters {
  readonly requests: () => number;
  readonly clients: ReadonlyMap<string, Client>;
  readonly top: number;
  readonly admitted: Float64Array;
  readonly rejected: Float64Array;
  readonly exceeds: Float64Array;
  readonly onlyThis: Float64Array;
  readonly onlyFirst: Float64Array;
  readonly streaks: Float64Array;
  readonly delays: readonly Map<number, number>[];
  readonly shaper: readonly boolean[];
}

/** Candidate `i`'s figures from the counters (clients walked once). */
function candidateReport(cand: Candidate, i: number, counters: Counters, series: CandidateReport['series']): CandidateReport {
  const { clients, top, admitted, rejected, exceeds, onlyThis, onlyFirst, streaks, delays, shaper } = counters;
  const requests = counters.requests();
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
    topRejected: topBy(clients, top, i, C_REJECTED),
    topDisagreeing: i === 0 ? [] : topBy(clients, top, i, C_DISAGREE),
    streaks: buckets,
    series,
  };
}

/** One verdict of candidate `i` in a client's counters: rejections, streaks (closed ones into `streaks`), disagreements. */
function countClient(c: Int32Array, streaks: Float64Array, i: number, ok: boolean, disagrees: boolean): void {
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
  if (disagrees) c[o + C_DISAGREE] = (c[o + C_DISAGREE] as number) + 1;
}

/** Every candidate's verdict on one request, all decided before anything is counted. */
class Verdicts {
  readonly allowed: Uint8Array;
  readonly delayMs: Float64Array;
  readonly exceeded: Uint8Array;

  constructor(n: number) {
    this.allowed = new Uint8Array(n);
    this.delayMs = new Float64Array(n);
    this.exceeded = new Uint8Array(n);
  }

  /**
   * Decides `key` at `cost` in every candidate. The core checks the key and the cost before it touches a
   * store: a request it refuses throws here, from the first candidate, and is counted nowhere (the caller
   * counts it as malformed).
   */
  decide(limiters: readonly CandidateLimiter[], key: string, cost: number): void {
    for (let i = 0; i < limiters.length; i++) {
      const l = limiters[i] as CandidateLimiter;
      l.decide(key, cost);
      this.allowed[i] = l.verdict.allowed ? 1 : 0;
      this.delayMs[i] = l.verdict.delayMs;
      this.exceeded[i] = l.verdict.exceeds ? 1 : 0;
    }
  }
}

/**
 * Counts each candidate's verdict of one request everywhere it shows: the totals, the delays of a
 * shaper, the disagreements with candidate #1, the timeline and the client's row `c` (undefined past
 * `maxClients`).
 */
function tally(counters: Counters, verdicts: Verdicts, timeline: Timeline, c: Int32Array | undefined): void {
  const { admitted, rejected, exceeds, onlyThis, onlyFirst, streaks, delays, shaper } = counters;
  const { allowed, delayMs, exceeded } = verdicts;
  const first = allowed[0] === 1;
  for (let i = 0; i < admitted.length; i++) {
    const ok = allowed[i] === 1;
    timeline.count(i, ok);
    if (ok) {
      admitted[i] = (admitted[i] as number) + 1;
      if (shaper[i]) {
        const m = delays[i] as Map<number, number>;
        const d = delayMs[i] as number;
        m.set(d, (m.get(d) ?? 0) + 1);
      }
    } else {
      rejected[i] = (rejected[i] as number) + 1;
      if (exceeded[i] === 1) exceeds[i] = (exceeds[i] as number) + 1;
    }
    if (i > 0 && ok !== first) {
      if (ok) onlyFirst[i] = (onlyFirst[i] as number) + 1;
      else onlyThis[i] = (onlyThis[i] as number) + 1;
    }
    if (c !== undefined) countClient(c, streaks, i, ok, i > 0 && ok !== first);
  }
}

export function createReplayEngine(candidates: readonly Candidate[], options: ReplayOptions = {}): ReplayEngine {
  if (candidates.length === 0) throw new TypeError('createReplayEngine needs at least one candidate');
  const maxKeys = options.maxKeys ?? 1_000_000;
  const maxClients = options.maxClients ?? maxKeys;
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
  let untracked = 0;
  let requests = 0;
  let outOfOrder = 0;
  let firstMs: number | null = null;
  let lastMs = Number.NEGATIVE_INFINITY;
  const clients = new Map<string, Client>();
  const top = options.top ?? 10;
  const arrays = { admitted, rejected, exceeds, onlyThis, onlyFirst, streaks, delays, shaper };
  const counters: Counters = { requests: () => requests, clients, top, ...arrays };

  const timeline = createTimeline(n, options.maxPoints ?? 1200, options.busiestMinutes ?? 6);

  let current: Client | undefined;

  /**
   * Counts a decided request of `client` (undefined: not seen yet, then created with `key`) into
   * `current`. Past `maxClients`, `current` is undefined and the request counts in the totals only.
   */
  function countClientRequest(client: Client | undefined, key: string): void {
    if (client === undefined) {
      if (clients.size >= maxClients) {
        untracked += 1;
        current = undefined;
        return;
      }
      client = { key, c: new Int32Array(1 + PER_CANDIDATE * n) };
      clients.set(key, client);
    }
    client.c[0] = (client.c[0] as number) + 1;
    current = client;
  }

  const verdicts = new Verdicts(n);

  function push(at: number, logKey: string, cost: number): void {
    const known = clients.get(logKey);
    // The key handed to the stores is the client's own copy: neither `clients` nor the stores keep a view into the log.
    const key = known?.key ?? ownString(logKey);
    now = at;
    verdicts.decide(limiters, key, cost);
    countClientRequest(known, key);
    // The earliest request, not the first pushed: a late one (past the reorder window) may come before it.
    if (firstMs === null || at < firstMs) firstMs = at;
    if (at < lastMs) outOfOrder += 1;
    else lastMs = at;
    requests += 1;
    timeline.place(at);
    tally(counters, verdicts, timeline, current?.c);
  }

  function report(input?: ReplayInputSummary): ReplayReport {
    const shown = timeline.snapshot();
    const reports = candidates.map((cand, i) => candidateReport(cand, i, counters, shown.series(i)));
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
        times: input?.times ?? null,
      },
      clients: clients.size,
      untrackedRequests: untracked,
      evictions,
      timeline: { firstMs, lastMs: firstMs === null ? null : lastMs, startMs: shown.startMs, bucketMs: shown.bucketMs },
      busiestMinutes: shown.busiestMinutes,
      candidates: reports,
    };
  }

  return { push, candidates, report };
}
