/**
 * @module The contract every algorithm shares (kernel.ts), checked on each: `retryAfterMs` is exact (the
 * same request retried after exactly that long, with nothing in between, is admitted; one ms earlier it
 * is not), and a cost above capacity is the same non-retryable answer everywhere.
 */
import { describe, expect, it } from 'vitest';
import { probe, type TraceOptions, type TraceStep } from '../testing/replay.js';
import { ALGORITHM_VARIANTS, variantPolicy } from '../testing/variants.js';

/**
 * A history (`warmup`), then the same request of `cost` at `at` sent until one is rejected: every algorithm
 * gets a rejection to time, whatever it admitted before.
 */
const scenarios: { name: string; warmup: TraceStep[]; at: number; cost: number }[] = [
  { name: 'unit costs from idle', warmup: [], at: 250, cost: 1 },
  { name: 'weighted costs', warmup: [{ at: 0, cost: 2.5 }], at: 400, cost: 0.7 },
  {
    name: 'spread over a window boundary',
    warmup: [
      { at: 600, cost: 1 },
      { at: 900, cost: 1 },
      { at: 999, cost: 0.4 },
    ],
    at: 1100,
    cost: 1,
  },
  { name: 'clock stepped back', warmup: [{ at: 1000, cost: 2 }], at: 600, cost: 1 },
  { name: 'a sliver of 0.001', warmup: [{ at: 0, cost: 2.999 }], at: 5, cost: 0.001 },
];

// Limit 3 per 1000 ms: T = 333.33 ms for the buckets, so every wait involves rounding.
describe.each(ALGORITHM_VARIANTS)('$label', (variant) => {
  const options: TraceOptions = { policies: variantPolicy(variant, { limit: 3, windowMs: 1000 }) };

  it.each(scenarios)('retryAfterMs is exact: $name', ({ warmup, at, cost }) => {
    const prefix = [...warmup];
    let first = probe(options, prefix, at, cost);
    while (first.allowed && prefix.length < 100) {
      prefix.push({ at, cost });
      first = probe(options, prefix, at, cost);
    }
    expect(first.allowed).toBe(false);
    expect(first.reason).toBe('limited');
    const wait = first.retryAfterMs;
    expect(Number.isInteger(wait) && wait >= 1).toBe(true);
    expect(probe(options, prefix, at + wait, cost).allowed).toBe(true);
    expect(probe(options, prefix, at + wait - 1, cost).allowed).toBe(false);
  });

  it('a cost above capacity is not retryable and charges nothing', () => {
    const prefix: TraceStep[] = [{ at: 0, cost: 1 }];
    const d = probe(options, prefix, 0, 3.001);
    expect(d).toMatchObject({ allowed: false, limited: true, reason: 'cost-exceeds-capacity', retryAfterMs: 0, delayMs: 0, remaining: 2 });
    expect(d.policies[0]?.reason).toBe('cost-exceeds-capacity');
    const after = probe(options, [...prefix, { at: 0, cost: 3.001 }], 0, 2);
    expect(after).toMatchObject({ allowed: true, remaining: 0 });
  });
});
