/**
 * @module Tests of the statistics helpers the reports are built on.
 */
import { describe, expect, it } from 'vitest';
import { median, quantile, range } from './stats.js';

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
