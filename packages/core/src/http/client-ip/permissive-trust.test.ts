import { describe, expect, it } from 'vitest';
import { isPermissiveTrust, isPermissiveTrustFunction } from './permissive-trust.js';

/** proxy-addr's hop-count and CIDR semantics, written out for the probe. */
const hops = (n: number) => (_a: string, i: number) => i < n;
const ipv4Under128 = (a: string) => !a.includes(':') && Number(a.split('.')[0]) < 128;

describe('isPermissiveTrustFunction', () => {
  it.each([
    ['true', () => true, true],
    ['4 hops', hops(4), true],
    ['100 hops', hops(100), true],
    ['0.0.0.0/1', ipv4Under128, true],
    ['3 hops', hops(3), false],
    ['1 hop', hops(1), false],
    ['loopback only', (a: string) => a === '127.0.0.1' || a === '::1', false],
    ['nothing', () => false, false],
  ])('%s -> %s', (_label, fn, expected) => {
    expect(isPermissiveTrustFunction(fn)).toBe(expected);
  });

  it('answers false for what is not a function, and survives a resolver that throws', () => {
    expect(isPermissiveTrustFunction(undefined)).toBe(false);
    expect(
      isPermissiveTrust(() => {
        throw new Error('boom');
      }),
    ).toBe(false);
  });
});
