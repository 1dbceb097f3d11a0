/**
 * @module gcra traces, computed by hand from the contract: emission interval T = windowMs / limit, tolerance
 * burst * T; a request of cost c is admitted iff `max(now, tat) + c * T <= now + burst * T`, then
 * `tat = max(now, tat) + c * T`. With debt = max(0, tat - now): remaining = (burst * T - debt - c * T) / T
 * floored to 1/1000, retryAfterMs = debt + c * T - burst * T and resetMs = debt (+ c * T when admitted),
 * rounded up to the ms.
 */
import { describe, expect, it } from 'vitest';
import { replay, type TraceOptions, type TraceRow } from '../testing/replay.js';

const gcra3: TraceOptions = { policies: { algorithm: 'gcra', limit: 3, windowMs: 1000 } };
const gcra10b20: TraceOptions = { policies: { algorithm: 'gcra', limit: 10, windowMs: 1000, burst: 20 } };

const traces: { name: string; options: TraceOptions; rows: TraceRow[] }[] = [
  {
    name: 'fractional emission interval: T = 333.33 ms is kept exactly, waits rounded up',
    options: gcra3,
    rows: [
      { at: 0, cost: 1, allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 334, delayMs: 0 },
      { at: 0, cost: 1, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 667, delayMs: 0 },
      { at: 0, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 0, cost: 1, allowed: false, remaining: 0, retryAfterMs: 334, resetMs: 1000, delayMs: 0, reason: 'limited' },
      { at: 333, cost: 1, allowed: false, remaining: 0.999, retryAfterMs: 1, resetMs: 667, delayMs: 0 },
      { at: 334, cost: 1, allowed: true, remaining: 0.002, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 1000, cost: 2, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 1000, cost: 0.001, allowed: false, remaining: 0, retryAfterMs: 1, resetMs: 1000, delayMs: 0 },
      { at: 1001, cost: 0.001, allowed: true, remaining: 0.002, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      // 0.002 left at 1001 plus 999 ms of refill is 2.999: the fraction has not drifted, full only at 2001.
      { at: 2000, cost: 3, allowed: false, remaining: 2.999, retryAfterMs: 1, resetMs: 1, delayMs: 0 },
      { at: 2001, cost: 3, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 2334, cost: 1, allowed: false, remaining: 0.999, retryAfterMs: 1, resetMs: 667, delayMs: 0 },
    ],
  },
  {
    name: 'burst above limit (10 per second, 20 at once), weighted costs',
    options: gcra10b20,
    rows: [
      { at: 0, cost: 20, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 2000, delayMs: 0 },
      { at: 0, cost: 1, allowed: false, remaining: 0, retryAfterMs: 100, resetMs: 2000, delayMs: 0 },
      { at: 99, cost: 1, allowed: false, remaining: 0.99, retryAfterMs: 1, resetMs: 1901, delayMs: 0 },
      { at: 100, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 2000, delayMs: 0 },
      { at: 650, cost: 5, allowed: true, remaining: 0.5, retryAfterMs: 0, resetMs: 1950, delayMs: 0 },
      { at: 650, cost: 0.5, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 2000, delayMs: 0 },
      { at: 650, cost: 0.001, allowed: false, remaining: 0, retryAfterMs: 1, resetMs: 2000, delayMs: 0 },
      { at: 2650, cost: 20, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 2000, delayMs: 0 },
    ],
  },
  {
    name: 'a rejected request consumes nothing',
    options: gcra3,
    rows: [
      { at: 0, cost: 2.5, allowed: true, remaining: 0.5, retryAfterMs: 0, resetMs: 834, delayMs: 0 },
      { at: 0, cost: 1, allowed: false, remaining: 0.5, retryAfterMs: 167, resetMs: 834, delayMs: 0 },
      { at: 0, cost: 0.5, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ],
  },
  {
    name: 'clock back past the TAT debt: rejected, with the wait counted from the earlier now',
    options: gcra3,
    rows: [
      { at: 1000, cost: 3, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 500, cost: 1, allowed: false, remaining: 0, retryAfterMs: 834, resetMs: 1500, delayMs: 0 },
      { at: 1334, cost: 1, allowed: true, remaining: 0.002, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ],
  },
  {
    // GCRA keeps no "last seen" time: the debt is tat - now, so while the clock is behind the bucket reads
    // emptier by the step (stricter than token-bucket, which clamps elapsed time at zero). It never refunds,
    // and an admitted request moves the TAT by exactly c * T: three requests "at 1000" fill it, not more.
    name: 'clock back within the debt: stricter while behind, the TAT moves by exactly c * T',
    options: gcra3,
    rows: [
      { at: 1000, cost: 1, allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 334, delayMs: 0 },
      { at: 900, cost: 1, allowed: true, remaining: 0.7, retryAfterMs: 0, resetMs: 767, delayMs: 0 },
      { at: 1000, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 1000, cost: 1, allowed: false, remaining: 0, retryAfterMs: 334, resetMs: 1000, delayMs: 0 },
    ],
  },
  {
    name: 'cost above capacity: its own reason, not retryable, nothing charged',
    options: gcra10b20,
    rows: [
      { at: 0, cost: 20.001, allowed: false, remaining: 20, retryAfterMs: 0, resetMs: 0, delayMs: 0, reason: 'cost-exceeds-capacity' },
      { at: 0, cost: 20, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 2000, delayMs: 0 },
      { at: 0, cost: 21, allowed: false, remaining: 0, retryAfterMs: 0, resetMs: 2000, delayMs: 0, reason: 'cost-exceeds-capacity' },
    ],
  },
];

describe('gcra', () => {
  it.each(traces)('$name', ({ options, rows }) => {
    expect(replay(options, rows)).toEqual(rows);
  });

  it('is the default algorithm', () => {
    const rows = traces[0]?.rows ?? [];
    expect(replay({ policies: { limit: 3, windowMs: 1000 } }, rows)).toEqual(rows);
  });

  it('gives the token bucket the same unit-cost trace, row for row', () => {
    const rows = traces[0]?.rows ?? [];
    expect(replay({ policies: { algorithm: 'token-bucket', limit: 3, windowMs: 1000 } }, rows)).toEqual(rows);
  });
});
