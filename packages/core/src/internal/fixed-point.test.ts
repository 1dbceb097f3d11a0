/**
 * @module Fixed-point helpers: costs to milli-units (exact for every multiple of 1/1000 written as a
 * decimal, a RangeError-worthy -1 for anything finer), and exact integer floor/ceil division.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ceilDiv, floorDiv, fromMilli, gcd, OVERSIZE_MILLI, requestCostToMilli, toMilli } from './fixed-point.js';

describe('requestCostToMilli', () => {
  it.each([Number.POSITIVE_INFINITY, 1e13, 2 ** 53, 9_007_199_254_741, Number.MAX_VALUE])('%d is past every capacity', (cost) => {
    expect(requestCostToMilli(cost)).toBe(OVERSIZE_MILLI);
  });

  it.each([0, -1, Number.NEGATIVE_INFINITY, Number.NaN, 0.0001])('%d stays invalid', (cost) => {
    expect(requestCostToMilli(cost)).toBe(-1);
  });

  it('agrees with toMilli below 2^53 milli-units, and rejects what is not a number', () => {
    expect(requestCostToMilli(2.5)).toBe(2500);
    expect(requestCostToMilli(9_007_199_254_740)).toBe(9_007_199_254_740_000);
    expect(requestCostToMilli('1e13' as unknown as number)).toBe(-1);
  });
});

describe('toMilli', () => {
  it.each([
    [1, 1000],
    [0.001, 1],
    [0.1, 100],
    [0.3, 300],
    [2.5, 2500],
    [2.675, 2675],
    [4095.999, 4_095_999],
    [1_000_000.001, 1_000_000_001],
  ])('%d is %d milli-units', (cost, milli) => {
    expect(toMilli(cost)).toBe(milli);
  });

  it.each([0, -1, -0.001, 0.0001, 0.0015, 1.0005, 1_000_000.0005, 123_456_789.0004, Number.NaN, Number.POSITIVE_INFINITY, 1e16])(
    '%d is not a positive multiple of 1/1000 that fits',
    (cost) => {
      expect(toMilli(cost)).toBe(-1);
    },
  );

  it('rejects what is not a number', () => {
    expect(toMilli('1' as unknown as number)).toBe(-1);
    expect(toMilli(null as unknown as number)).toBe(-1);
  });

  it('reads every multiple of 1/1000 written as a decimal exactly (up to 2^51 milli-units, where doubles stop resolving them)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 51 }), (m) => {
        expect(toMilli(m / 1000)).toBe(m);
      }),
      { numRuns: 2000 },
    );
  });

  it('rejects every cost half a milli-unit off, up to 2^48 milli-units', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 48 }), (m) => {
        expect(toMilli((m + 0.5) / 1000)).toBe(-1);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('integer division', () => {
  it('floorDiv and ceilDiv are exact below 2^53', () => {
    fc.assert(
      fc.property(fc.maxSafeNat(), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (a, b) => {
        const q = floorDiv(a, b);
        expect(q * b <= a && (q + 1) * b > a).toBe(true);
        const c = ceilDiv(a, b);
        expect(c === q || c === q + 1).toBe(true);
        expect(c * b >= a && (c - 1) * b < a).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('gcd and fromMilli', () => {
    expect(gcd(1000, 3000)).toBe(1000);
    expect(gcd(60_000, 10_000)).toBe(10_000);
    expect(gcd(7, 1000)).toBe(1);
    expect(fromMilli(2999)).toBe(2.999);
    expect(fromMilli(-5)).toBe(0);
  });
});
