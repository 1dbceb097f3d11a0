/**
 * @module The replay's fast path decides exactly as createLimiter on a virtual clock: random traces over all six algorithms, multi-policy candidates, odd costs, keys the core hashes (long, `sha256:`-prefixed, with an unpaired surrogate) and a clock stepping back.
 */
import { createLimiter, type Decision, MemoryStore, type PolicyOptions } from '@tollgate/core';
import { describe, expect, it } from 'vitest';
import { createRandom } from '../synthetic/seeded-random.js';
import { createCandidateLimiter } from './candidate-limiter.js';

const SILENT = { warn() {}, error() {} };

const CANDIDATES: readonly (readonly PolicyOptions[])[] = [
  [{ algorithm: 'fixed-window', limit: 5, windowMs: 1000 }],
  [{ algorithm: 'fixed-window', limit: 3, windowMs: 700, anchor: 'first-request' }],
  [{ algorithm: 'sliding-log', limit: 4, windowMs: 1000 }],
  [{ algorithm: 'sliding-window', limit: 6, windowMs: 1500 }],
  [{ algorithm: 'token-bucket', limit: 3, windowMs: 1000, burst: 5 }],
  [{ algorithm: 'gcra', limit: 7, windowMs: 2000 }],
  [{ algorithm: 'leaky-bucket', limit: 2, windowMs: 1000, burst: 4, delayAfter: 1 }],
  [
    { name: 'second', algorithm: 'token-bucket', limit: 2, windowMs: 1000, burst: 3 },
    { name: 'minute', algorithm: 'sliding-window', limit: 20, windowMs: 60_000 },
    { name: 'shaper', algorithm: 'leaky-bucket', limit: 4, windowMs: 1000 },
  ],
];

describe('candidate limiter fast path', () => {
  it.each(CANDIDATES.map((c, i) => [i, c] as const))('decides as createLimiter with a virtual clock (candidate %i)', (index, policies) => {
    const r = createRandom(1000 + index);
    let now = 1_700_000_000_000;
    const clock = () => now;
    const fast = createCandidateLimiter(policies, clock, 1_000_000, SILENT);
    const reference = createLimiter({ policies, store: new MemoryStore({ sweepIntervalMs: 0 }), clock });
    // Keys the core stores under their digest: their costs of 1 and of others must meet in one bucket.
    const keys = ['a', 'b', 'c', 'x'.repeat(600), 'sha256:deadbeef', 'half \ud800 pair'];
    let admitted = 0;
    let rejected = 0;
    for (let i = 0; i < 5000; i++) {
      // Mostly forward in small steps, sometimes a burst at one instant, sometimes a step back.
      const step = r.next();
      now += step < 0.3 ? 0 : step < 0.95 ? r.int(1, 400) : -r.int(1, 300);
      const key = r.pick(keys);
      const cost = r.next() < 0.8 ? 1 : r.pick([0.5, 2, 3, 1.5, 9]);
      fast.decide(key, cost);
      const d = reference.decide(key, { cost }) as Decision;
      expect({ i, allowed: fast.verdict.allowed, delayMs: fast.verdict.delayMs, exceeds: fast.verdict.exceeds }).toEqual({
        i,
        allowed: d.allowed,
        delayMs: d.delayMs,
        exceeds: d.reason === 'cost-exceeds-capacity',
      });
      if (d.allowed) admitted++;
      else rejected++;
    }
    // The trace exercises both outcomes.
    expect(admitted).toBeGreaterThan(100);
    expect(rejected).toBeGreaterThan(100);
  });
});
