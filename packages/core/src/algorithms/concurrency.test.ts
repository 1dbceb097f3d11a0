import { describe, expect, it } from 'vitest';
import { acquireLease, deadlineRange, expireLeases, type LeaseTable, releaseLease, renewLease } from './concurrency.js';

describe('concurrency kernel', () => {
  it('admits up to limit live leases, and again once one is released', () => {
    const t: LeaseTable = new Map();
    expect(acquireLease(t, 0, 2, 100, 1)).toBe(true);
    expect(acquireLease(t, 0, 2, 100, 2)).toBe(true);
    expect(acquireLease(t, 0, 2, 100, 3)).toBe(false);
    expect(releaseLease(t, 1)).toBe(true);
    expect(releaseLease(t, 1)).toBe(false);
    expect(acquireLease(t, 0, 2, 100, 4)).toBe(true);
  });

  it('expires a lease at its deadline (left-closed: at now + leaseMs it is gone)', () => {
    const t: LeaseTable = new Map();
    acquireLease(t, 0, 1, 100, 1);
    expect(acquireLease(t, 99, 1, 100, 2)).toBe(false);
    expect(acquireLease(t, 100, 1, 100, 2)).toBe(true);
    // The expired holder's late release does not free the new holder's slot.
    expect(releaseLease(t, 1)).toBe(false);
    expect(t.size).toBe(1);
  });

  it('renews a live lease, not an expired one', () => {
    const t: LeaseTable = new Map();
    acquireLease(t, 0, 1, 100, 1);
    expect(renewLease(t, 1, 90, 100)).toBe(true);
    expect(acquireLease(t, 150, 1, 100, 2)).toBe(false);
    expect(renewLease(t, 1, 190, 100)).toBe(false);
    expect(t.size).toBe(0); // renewing dropped the expired lease, as the Lua twin does
    acquireLease(t, 190, 1, 100, 2);
    expect(expireLeases(t, 290)).toBe(1);
  });

  it('reports the earliest and latest deadlines', () => {
    const t: LeaseTable = new Map();
    expect(deadlineRange(t, 5)).toEqual([5, 5]);
    acquireLease(t, 0, 3, 100, 1);
    acquireLease(t, 30, 3, 100, 2);
    expect(deadlineRange(t, 40)).toEqual([100, 130]);
  });
});
