/**
 * @module Each lab's figures against expectations worked out by hand from the algorithms' rules (the comments
 * show the arithmetic), so a lab that drifts from the library, or the library from its documented
 * rules, fails here.
 */
import { describe, expect, it } from 'vitest';
import { runLab } from './labs.js';
import { runTrace } from './trace.js';

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

describe('lab B: 20 per second against 100 per 10 s for 60 s', () => {
  it('matches the hand computation per 10 s', () => {
    expect(table('b')).toEqual([
      ['fixed-window', 100, 100, 100, 100, 100, 100, 600],
      // Each admitted request frees its slot exactly 10 s later: the pattern repeats.
      ['sliding-log', 100, 100, 100, 100, 100, 100, 600],
      // prev 100: c + 1 <= e / 100 admits at e = 100, 200, ..., 9900 (99); prev 99: c <= 0.0099 e admits c = 0..98 (99).
      ['sliding-window', 100, 99, 99, 99, 99, 99, 595],
      // Full bucket (100) + one per 100 ms: 100 + floor(9950 / 100) = 199 by 9.95 s, then 100 per 10 s.
      ['token-bucket', 199, 100, 100, 100, 100, 100, 699],
      ['gcra', 199, 100, 100, 100, 100, 100, 699],
      ['leaky-bucket', 199, 100, 100, 100, 100, 100, 699],
    ]);
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

describe('lab D: sliding-window estimate against the sliding log under Poisson traffic', () => {
  const rows = table('d');

  it('agrees completely below the limit: neither rejects anything at 0.5x', () => {
    const [, requests, exact, estimate, falseAdmits, falseRejects] = rows[0] ?? [];
    expect([exact, estimate, falseAdmits, falseRejects]).toEqual([requests, requests, 0, 0]);
  });

  it('the exact log admits at most 100 per client per window, so at 2x and above exactly 10 clients x 20 windows x 100', () => {
    for (const row of rows.slice(3)) expect(row[2]).toBe(20_000);
  });

  it('errs both ways once traffic reaches the limit, and the counts add up', () => {
    for (const row of rows.slice(1)) {
      const [, requests, exact, estimate, falseAdmits, falseRejects] = row as [string, number, number, number, number, number];
      expect(falseAdmits).toBeGreaterThan(0);
      expect(falseRejects).toBeGreaterThan(0);
      // estimate admitted = exact admitted + false admits - false rejects.
      expect(estimate).toBe(exact + falseAdmits - falseRejects);
      expect(exact).toBeLessThanOrEqual(requests);
    }
  });

  it('is deterministic for a seed (the figures the README quotes), and a different seed gives other arrivals', () => {
    expect(rows.map((r) => r.slice(0, 6))).toEqual([
      ['0.5x', 10_071, 10_071, 10_071, 0, 0],
      ['1x', 19_930, 18_494, 18_675, 873, 692],
      ['1.5x', 29_790, 19_698, 19_665, 4650, 4683],
      ['2x', 40_009, 20_000, 19_767, 7719, 7952],
      ['3x', 60_105, 20_000, 19_802, 11_344, 11_542],
      ['4x', 80_247, 20_000, 19_807, 13_276, 13_469],
    ]);
    expect(table('d', 2)[1]?.[1]).not.toBe(19_930);
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
  it('matches the hand computation', () => {
    expect(table('e')).toEqual([
      // Resets at 60 s and 120 s: 100 of the 600 steady requests in each minute; idle from 69.9 s to 120 s.
      ['fixed-window', 100, 100, 100, '0.0', '50.1'],
      // 99 of the burst are still in (59.9, 119.9]: first steady admit at 119.9 s; then 120.0..129.8 s (99 in the minute) and 179.9 s.
      ['sliding-log', 100, 1, 100, '59.9', '59.9'],
      // prev 100: c + 1 <= e / 600, admits at 60.6, 61.2, ..., 119.4 s (99); prev 99: c <= 99 e / 60000, c = 0..98 (99); gaps 600 or 700 ms.
      ['sliding-window', 100, 99, 99, '0.6', '0.7'],
      // The burst empties the bucket at 59.9 s; token n arrives at 59.9 + 0.6 n s: 60.5 s first, 100 per minute.
      ['token-bucket', 100, 100, 100, '0.5', '0.6'],
      ['gcra', 100, 100, 100, '0.5', '0.6'],
      ['leaky-bucket', 100, 100, 100, '0.5', '0.6'],
    ]);
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
