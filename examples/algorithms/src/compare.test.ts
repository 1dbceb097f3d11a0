/**
 * @module The comparison's numbers are the algorithms' contracts at work: checked as facts, and the
 * printed table pinned, so a change in any algorithm shows up here as a changed demo.
 */
import { describe, expect, it } from 'vitest';
import { compareAlgorithms, mostInRollingWindow, type Report } from './compare.js';
import { formatTable, renderComparison } from './render.js';
import { createStream } from './stream.js';

const limit = 10;
const windowMs = 1000;
const phases = createStream(limit, windowMs);
const reports = compareAlgorithms(phases, limit, windowMs);
const byLabel = (label: string): Report => {
  const r = reports.find((x) => x.label === label);
  if (r === undefined) throw new Error(`no report for ${label}`);
  return r;
};

describe('the stream', () => {
  it('has the three situations, in time order', () => {
    expect(phases.map((p) => [p.name, p.arrivals.length])).toEqual([
      ['boundary', 24],
      ['burst', 25],
      ['sustained', 72],
    ]);
    const times = phases.flatMap((p) => p.arrivals);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    for (const p of phases) expect(p.groups.reduce((a, b) => a + b, 0)).toBe(p.arrivals.length);
  });
});

describe('the comparison', () => {
  it('covers every algorithm once (fixed-window with both anchors)', () => {
    expect(reports.map((r) => r.label)).toEqual([
      'fixed-window',
      'fixed-window (anchored)',
      'sliding-window',
      'sliding-log',
      'token-bucket',
      'gcra',
      'leaky-bucket',
    ]);
    for (const r of reports) expect(r.passedByPhase.reduce((a, b) => a + b, 0)).toBe(r.passed);
  });

  it('fixed-window lets 2 x limit through around a boundary; the exact and shaped ones never more than limit', () => {
    expect(byLabel('fixed-window').passedByPhase[0]).toBe(2 * limit);
    expect(byLabel('fixed-window').mostInWindow).toBe(2 * limit);
    for (const label of ['fixed-window (anchored)', 'sliding-log', 'sliding-window', 'leaky-bucket']) {
      expect(byLabel(label).mostInWindow, label).toBeLessThanOrEqual(limit);
    }
  });

  it('gcra and token-bucket decide the same; leaky-bucket admits the same requests and spaces them out', () => {
    expect(byLabel('gcra').outcomes).toEqual(byLabel('token-bucket').outcomes);
    const admitted = (r: Report) => r.outcomes.flat().map((o) => o.allowed);
    expect(admitted(byLabel('leaky-bucket'))).toEqual(admitted(byLabel('gcra')));
    expect(byLabel('leaky-bucket').longestDelayMs).toBe(((limit - 1) * windowMs) / limit);
  });

  it('the buckets let a sustained over-rate client run on its burst (burst + rate x T)', () => {
    const sustained = phases[2]?.arrivals.length ?? 0;
    // Full at the start of the phase, plus 6 s of refill: 10 + 60 of 72.
    expect(byLabel('token-bucket').passedByPhase[2]).toBe(69);
    expect(byLabel('sliding-log').passedByPhase[2]).toBe((sustained / 12) * limit);
  });

  it('mostInRollingWindow counts within (t - windowMs, t]', () => {
    expect(mostInRollingWindow([], 1000)).toBe(0);
    expect(mostInRollingWindow([0, 999, 1000], 1000)).toBe(2);
    expect(mostInRollingWindow([1000, 0, 999, 1], 1000)).toBe(3);
  });
});

describe('the printout', () => {
  it('aligns every column', () => {
    expect(
      formatTable(
        [
          ['a', '1'],
          ['bbb', '22'],
        ],
        ['l', 'r'],
      ),
    ).toEqual(['a     1', 'bbb  22']);
  });

  it('is the table a team reads', () => {
    const table = renderComparison(phases, reports, limit, windowMs).split('\n').slice(0, 11).join('\n');
    expect(table).toMatchInlineSnapshot(`
      "One client, one stream of 121 requests, every algorithm at limit 10 per 1000 ms (burst = limit).

      algorithm                passed  1. boundary  2. burst  3. sustained  most per 1000 ms  max retry-after  max delay
      fixed-window             90/121        20/24     10/25         60/72                20          1000 ms          -
      fixed-window (anchored)  80/121        10/24     10/25         60/72                10          1000 ms          -
      sliding-window           75/121        10/24     10/25         55/72                10          1100 ms          -
      sliding-log              80/121        10/24     10/25         60/72                10          1000 ms          -
      token-bucket             90/121        11/24     10/25         69/72                12           100 ms          -
      gcra                     90/121        11/24     10/25         69/72                12           100 ms          -
      leaky-bucket             90/121        11/24     10/25         69/72                10           100 ms     900 ms
      "
    `);
  });
});
