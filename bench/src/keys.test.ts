/**
 * @module Tests of the key generator and the shuffled visiting order.
 */
import { describe, expect, it } from 'vitest';
import { makeKeys, shuffledOrder } from './keys.js';

describe('makeKeys', () => {
  it('makes distinct IPv4-shaped keys', () => {
    const keys = makeKeys(70_000);
    expect(keys[0]).toBe('ip:10.0.0.0');
    expect(keys[65_537]).toBe('ip:10.1.0.1');
    expect(new Set(keys).size).toBe(70_000);
  });
});

describe('shuffledOrder', () => {
  it('is a permutation, the same on every call, and not the identity', () => {
    const a = shuffledOrder(1000);
    expect([...a].sort((x, y) => x - y)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(shuffledOrder(1000)).toEqual(a);
    expect(a.some((v, i) => v !== i)).toBe(true);
  });

  it('handles one key', () => {
    expect([...shuffledOrder(1)]).toEqual([0]);
  });
});
