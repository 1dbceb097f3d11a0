/**
 * @module token-bucket traces, computed by hand from the contract: capacity `burst` (default `limit`),
 * `limit` tokens refilled per `windowMs` (one every T = windowMs / limit ms), lazily, starting full; a
 * request of cost c is admitted iff the bucket holds c. `remaining` is the tokens left floored to 1/1000,
 * `retryAfterMs` the time until c tokens are there and `resetMs` the time until the bucket is full, both
 * rounded up to the ms. A backward clock refills nothing (elapsed time is clamped at zero).
 */
import { describe, expect, it } from 'vitest';
import { replay, type TraceOptions, type TraceRow } from '../testing/replay.js';

const tb3: TraceOptions = { policies: { algorithm: 'token-bucket', limit: 3, windowMs: 1000 } };
const tb10b5: TraceOptions = { policies: { algorithm: 'token-bucket', limit: 10, windowMs: 1000, burst: 5 } };

const traces: { name: string; options: TraceOptions; rows: TraceRow[] }[] = [
  {
    name: 'fractional refill: limit 3 per 1000 ms is one token per 333.33 ms, waits rounded up',
    options: tb3,
    rows: [
      { at: 0, cost: 1, allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 334, delayMs: 0 },
      { at: 0, cost: 1, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 667, delayMs: 0 },
      { at: 0, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 0, cost: 1, allowed: false, remaining: 0, retryAfterMs: 334, resetMs: 1000, delayMs: 0, reason: 'limited' },
      // 333 ms refill 0.999 of a token: one ms short.
      { at: 333, cost: 1, allowed: false, remaining: 0.999, retryAfterMs: 1, resetMs: 667, delayMs: 0 },
      { at: 334, cost: 1, allowed: true, remaining: 0.002, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 1000, cost: 2, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 1000, cost: 0.001, allowed: false, remaining: 0, retryAfterMs: 1, resetMs: 1000, delayMs: 0 },
      { at: 1001, cost: 0.001, allowed: true, remaining: 0.002, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 5000, cost: 3, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ],
  },
  {
    name: 'burst below limit, weighted cost 2.5',
    options: tb10b5,
    rows: [
      { at: 0, cost: 2.5, allowed: true, remaining: 2.5, retryAfterMs: 0, resetMs: 250, delayMs: 0 },
      { at: 0, cost: 2.5, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 500, delayMs: 0 },
      { at: 100, cost: 2.5, allowed: false, remaining: 1, retryAfterMs: 150, resetMs: 400, delayMs: 0 },
      // The rejected request took nothing: at 250 exactly 2.5 tokens are back.
      { at: 250, cost: 2.5, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 500, delayMs: 0 },
      // Refill stops at the capacity (5), however long the idle time.
      { at: 100_000, cost: 5, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 500, delayMs: 0 },
    ],
  },
  {
    name: 'clock back: no refill while behind, waits counted from the latest time seen, charged once',
    options: tb3,
    rows: [
      { at: 1000, cost: 3, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 500, cost: 1, allowed: false, remaining: 0, retryAfterMs: 834, resetMs: 1500, delayMs: 0 },
      { at: 1333, cost: 1, allowed: false, remaining: 0.999, retryAfterMs: 1, resetMs: 667, delayMs: 0 },
      { at: 1334, cost: 1, allowed: true, remaining: 0.002, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      // Back to 600: the 0.002 left at 1334 is still there, no more and no less.
      { at: 600, cost: 0.002, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1734, delayMs: 0 },
      { at: 1335, cost: 0.003, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ],
  },
  {
    name: 'cost above capacity: its own reason, not retryable, nothing charged',
    options: tb10b5,
    rows: [
      { at: 0, cost: 5.001, allowed: false, remaining: 5, retryAfterMs: 0, resetMs: 0, delayMs: 0, reason: 'cost-exceeds-capacity' },
      { at: 0, cost: 1, allowed: true, remaining: 4, retryAfterMs: 0, resetMs: 100, delayMs: 0 },
      { at: 50, cost: 10, allowed: false, remaining: 4.5, retryAfterMs: 0, resetMs: 50, delayMs: 0, reason: 'cost-exceeds-capacity' },
      { at: 50, cost: 4.5, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 500, delayMs: 0 },
    ],
  },
];

describe('token-bucket', () => {
  it.each(traces)('$name', ({ options, rows }) => {
    expect(replay(options, rows)).toEqual(rows);
  });

  it('burst defaults to limit', () => {
    const rows = traces[0]?.rows ?? [];
    expect(replay({ policies: { algorithm: 'token-bucket', limit: 3, windowMs: 1000, burst: 3 } }, rows)).toEqual(rows);
  });
});
