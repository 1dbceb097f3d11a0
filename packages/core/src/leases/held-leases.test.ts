import { describe, expect, it } from 'vitest';
import { compilePolicy } from '../policy.js';
import { F_ALLOWED, F_CHARGED, RESULT_STRIDE, type StorePlan } from '../stores/store.js';
import { type Held, HeldLeases } from './held-leases.js';

const policy = compilePolicy({ name: 'jobs', algorithm: 'concurrency', limit: 10, leaseMs: 30_000 }, 'policies', false);
const plan: StorePlan = { policies: [policy], enforcedCount: 1 };

/** A lease of key 'k' held until 1,000: in the store, or granted in an outage and not put in yet. */
function lease(n: number, inStore: boolean): Held {
  return { key: 'k', plan, lease: n, renewUntil: 1_000, leaseMs: 30_000, until: 1_000, inStore, putBack: undefined };
}

/** The store's answer granting a lease with `inUse` in use before it. */
function grant(inUse: number): Float64Array {
  const r = new Float64Array(RESULT_STRIDE);
  r[0] = F_ALLOWED | F_CHARGED;
  r[1] = (10 - inUse - 1) * 1000;
  return r;
}

describe('HeldLeases.fewerThanHeld', () => {
  it('a grant counting fewer leases in use than held in the store: the store lost some', () => {
    const held = new HeldLeases();
    for (let i = 0; i < 3; i++) held.add(lease(i, true));
    expect(held.fewerThanHeld('k', plan, [policy], grant(3), 0)).toBe(false);
    expect(held.fewerThanHeld('k', plan, [policy], grant(2), 0)).toBe(true);
    // Past their deadline they count nowhere.
    expect(held.fewerThanHeld('k', plan, [policy], grant(0), 1_000)).toBe(false);
  });

  it("a grant that does not fit beside the outage's leases not in the store yet (the grant that ended the outage)", () => {
    const held = new HeldLeases();
    for (let i = 0; i < 9; i++) held.add(lease(i, false));
    // 9 granted by the failure mode, none in the store yet: a grant with 0 in use fits (the tenth) ...
    expect(held.fewerThanHeld('k', plan, [policy], grant(0), 0)).toBe(false);
    // ... and one with 1 in use would be the eleventh. Before: not seen, granted.
    expect(held.fewerThanHeld('k', plan, [policy], grant(1), 0)).toBe(true);
    // Once they are in the store, the store's count includes them.
    for (const h of held) h.inStore = true;
    expect(held.fewerThanHeld('k', plan, [policy], grant(9), 0)).toBe(false);
  });
});
