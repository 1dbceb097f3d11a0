/**
 * @module Tests of the statistics helpers the reports are built on.
 */
import { describe, expect, it } from 'vitest';
import { bootstrapMedianInterval, median, quantile, range } from './stats.js';

describe('median', () => {
  it('takes the middle value of an odd count and the mean of the middle two of an even count', () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it('is NaN for no values', () => {
    expect(median([])).toBeNaN();
  });
});

describe('quantile', () => {
  it('uses the nearest rank', () => {
    const values = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(quantile(values, 0.5)).toBe(50);
    expect(quantile(values, 0.99)).toBe(99);
    expect(quantile(values, 1)).toBe(100);
    expect(quantile(values, 0)).toBe(1);
  });

  it('rejects a q outside [0, 1]', () => {
    expect(() => quantile([1], 1.5)).toThrow(RangeError);
    expect(() => quantile([1], Number.NaN)).toThrow(RangeError);
  });
});

describe('range', () => {
  it('finds the extremes, NaN when empty', () => {
    expect(range([3, -1, 7])).toEqual({ min: -1, max: 7 });
    expect(range([])).toEqual({ min: Number.NaN, max: Number.NaN });
  });
});

describe('bootstrapMedianInterval', () => {
  it('brackets the pooled median, and narrows as the groups agree', () => {
    const spread = [
      [0.9, 0.91, 0.92],
      [1.0, 1.01, 1.02],
      [1.1, 1.11, 1.12],
      [0.95, 0.96, 0.97],
      [1.05, 1.06, 1.07],
    ];
    const wide = bootstrapMedianInterval(spread);
    const pooled = median(spread.flat());
    expect(wide.low).toBeLessThan(pooled);
    expect(wide.high).toBeGreaterThan(pooled);
    const agreeing = spread.map((g) => g.map((v) => 1 + (v - 1) / 10));
    const narrow = bootstrapMedianInterval(agreeing);
    expect(narrow.high - narrow.low).toBeLessThan((wide.high - wide.low) / 5);
  });

  it('is one point when every group holds the same value, and reproducible', () => {
    expect(bootstrapMedianInterval([[1.02], [1.02, 1.02]])).toEqual({ low: 1.02, high: 1.02 });
    const groups = [
      [1, 2],
      [3, 4],
      [5, 9],
    ];
    expect(bootstrapMedianInterval(groups)).toEqual(bootstrapMedianInterval(groups));
  });

  it('is NaN without values, and rejects a level outside (0, 1)', () => {
    expect(bootstrapMedianInterval([[], []])).toEqual({ low: Number.NaN, high: Number.NaN });
    expect(() => bootstrapMedianInterval([[1]], 1)).toThrow(RangeError);
  });
});
