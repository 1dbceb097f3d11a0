/**
 * @module The five labs: the classic experiments that teach which algorithm to choose, run on the
 * library itself in virtual time. Each returns tables, charts and notes (see lab-result.ts); the
 * expected figures are derived by hand in labs.test.ts.
 */
import { createRandom } from '../synthetic/seeded-random.js';
import type { LabChart, LabName, LabResult } from './lab-result.js';
import { compareOnHistory } from './sliding-error.js';
import { ALGORITHMS, type Arrival, admittedBetween, admittedPer, rollingMax, runTrace, type Verdict } from './trace.js';

export const LAB_NAMES: readonly LabName[] = ['a', 'b', 'c', 'd', 'e'];
export type { LabName } from './lab-result.js';

export interface LabOptions {
  /** Lab D's random seed. Defaults to 1. */
  readonly seed?: number;
}

function range(n: number, f: (i: number) => number): Arrival[] {
  return Array.from({ length: n }, (_, i) => ({ at: f(i) }));
}

function maxDelay(verdicts: readonly Verdict[]): number {
  let m = 0;
  for (const v of verdicts) if (v.allowed && v.delayMs > m) m = v.delayMs;
  return m;
}

/** The longest time between two admitted requests, ms. */
function longestGap(verdicts: readonly Verdict[]): number {
  let last: number | undefined;
  let gap = 0;
  for (const v of verdicts) {
    if (!v.allowed) continue;
    if (last !== undefined && v.at - last > gap) gap = v.at - last;
    last = v.at;
  }
  return gap;
}

/** A: 199 requests in 2 s across a fixed-window boundary (limit 100 per minute). */
function labA(): LabResult {
  const W = 60_000;
  const arrivals = [...range(99, (i) => W - 1000 + 10 * i), ...range(100, (j) => W + 10 * j)];
  const rows = ALGORITHMS.map((algorithm) => {
    const v = runTrace({ algorithm, limit: 100, windowMs: W }, arrivals);
    const before = admittedBetween(v, 0, W);
    const after = admittedBetween(v, W, 2 * W);
    return [algorithm, before + after, 199 - before - after, before, after, algorithm === 'leaky-bucket' ? maxDelay(v) : '-'] as const;
  });
  return {
    name: 'a',
    title: 'A. 199 requests in 2 s across a fixed-window boundary',
    setup:
      'limit 100 per 60 s; 99 requests in the last second of a minute (59.00-59.98 s), 100 in the first second of the next (60.00-60.99 s), one client.',
    tables: [
      {
        title: 'Admitted of 199',
        columns: ['algorithm', 'admitted', 'rejected', 'before boundary', 'after boundary', 'max delay ms'],
        rows,
      },
    ],
    charts: [
      {
        title: 'Admitted of 199 requests across the boundary',
        categories: ALGORITHMS,
        xLabel: 'algorithm',
        yLabel: 'admitted',
        series: [
          { name: 'before boundary', points: rows.map((r, i) => [i, r[3]] as const) },
          { name: 'after boundary', points: rows.map((r, i) => [i, r[4]] as const) },
        ],
      },
    ],
    notes: [
      'The textbook figure holds: a fixed window admits all 199 in 2 s, nearly 2 x the limit, because the count resets at the boundary.',
      'Token bucket, GCRA and leaky bucket admit 103, not 100: tollgate buckets start full (a new key has its whole burst), and 2 s refill 3.3 requests at 100 per minute.',
      'Sliding window admits 101: at 60.00 s the previous minute weighs 99 x (1 - 0/60) = 99, room for 1; the next fits once 99 x e/60 s >= 1 (at 60.61 s).',
      'The leaky bucket admits like GCRA but shapes: the last admitted request waits the queue out (see max delay), which is why tollgate never puts it in front of impatient clients by default.',
    ],
  };
}

/** B: sustained 2x overload against 100 per 60 s, admitted per 10 s (a slice shorter than the window). */
function labB(): LabResult {
  const W = 60_000;
  const SLICE = 10_000;
  const END = 5 * W;
  // 200 per minute: one request every 300 ms for 5 minutes.
  const arrivals = range(END / 300, (i) => 300 * i);
  const perAlgorithm = ALGORITHMS.map((algorithm) => {
    const v = runTrace({ algorithm, limit: 100, windowMs: W }, arrivals);
    return { algorithm, v, slices: admittedPer(v, 0, END, SLICE) };
  });
  return {
    name: 'b',
    title: 'B. Sustained 2x overload, admitted per 10 s against a 60 s window',
    setup:
      'limit 100 per 60 s (an even pace is 16.7 per 10 s); one client sending 200 per minute (one every 300 ms, 2 x the limit) for 5 minutes; admitted counted per 10 s slice, six to a window.',
    tables: [
      {
        title: 'Admitted, and how they are spread',
        columns: ['algorithm', 'admitted of 1000', 'busiest 10 s', 'quietest 10 s', 'max in any rolling 60 s', 'longest gap s'],
        rows: perAlgorithm.map(({ algorithm, v, slices }) => [
          algorithm,
          v.filter((x) => x.allowed).length,
          Math.max(...slices.map((p) => p[1])),
          Math.min(...slices.map((p) => p[1])),
          rollingMax(v, W)[0],
          (longestGap(v) / 1000).toFixed(1),
        ]),
      },
    ],
    charts: [
      {
        title: 'Admitted per 10 s under 2 x overload (limit 100 per 60 s)',
        xLabel: 'time (s)',
        yLabel: 'admitted per 10 s',
        series: perAlgorithm.map(({ algorithm, slices }) => ({ name: algorithm, points: slices })),
      },
    ],
    notes: [
      "The boundary wave: a fixed window admits at the sender's pace (twice the limit's) from each boundary until the 100 are spent, 30 s in, then nothing until the next boundary: 33-34 per 10 s, then 0, three times a minute. Reported per 60 s window it would look flat (100 each); only a slice shorter than the window shows it.",
      "The sliding log makes the same wave: each admitted request frees its slot exactly 60 s later, so the first minute's pattern repeats forever. Steady overload never gets more than 100 into any rolling 60 s from either (the 2 x of a fixed window needs a burst on both sides of a boundary: lab A and lab E).",
      "Sliding window makes the wave only in the first minute (nothing before to charge), then smooths it: it charges the last window's requests as if spread evenly, so it admits at the limit's pace, 16-17 per 10 s.",
      "Token bucket, GCRA and leaky bucket admit at the sender's pace for the first minute (tollgate buckets start full: the 100 of the burst plus 99 refilled while it drains), then one per 600 ms, the refill, with no gap over 0.6 s. That first minute holds 199 in a rolling 60 s: a bucket allows burst + rate x T in any span T by definition.",
    ],
  };
}

/** C: a page load of 12 requests against bucket sizes 1 to 20 (10 per second). */
function labC(): LabResult {
  const arrivals = [{ at: 0 }, ...range(11, () => 20)];
  const rows = Array.from({ length: 20 }, (_, i) => {
    const burst = i + 1;
    const tb = runTrace({ algorithm: 'token-bucket', limit: 10, windowMs: 1000, burst }, arrivals);
    const lb = runTrace({ algorithm: 'leaky-bucket', limit: 10, windowMs: 1000, burst }, arrivals);
    const admitted = tb.filter((v) => v.allowed).length;
    return [burst, admitted, 12 - admitted, lb.filter((v) => v.allowed).length, maxDelay(lb)] as const;
  });
  return {
    name: 'c',
    title: 'C. A page load of 12 requests against bucket sizes 1 to 20',
    setup: 'limit 10 per second; a document at 0 ms, then its 11 assets at 20 ms, from a client idle before.',
    tables: [
      {
        title: 'Page of 12 requests',
        columns: ['burst', 'token-bucket admitted', 'rejected', 'leaky-bucket admitted', 'last asset waits ms'],
        rows,
      },
    ],
    charts: [
      {
        title: 'Admitted of 12 and the last wait, by burst',
        xLabel: 'burst',
        yLabel: 'requests / 100 ms',
        series: [
          { name: 'token-bucket admitted', points: rows.map((r) => [r[0], r[1]] as const) },
          { name: 'leaky-bucket last wait (x 100 ms)', points: rows.map((r) => [r[0], r[4] / 100] as const) },
        ],
      },
    ],
    notes: [
      'Nothing refills in 20 ms (one request per 100 ms), so a bucket of b admits min(12, b): a page needs burst >= 12 or it loses assets.',
      "nginx's limit_req counts the request being served apart from its queue: nginx burst=11 is tollgate burst: 12. A shaper (leaky bucket) admits the same requests but makes the k-th wait (k - 1) x 100 ms - 20 ms: 1080 ms for the last of 12.",
    ],
  };
}

/** D: the sliding-window estimate against the exact sliding log under Poisson traffic, request by request. */
function labD(seed: number): LabResult {
  const W = 60_000;
  const LIMIT = 100;
  const CLIENTS = 10;
  const WINDOWS = 20;
  const multiples = [0.5, 1, 1.5, 2, 3, 4];
  const results = multiples.map((m, mi) => {
    const r = createRandom(seed + mi * 7919);
    const arrivals: Arrival[] = [];
    for (let c = 0; c < CLIENTS; c++) {
      const mean = W / (m * LIMIT);
      for (let t = r.exponential(mean); t < WINDOWS * W; t += r.exponential(mean)) arrivals.push({ at: Math.floor(t), key: `c${c}` });
    }
    arrivals.sort((a, b) => a.at - b.at);
    const same = compareOnHistory(arrivals, LIMIT, W, 'exact');
    const prod = compareOnHistory(arrivals, LIMIT, W, 'estimate');
    const own = runTrace({ algorithm: 'sliding-window', limit: LIMIT, windowMs: W }, arrivals).filter((v) => v.allowed).length;
    return { m, same, own, prod };
  });
  const rows = results.map(({ m, same, own, prod }) => [
    `${m}x`,
    same.requests,
    same.exactAdmitted,
    same.wronglyAdmitted,
    same.wronglyRejected,
    pct(same.wronglyAdmitted + same.wronglyRejected, same.requests),
    same.countError.mean.toFixed(2),
    same.countError.worst.toFixed(1),
    `${same.perClientWindow.mean.toFixed(2)} / ${same.perClientWindow.worst}`,
    own,
    pct(prod.wronglyAdmitted + prod.wronglyRejected, prod.requests),
  ]);
  // The widest gap between the estimate's admitted total on its own history and the exact log's, %, rounded up.
  const gap = Math.max(...results.map(({ same, own }) => Math.ceil((1000 * Math.abs(own - same.exactAdmitted)) / same.exactAdmitted) / 10));
  const chart: LabChart = {
    title: 'Sliding-window verdicts that differ from the exact sliding log, on the same history',
    xLabel: 'traffic / limit',
    yLabel: '% of requests',
    series: [
      { name: 'wrongly admitted %', points: results.map(({ m, same }) => [m, (100 * same.wronglyAdmitted) / same.requests] as const) },
      { name: 'wrongly rejected %', points: results.map(({ m, same }) => [m, (100 * same.wronglyRejected) / same.requests] as const) },
    ],
  };
  return {
    name: 'd',
    title: 'D. Sliding-window estimate vs exact sliding log under Poisson traffic',
    setup: `limit 100 per 60 s; ${CLIENTS} clients, each a Poisson stream at 0.5x to 4x the limit for ${WINDOWS} minutes (seed ${seed}). Every request is decided by both rules on the same history (the requests the exact log admitted before it), so each verdict of the estimate can be called right or wrong.`,
    tables: [
      {
        title: 'Per request, the estimate against the exact log on the same history',
        columns: [
          'traffic',
          'requests',
          'exact admits',
          'wrongly admitted',
          'wrongly rejected',
          'wrong %',
          'count error mean',
          'count error worst',
          'wrong per client-minute: mean / worst',
          'sliding-window admits on its own',
          'wrong % on its own history',
        ],
        rows,
      },
    ],
    charts: [chart],
    notes: [
      "Wrong % is the measure of Cloudflare's figure (0.003 % of 400 M requests wrongly allowed or rate limited): the share of requests on which the estimate's verdict differs from the exact one. Cloudflare's traffic came from 270 k sources, nearly all far below their limits, where the two cannot differ (see 0.5x); here every client lives at 0.5x-4x its limit, where the estimate's assumption (the previous window's requests were spread evenly) is tested on every request.",
      'Count error: the estimated count (previous window x the share of it still in the rolling window, plus the current window) minus the exact count of admitted requests in the rolling 60 s, per request; mean of its size, and the worst. Wrong per client-minute: wrong verdicts of one client within one clock minute, mean over all client-minutes, and the worst.',
      "Above the limit almost every request is decided at the edge (the exact rolling count sits at 99 or 100), where a count off by one flips the verdict: so the share of wrong verdicts is large and says little about how far off the estimate is; the count error says that. The exact log's own history makes it worse: it admits in clumps (each admitted request frees its slot exactly 60 s later, lab B), the opposite of the even spread the estimate assumes.",
      `The last two columns let the estimate decide on its own history, as it does in production: its admitted total stays within ${gap.toFixed(1)} % of the exact log's in this run (a wrong admit now is paid back by a reject later), and the exact rule, asked on that same history, disagrees with it on the share of requests shown.`,
    ],
  };
}

function pct(n: number, of: number): string {
  return of === 0 ? '0%' : `${((100 * n) / of).toFixed(2)}%`;
}

/** E: 100 requests in the last 0.1 s of a window, then 10 per second for 2 minutes (limit 100 per minute). */
function labE(): LabResult {
  const W = 60_000;
  const arrivals = [...range(100, (i) => W - 100 + i), ...range(1200, (k) => W + 100 * k)];
  const rows = ALGORITHMS.map((algorithm) => {
    const v = runTrace({ algorithm, limit: 100, windowMs: W }, arrivals);
    const steady = v.slice(100);
    const firstSteady = steady.find((x) => x.allowed);
    const [max, end] = rollingMax(v, W);
    return [
      algorithm,
      admittedBetween(v, 0, W),
      max,
      (end / 1000).toFixed(3),
      firstSteady === undefined ? '-' : ((firstSteady.at - W) / 1000).toFixed(1),
      (longestGap(v) / 1000).toFixed(1),
    ] as const;
  });
  const chart: LabChart = {
    title: 'Admitted per 10 s after a burst of 100 at 59.9 s',
    xLabel: 'time (s)',
    yLabel: 'admitted per 10 s',
    series: ALGORITHMS.map((algorithm) => ({
      name: algorithm,
      points: admittedPer(runTrace({ algorithm, limit: 100, windowMs: W }, arrivals), 50_000, 3 * W, 10_000),
    })),
  };
  return {
    name: 'e',
    title: 'E. A burst of 100 at the end of a window, then 10 per second for 2 minutes',
    setup: 'limit 100 per 60 s; 100 requests in 59.90-59.99 s, then one every 100 ms from 60 s to 179.9 s (1200 requests), one client.',
    tables: [
      {
        title: 'The most admitted in any rolling 60 s, and the longest lockout',
        columns: [
          'algorithm',
          'burst admitted',
          'max in any rolling 60 s',
          'that rolling 60 s ends at s',
          'first steady admit (s after 60)',
          'longest gap s',
        ],
        rows,
      },
    ],
    charts: [chart],
    notes: [
      'Fixed window forgets the burst at 60 s and admits the next 100 from 60.0 to 69.9 s: 200 in the rolling minute (10.0, 70.0], twice the limit. The sliding log never holds more than 100 in any rolling minute: it remembers the burst and admits nothing steady until 119.9 s (59.9 s locked out).',
      'Textbook sliding logs that also record rejected requests would lock this client out for good (10 per second keeps the log full); tollgate records admitted requests only, so the client is back once the burst ages out.',
      'The buckets spend their burst on the 100 and then admit one request per 600 ms, the refill rate, with no lockout longer than 0.6 s; the minute after the burst still holds 199 (burst + rate x T, their contract, not a bug).',
      "Sliding window lets 199 into the rolling minute too: it charges the burst of the last 0.1 s of the previous window as if spread over that whole window, so it forgets it at the window's pace, while an exact log would hold it for a full minute.",
    ],
  };
}

export function runLab(name: LabName, options: LabOptions = {}): LabResult {
  switch (name) {
    case 'a':
      return labA();
    case 'b':
      return labB();
    case 'c':
      return labC();
    case 'd':
      return labD(options.seed ?? 1);
    case 'e':
      return labE();
  }
}
