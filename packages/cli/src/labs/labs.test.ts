/**
 * @module Each lab's figures against expectations worked out by hand from the algorithms' rules (the comments
 * show the arithmetic), so a lab that drifts from the library, or the library from its documented
 * rules, fails here.
 */
import { describe, expect, it } from 'vitest';
import { createRandom } from '../synthetic/seeded-random.js';
import { runLab } from './labs.js';
import { compareOnHistory, estimateAdmits } from './sliding-error.js';
import { type Arrival, rollingMax, runTrace } from './trace.js';

function table(name: 'a' | 'b' | 'c' | 'd' | 'e', seed?: number) {
  return runLab(name, seed === undefined ? {} : { seed }).tables[0]?.rows ?? [];
}

describe('lab A: 199 requests in 2 s across a fixed-window boundary (100 per minute)', () => {
  it('matches the hand computation for every algorithm', () => {
    expect(table('a')).toEqual([
      // Counter resets at 60 s: 99 before + 100 after.
      ['fixed-window', 199, 0, 99, 100, '-'],
      // Log of (t - 60 s, t]: 99 in it until 119 s; room for exactly 1 after the boundary.
      ['sliding-log', 100, 99, 99, 1, '-'],
      // 99 x (60000 - e) + 60000 (c + 1) <= 6e6  <=>  c <= 99 e / 60000: c = 0 at e = 0, c = 1 at e >= 606.06 (60.61 s), c = 2 needs e >= 1212.1 > 990.
      ['sliding-window', 101, 98, 99, 2, '-'],
      // Full bucket of 100 at 59 s, then one token per 600 ms: 100 + floor(1990 / 600) = 103, the last at 60.8 s.
      ['token-bucket', 103, 96, 99, 4, '-'],
      ['gcra', 103, 96, 99, 4, '-'],
      // Same admissions; the 100th of the full queue waits 99 x 600 ms.
      ['leaky-bucket', 103, 96, 99, 4, 59_400],
    ]);
  });
});

describe('lab B: 200 per minute against 100 per 60 s for 5 minutes, per 10 s', () => {
  it('matches the hand computation', () => {
    expect(table('b')).toEqual([
      // Requests at 0, 0.3, ..., 29.7 s of each minute are the first 100: 34 + 33 + 33 in the first three slices, then 0.
      ['fixed-window', 500, 34, 0, 100, '30.3'],
      // Each admitted request frees its slot exactly 60 s later: the first minute repeats.
      ['sliding-log', 500, 34, 0, 100, '30.3'],
      // The first minute as a fixed window; then prev 100: c + 1 <= e / 600 admits one per 600 ms (99 or 100 a minute).
      ['sliding-window', 496, 34, 0, 100, '30.9'],
      // Full bucket of 100 drains at 2 x the refill: 100 + 99 admitted in the first minute, then one per 600 ms.
      ['token-bucket', 599, 34, 16, 199, '0.6'],
      ['gcra', 599, 34, 16, 199, '0.6'],
      ['leaky-bucket', 599, 34, 16, 199, '0.6'],
    ]);
  });

  it('shows the boundary wave per 10 s: the fixed window admits at 2 x the even pace after each boundary, then nothing', () => {
    const chart = runLab('b').charts[0];
    const fixed = chart?.series.find((s) => s.name === 'fixed-window')?.points.map((p) => p[1]);
    expect(fixed).toEqual(Array.from({ length: 5 }, () => [34, 33, 33, 0, 0, 0]).flat());
    const gcra =
      chart?.series
        .find((s) => s.name === 'gcra')
        ?.points.slice(6)
        .map((p) => p[1]) ?? [];
    expect(Math.max(...gcra) - Math.min(...gcra)).toBeLessThanOrEqual(1);
  });
});

describe('lab C: a page of 12 against bursts 1 to 20 (10 per second)', () => {
  it('admits min(12, burst) and the k-th queued request waits (k - 1) x 100 - 20 ms', () => {
    const rows = table('c');
    expect(rows).toHaveLength(20);
    rows.forEach((row, i) => {
      const burst = i + 1;
      const admitted = Math.min(12, burst);
      expect(row).toEqual([burst, admitted, 12 - admitted, admitted, admitted === 1 ? 0 : (admitted - 1) * 100 - 20]);
    });
  });
});

describe('lab D: sliding-window estimate against the sliding log on the same history, under Poisson traffic', () => {
  const rows = table('d');

  it('agrees completely below the limit: neither rejects anything at 0.5x', () => {
    const [, requests, exact, wrongAdmit, wrongReject, wrongShare] = rows[0] ?? [];
    expect([exact, wrongAdmit, wrongReject, wrongShare]).toEqual([requests, 0, 0, '0.00%']);
  });

  it('the exact log admits at most 100 per client per window, so at 2x and above exactly 10 clients x 20 windows x 100', () => {
    for (const row of rows.slice(3)) expect(row[2]).toBe(20_000);
  });

  it('is deterministic for a seed (the figures the README quotes), and a different seed gives other arrivals', () => {
    expect(rows).toEqual([
      ['0.5x', 10_071, 10_071, 0, 0, '0.00%', '2.08', '10.8', '0.00 / 0', 10_071, '0.00%'],
      ['1x', 19_930, 18_494, 912, 1124, '10.22%', '2.73', '17.6', '10.18 / 75', 18_675, '12.79%'],
      ['1.5x', 29_790, 19_698, 5238, 6718, '40.13%', '5.22', '36.5', '59.78 / 100', 19_665, '28.57%'],
      ['2x', 40_009, 20_000, 7193, 11_191, '45.95%', '10.24', '53.8', '91.92 / 133', 19_767, '36.25%'],
      ['3x', 60_105, 20_000, 3573, 16_870, '34.01%', '20.82', '66.0', '102.22 / 138', 19_802, '49.66%'],
      ['4x', 80_247, 20_000, 2411, 17_958, '25.38%', '27.30', '79.6', '101.84 / 141', 19_807, '59.46%'],
    ]);
    expect(table('d', 2)[1]?.[1]).not.toBe(19_930);
  });

  it("its note gives this run's widest gap between the two admitted totals, rounded up to 0.1 % (not a fixed figure)", () => {
    for (const seed of [1, 8]) {
      const lab = runLab('d', { seed });
      const gaps = (lab.tables[0]?.rows ?? []).map((row) => Math.abs((row[9] as number) - (row[2] as number)) / (row[2] as number));
      const widest = Math.ceil(1000 * Math.max(...gaps)) / 10;
      expect(lab.notes.join(' ')).toContain(`stays within ${widest.toFixed(1)} % of the exact log's in this run`);
    }
    // Seed 8 is over the 1.2 % the note once printed whatever the run measured.
    expect(runLab('d', { seed: 8 }).notes.join(' ')).toContain('within 1.4 %');
  });

  it("the estimate it judges is the library's: on the library's own sliding-window run, it gives every verdict the library gave", () => {
    const r = createRandom(5);
    const arrivals: Arrival[] = [];
    for (let c = 0; c < 4; c++)
      for (let t = r.exponential(300); t < 600_000; t += r.exponential(300)) arrivals.push({ at: Math.floor(t), key: `c${c}` });
    arrivals.sort((a, b) => a.at - b.at);
    const library = runTrace({ algorithm: 'sliding-window', limit: 100, windowMs: 60_000 }, arrivals);
    const history = new Map<string, number[]>();
    let rejected = 0;
    library.forEach((v) => {
      const times = history.get(v.key) ?? [];
      history.set(v.key, times);
      expect(estimateAdmits(times, v.at, 100, 60_000)).toBe(v.allowed);
      if (v.allowed) times.push(v.at);
      else rejected++;
    });
    expect(rejected).toBeGreaterThan(1000);
  });

  it('compares verdicts on one history: a hand-made trace with one wrong admit and its count error', () => {
    // limit 2 per 1000 ms. Window [0, 1000): a at 0 and 900 (both admitted). At 1100: exact (100, 1100] holds 900 -> admit;
    // estimate: prev 2 x (1000 - 100) + (0 + 1) x 1000 = 2800 > 2000 -> reject (wrong reject), estimated 1.8 vs exact 1.
    const result = compareOnHistory(
      [{ at: 0 }, { at: 900 }, { at: 1100 }].map((a) => ({ ...a, key: 'a' })),
      2,
      1000,
      'exact',
    );
    expect(result).toMatchObject({ requests: 3, exactAdmitted: 3, wronglyAdmitted: 0, wronglyRejected: 1 });
    expect(result.countError.worst).toBeCloseTo(0.8, 10);
    expect(result.perClientWindow).toEqual({ mean: 0.5, worst: 1 });
  });

  it('checks the sliding log really is exact: no 60 s window of the trace holds more than 100 admitted', () => {
    const arrivals: { at: number }[] = [];
    for (let i = 0, t = 0; i < 3000; i++) {
      t += (i * 7919) % 1300;
      arrivals.push({ at: t });
    }
    const admitted = runTrace({ algorithm: 'sliding-log', limit: 100, windowMs: 60_000 }, arrivals)
      .filter((v) => v.allowed)
      .map((v) => v.at);
    for (let i = 100; i < admitted.length; i++)
      expect((admitted[i] as number) - (admitted[i - 100] as number)).toBeGreaterThanOrEqual(60_000);
  });
});

describe('lab E: a burst of 100 at 59.9 s, then 10 per second for 2 minutes (100 per minute)', () => {
  it('reports the rolling maxima, matching the hand computation', () => {
    expect(table('e')).toEqual([
      // Resets at 60 s: the burst (59.900-59.999 s) and 60.0-69.9 s (100) are both in (9.9, 69.9]: 200, twice the limit.
      ['fixed-window', 100, 200, '69.900', '0.0', '50.1'],
      // Never more than 100 in any (t - 60 s, t]: the first full window ends at the burst's last request.
      ['sliding-log', 100, 100, '59.999', '59.9', '59.9'],
      // prev 100: admits at 60.6, 61.2, ..., 119.4 s (99), all within 60 s of the burst's end: 100 + 99.
      ['sliding-window', 100, 199, '119.400', '0.6', '0.7'],
      // Token n arrives at 59.9 + 0.6 n s: 60.5 ... 119.3 s is 99 of them, with the burst in (59.3, 119.3]: burst + rate x T.
      ['token-bucket', 100, 199, '119.300', '0.5', '0.6'],
      ['gcra', 100, 199, '119.300', '0.5', '0.6'],
      ['leaky-bucket', 100, 199, '119.300', '0.5', '0.6'],
    ]);
  });

  it('rollingMax counts (t - W, t] windows exactly', () => {
    const v = (at: number) => ({ at, key: 'k', allowed: true, delayMs: 0 });
    expect(rollingMax([v(0), v(500), v(1000), v(1001)], 1000)).toEqual([3, 1001]);
    expect(rollingMax([v(0), v(1000), v(2000)], 1000)).toEqual([1, 0]);
  });
});

describe('every lab', () => {
  it.each(['a', 'b', 'c', 'd', 'e'] as const)(
    'lab %s has a title, a setup, a chart and notes saying where tollgate differs from the textbook',
    (name) => {
      const lab = runLab(name);
      expect(lab.title).toMatch(new RegExp(`^${name.toUpperCase()}\\. `));
      expect(lab.setup.length).toBeGreaterThan(20);
      expect(lab.charts.length).toBeGreaterThan(0);
      expect(lab.notes.length).toBeGreaterThan(0);
    },
  );
});
