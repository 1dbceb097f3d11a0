/**
 * @module sliding-window traces, computed by hand from the contract: two clock-aligned counters and the
 * estimate `prev * (W - e) / W + curr` (e = ms since the current window opened); a request of cost c is
 * admitted iff `estimate + c <= limit`. `remaining` is `limit - estimate` floored to 1/1000; `retryAfterMs`
 * is the first ms at which the estimate has fallen enough; `resetMs` is when both counters have aged out.
 */
import { describe, expect, it } from 'vitest';
import { replay, type TraceOptions, type TraceRow } from '../testing/replay.js';

const sw10: TraceOptions = { policies: { algorithm: 'sliding-window', limit: 10, windowMs: 1000 } };

const traces: { name: string; rows: TraceRow[] }[] = [
  {
    name: 'the previous window weighs in linearly across the boundary',
    rows: [
      { at: 0, cost: 4, allowed: true, remaining: 6, retryAfterMs: 0, resetMs: 2000, delayMs: 0 },
      { at: 900, cost: 6, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1100, delayMs: 0 },
      // Full now; from 1000 prev = 10 weighs (1000 - e) / 1000, so one more fits at e = 100.
      { at: 999, cost: 1, allowed: false, remaining: 0, retryAfterMs: 101, resetMs: 1001, delayMs: 0, reason: 'limited' },
      { at: 1000, cost: 1, allowed: false, remaining: 0, retryAfterMs: 100, resetMs: 1000, delayMs: 0 },
      { at: 1099, cost: 1, allowed: false, remaining: 0.99, retryAfterMs: 1, resetMs: 901, delayMs: 0 },
      { at: 1100, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1900, delayMs: 0 },
      // e = 500: estimate 10 * 0.5 + 1 = 6.
      { at: 1500, cost: 2, allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 1500, delayMs: 0 },
      { at: 1500, cost: 3, allowed: false, remaining: 2, retryAfterMs: 100, resetMs: 1500, delayMs: 0 },
      { at: 1599, cost: 3, allowed: false, remaining: 2.99, retryAfterMs: 1, resetMs: 1401, delayMs: 0 },
      { at: 1600, cost: 3, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1400, delayMs: 0 },
    ],
  },
  {
    name: 'fractional remaining, and a wait that crosses into the next window',
    rows: [
      { at: 1100, cost: 1, allowed: true, remaining: 9, retryAfterMs: 0, resetMs: 1900, delayMs: 0 },
      { at: 1500, cost: 2, allowed: true, remaining: 7, retryAfterMs: 0, resetMs: 1500, delayMs: 0 },
      // 2999: prev = 3 weighs 1 / 1000: estimate 0.003, remaining 9.997; 10 fits only once prev is gone.
      { at: 2999, cost: 10, allowed: false, remaining: 9.997, retryAfterMs: 1, resetMs: 1, delayMs: 0 },
      { at: 3000, cost: 10, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 2000, delayMs: 0 },
      // Full window 3000; at 3999 the wait runs into window 4000 until prev (10) weighs 9.
      { at: 3999, cost: 1, allowed: false, remaining: 0, retryAfterMs: 101, resetMs: 1001, delayMs: 0 },
    ],
  },
  {
    name: 'a window skipped entirely forgets both counters',
    rows: [
      { at: 0, cost: 10, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 2000, delayMs: 0 },
      { at: 2000, cost: 10, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 2000, delayMs: 0 },
    ],
  },
  {
    name: 'weighted costs (2.5, 0.001)',
    rows: [
      { at: 0, cost: 2.5, allowed: true, remaining: 7.5, retryAfterMs: 0, resetMs: 2000, delayMs: 0 },
      { at: 0, cost: 7.5, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 2000, delayMs: 0 },
      // 0.001 fits once the full window, as prev, has lost 1/1000 of its weight: at 1001.
      { at: 10, cost: 0.001, allowed: false, remaining: 0, retryAfterMs: 991, resetMs: 1990, delayMs: 0 },
      { at: 1001, cost: 0.001, allowed: true, remaining: 0.009, retryAfterMs: 0, resetMs: 1999, delayMs: 0 },
    ],
  },
  {
    name: 'a rejected request consumes nothing',
    rows: [
      { at: 0, cost: 8, allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 2000, delayMs: 0 },
      { at: 100, cost: 3, allowed: false, remaining: 2, retryAfterMs: 1025, resetMs: 1900, delayMs: 0 },
      { at: 200, cost: 2, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1800, delayMs: 0 },
    ],
  },
  {
    name: 'clock back into the previous window: the estimate parks at the window start (no refund), charged once',
    rows: [
      { at: 1500, cost: 5, allowed: true, remaining: 5, retryAfterMs: 0, resetMs: 1500, delayMs: 0 },
      { at: 800, cost: 5, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 2200, delayMs: 0 },
      { at: 800, cost: 1, allowed: false, remaining: 0, retryAfterMs: 1300, resetMs: 2200, delayMs: 0 },
      { at: 2099, cost: 1, allowed: false, remaining: 0.99, retryAfterMs: 1, resetMs: 901, delayMs: 0 },
      { at: 2100, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1900, delayMs: 0 },
    ],
  },
  {
    name: 'cost above capacity: its own reason, not retryable, nothing charged',
    rows: [
      { at: 0, cost: 10.001, allowed: false, remaining: 10, retryAfterMs: 0, resetMs: 0, delayMs: 0, reason: 'cost-exceeds-capacity' },
      { at: 0, cost: 10, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 2000, delayMs: 0 },
    ],
  },
];

describe('sliding-window (limit 10 per 1000 ms)', () => {
  it.each(traces)('$name', ({ rows }) => {
    expect(replay(sw10, rows)).toEqual(rows);
  });
});
