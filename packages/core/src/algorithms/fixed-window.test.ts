/**
 * @module fixed-window traces, computed by hand from the contract: at most `limit` per window; the window
 * is `[floor(now / W) * W, +W)` (clock) or opens at the key's first request (anchor: 'first-request');
 * `retryAfterMs` and `resetMs` are the time to the window's end; a rejected request consumes nothing.
 */
import { describe, expect, it } from 'vitest';
import { replay, type TraceOptions, type TraceRow } from '../testing/replay.js';

const clock3: TraceOptions = { policies: { algorithm: 'fixed-window', limit: 3, windowMs: 1000 } };
const anchored2: TraceOptions = { policies: { algorithm: 'fixed-window', limit: 2, windowMs: 1000, anchor: 'first-request' } };

const clockTraces: { name: string; rows: TraceRow[] }[] = [
  {
    name: 'limit per aligned window, full again at the boundary (2 x limit across it)',
    rows: [
      { at: 0, cost: 1, allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 998, cost: 1, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 2, delayMs: 0 },
      { at: 999, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1, delayMs: 0 },
      { at: 999, cost: 1, allowed: false, remaining: 0, retryAfterMs: 1, resetMs: 1, delayMs: 0, reason: 'limited' },
      { at: 1000, cost: 1, allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 1000, delayMs: 0, reason: 'allowed' },
      { at: 1000, cost: 2, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 1999, cost: 1, allowed: false, remaining: 0, retryAfterMs: 1, resetMs: 1, delayMs: 0 },
      { at: 2000, cost: 3, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ],
  },
  {
    name: 'a first request mid-window resets at the aligned end, not a window later',
    rows: [
      { at: 500, cost: 1, allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 500, delayMs: 0 },
      { at: 1000, cost: 1, allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ],
  },
  {
    name: 'weighted costs in milli-units (2.5, 0.5, 0.001)',
    rows: [
      { at: 0, cost: 2.5, allowed: true, remaining: 0.5, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 1, cost: 0.5, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 999, delayMs: 0 },
      { at: 2, cost: 0.001, allowed: false, remaining: 0, retryAfterMs: 998, resetMs: 998, delayMs: 0 },
      { at: 1000, cost: 0.001, allowed: true, remaining: 2.999, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 1000, cost: 2.999, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ],
  },
  {
    name: 'a rejected request consumes nothing: a smaller one still fits after it',
    rows: [
      { at: 0, cost: 2, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 10, cost: 2, allowed: false, remaining: 1, retryAfterMs: 990, resetMs: 990, delayMs: 0 },
      { at: 20, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 980, delayMs: 0 },
    ],
  },
  {
    name: 'clock back into the previous window: the current window stays (no refund), charged once',
    rows: [
      { at: 1500, cost: 2, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 500, delayMs: 0 },
      { at: 900, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1100, delayMs: 0 },
      { at: 900, cost: 1, allowed: false, remaining: 0, retryAfterMs: 1100, resetMs: 1100, delayMs: 0 },
      { at: 1999, cost: 1, allowed: false, remaining: 0, retryAfterMs: 1, resetMs: 1, delayMs: 0 },
      { at: 2000, cost: 1, allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ],
  },
  {
    name: 'cost above capacity: its own reason, not retryable, nothing charged',
    rows: [
      { at: 0, cost: 3.001, allowed: false, remaining: 3, retryAfterMs: 0, resetMs: 0, delayMs: 0, reason: 'cost-exceeds-capacity' },
      { at: 0, cost: 1, allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 400, cost: 50, allowed: false, remaining: 2, retryAfterMs: 0, resetMs: 600, delayMs: 0, reason: 'cost-exceeds-capacity' },
      { at: 400, cost: 2, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 600, delayMs: 0 },
    ],
  },
];

const anchoredTraces: { name: string; rows: TraceRow[] }[] = [
  {
    name: 'the window opens at the first request and reopens at the next request after it ends',
    rows: [
      { at: 250, cost: 1, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 999, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 251, delayMs: 0 },
      // A clock-aligned window would have reset at 1000; this one runs until 1250.
      { at: 1000, cost: 1, allowed: false, remaining: 0, retryAfterMs: 250, resetMs: 250, delayMs: 0 },
      { at: 1249, cost: 1, allowed: false, remaining: 0, retryAfterMs: 1, resetMs: 1, delayMs: 0 },
      { at: 1250, cost: 1, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      // Idle past 2250: the next window opens at 5000, not at an aligned boundary.
      { at: 5000, cost: 1, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 5999, cost: 2, allowed: false, remaining: 1, retryAfterMs: 1, resetMs: 1, delayMs: 0 },
      { at: 5999, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1, delayMs: 0 },
      { at: 6000, cost: 2, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ],
  },
  {
    name: 'weighted costs',
    rows: [
      { at: 10, cost: 1.5, allowed: true, remaining: 0.5, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 20, cost: 0.501, allowed: false, remaining: 0.5, retryAfterMs: 990, resetMs: 990, delayMs: 0 },
      { at: 20, cost: 0.5, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 990, delayMs: 0 },
    ],
  },
  {
    name: 'clock back before the window start: the window stays open until its end, charged once',
    rows: [
      { at: 250, cost: 1, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 100, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1150, delayMs: 0 },
      { at: 100, cost: 1, allowed: false, remaining: 0, retryAfterMs: 1150, resetMs: 1150, delayMs: 0 },
      { at: 1250, cost: 1, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ],
  },
  {
    name: 'cost above capacity',
    rows: [
      { at: 0, cost: 2.001, allowed: false, remaining: 2, retryAfterMs: 0, resetMs: 0, delayMs: 0, reason: 'cost-exceeds-capacity' },
      { at: 0, cost: 2, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ],
  },
];

describe('fixed-window, clock-aligned (limit 3 per 1000 ms)', () => {
  it.each(clockTraces)('$name', ({ rows }) => {
    expect(replay(clock3, rows)).toEqual(rows);
  });

  it("anchor: 'clock' is the default", () => {
    const rows = clockTraces[0]?.rows ?? [];
    const explicit: TraceOptions = { policies: { algorithm: 'fixed-window', limit: 3, windowMs: 1000, anchor: 'clock' } };
    expect(replay(explicit, rows)).toEqual(rows);
  });

  it('aligns windows for negative clock readings too (floor, not truncation)', () => {
    const rows: TraceRow[] = [
      { at: -1, cost: 3, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1, delayMs: 0 },
      { at: 0, cost: 3, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ];
    expect(replay(clock3, rows)).toEqual(rows);
  });

  it('keys are independent', () => {
    const rows: TraceRow[] = [
      { key: 'a', at: 0, cost: 3, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { key: 'b', at: 0, cost: 1, allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { key: 'a', at: 1, cost: 1, allowed: false, remaining: 0, retryAfterMs: 999, resetMs: 999, delayMs: 0 },
    ];
    expect(replay(clock3, rows)).toEqual(rows);
  });
});

describe("fixed-window, anchor: 'first-request' (limit 2 per 1000 ms)", () => {
  it.each(anchoredTraces)('$name', ({ rows }) => {
    expect(replay(anchored2, rows)).toEqual(rows);
  });
});
