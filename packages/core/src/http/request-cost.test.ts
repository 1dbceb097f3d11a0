/**
 * @module `boundedCost`: whatever a client sends, a whole number of units from min to max.
 */
import { describe, expect, it } from 'vitest';
import { boundedCost } from './request-cost.js';

describe('boundedCost', () => {
  it.each([
    ['4', 4],
    [' 3 ', 3],
    [4, 4],
    // A fraction costs a whole unit more, never less: ?rows=0.001 is a row.
    ['0.001', 1],
    [0.001, 1],
    ['2.5', 3],
    // Below min costs min, above max costs max.
    ['0', 1],
    [0, 1],
    [-7, 1],
    ['6', 5],
    ['99999999999999999999999', 5],
    [Number.POSITIVE_INFINITY, 5],
  ])('%j costs %d of 1..5', (value, cost) => {
    expect(boundedCost(value, { max: 5 })).toBe(cost);
  });

  it.each([undefined, null, '', 'abc', '1e3', '0x10', '-1', 'Infinity', 'NaN', Number.NaN, ['1', '2'], { rows: 2 }, true])(
    '%j is not a count: it costs the fallback',
    (value) => {
      expect(boundedCost(value, { max: 5 })).toBe(1);
      expect(boundedCost(value, { max: 5, fallback: 2 })).toBe(2);
    },
  );

  it('keeps to min', () => {
    expect(boundedCost('1', { max: 10, min: 3 })).toBe(3);
    expect(boundedCost(undefined, { max: 10, min: 3 })).toBe(3);
    expect(boundedCost('7.2', { max: 10, min: 3 })).toBe(8);
  });

  it('refuses bounds that are not whole units, with a coded error naming the bound', () => {
    expect(() => boundedCost('1', { max: 2.5 })).toThrow(/^ERR_RL_INVALID_COST_BOUND: 'max' must be a positive integer/);
    expect(() => boundedCost('1', { max: 0 })).toThrow(/^ERR_RL_INVALID_COST_BOUND: 'max'/);
    expect(() => boundedCost('1', undefined as never)).toThrow(/^ERR_RL_INVALID_COST_BOUND: 'max'/);
    expect(() => boundedCost('1', { max: 5, min: 6 })).toThrow(/^ERR_RL_INVALID_COST_BOUND: 'min' must be an integer from 1 to max \(5\)/);
    expect(() => boundedCost('1', { max: 5, fallback: 0 })).toThrow(/^ERR_RL_INVALID_COST_BOUND: 'fallback'/);
    expect(() => boundedCost('1', { max: 5, min: 2, fallback: 1 })).toThrow(/^ERR_RL_INVALID_COST_BOUND: 'fallback'/);
  });
});
