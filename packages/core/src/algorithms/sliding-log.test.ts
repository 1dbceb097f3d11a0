/**
 * @module sliding-log traces, computed by hand from the contract: a request of cost c at `now` is admitted
 * iff the cost admitted in `(now - W, now]` plus c is at most `limit`; only admitted requests are recorded;
 * `retryAfterMs` is when enough of the oldest entries have left the window; `resetMs` is when the newest
 * one leaves. A backward clock records at the key's high-water mark (never earlier than a recorded entry).
 */
import { describe, expect, it } from 'vitest';
import { replay, type TraceOptions, type TraceRow } from '../testing/replay.js';

const log3: TraceOptions = { policies: { algorithm: 'sliding-log', limit: 3, windowMs: 1000 } };
const log5: TraceOptions = { policies: { algorithm: 'sliding-log', limit: 5, windowMs: 1000 } };
const log2: TraceOptions = { policies: { algorithm: 'sliding-log', limit: 2, windowMs: 1000 } };

const traces: { name: string; options: TraceOptions; rows: TraceRow[] }[] = [
  {
    name: 'left-open window (now - W, now]: an entry leaves exactly W ms after it was admitted',
    options: log3,
    rows: [
      { at: 0, cost: 1, allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 500, cost: 1, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 999, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 999, cost: 1, allowed: false, remaining: 0, retryAfterMs: 1, resetMs: 1000, delayMs: 0, reason: 'limited' },
      // The entry of 0 left at 1000; no boundary burst: the rolling window still holds 500 and 999.
      { at: 1000, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 1000, cost: 1, allowed: false, remaining: 0, retryAfterMs: 500, resetMs: 1000, delayMs: 0 },
      { at: 1499, cost: 1, allowed: false, remaining: 0, retryAfterMs: 1, resetMs: 501, delayMs: 0 },
      { at: 1500, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ],
  },
  {
    name: 'weighted costs (2.5, 0.5, 0.001): the wait is until the entry that frees enough leaves',
    options: log3,
    rows: [
      { at: 0, cost: 2.5, allowed: true, remaining: 0.5, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 100, cost: 0.5, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 200, cost: 0.001, allowed: false, remaining: 0, retryAfterMs: 800, resetMs: 900, delayMs: 0 },
      { at: 1000, cost: 2.5, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 1000, cost: 0.001, allowed: false, remaining: 0, retryAfterMs: 100, resetMs: 1000, delayMs: 0 },
      { at: 1100, cost: 0.5, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ],
  },
  {
    name: 'the wait walks several entries until their costs cover the excess',
    options: log5,
    rows: [
      { at: 0, cost: 1, allowed: true, remaining: 4, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 100, cost: 1, allowed: true, remaining: 3, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 200, cost: 3, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      // Excess 2: the entries of 0 and 100 must both leave, so until 1100.
      { at: 300, cost: 2, allowed: false, remaining: 0, retryAfterMs: 800, resetMs: 900, delayMs: 0 },
      { at: 1099, cost: 2, allowed: false, remaining: 1, retryAfterMs: 1, resetMs: 101, delayMs: 0 },
      { at: 1100, cost: 2, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ],
  },
  {
    name: 'a rejected request is not recorded (a steady sender is not locked out)',
    options: log2,
    rows: [
      { at: 0, cost: 2, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 400, cost: 1, allowed: false, remaining: 0, retryAfterMs: 600, resetMs: 600, delayMs: 0 },
      { at: 800, cost: 1, allowed: false, remaining: 0, retryAfterMs: 200, resetMs: 200, delayMs: 0 },
      { at: 1000, cost: 2, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ],
  },
  {
    name: 'clock back: recorded at the high-water mark, so nothing leaves early and nothing is charged twice',
    options: log2,
    rows: [
      { at: 1000, cost: 1, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 500, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1500, delayMs: 0 },
      { at: 500, cost: 1, allowed: false, remaining: 0, retryAfterMs: 1500, resetMs: 1500, delayMs: 0 },
      { at: 1999, cost: 1, allowed: false, remaining: 0, retryAfterMs: 1, resetMs: 1, delayMs: 0 },
      { at: 2000, cost: 1, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ],
  },
  {
    name: 'clock back after entries expired: the window does not move back to resurrect them',
    options: log2,
    rows: [
      { at: 0, cost: 1, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 1500, cost: 1, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 900, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1600, delayMs: 0 },
    ],
  },
  {
    // A rejected request at a later time must not move the window: the clock stepping back 1 ms after it
    // still finds the entry of 0 in (4727 - 4728, 4727].
    name: 'a rejected request leaves the log as it found it, also for a clock stepping back after it',
    options: { policies: { algorithm: 'sliding-log', limit: 1, windowMs: 4728 } },
    rows: [
      { at: 0, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 4728, delayMs: 0 },
      { at: 4728, cost: 1.001, allowed: false, remaining: 1, retryAfterMs: 0, resetMs: 0, delayMs: 0, reason: 'cost-exceeds-capacity' },
      { at: 4727, cost: 0.001, allowed: false, remaining: 0, retryAfterMs: 1, resetMs: 1, delayMs: 0 },
      { at: 4728, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 4728, delayMs: 0 },
    ],
  },
  {
    name: 'cost above capacity: its own reason, not retryable, nothing charged',
    options: log2,
    rows: [
      { at: 0, cost: 1, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      { at: 10, cost: 2.001, allowed: false, remaining: 1, retryAfterMs: 0, resetMs: 990, delayMs: 0, reason: 'cost-exceeds-capacity' },
      { at: 10, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ],
  },
];

describe('sliding-log', () => {
  it.each(traces)('$name', ({ options, rows }) => {
    expect(replay(options, rows)).toEqual(rows);
  });

  it('keeps many entries exactly (the ring grows, wraps and shrinks without losing one)', () => {
    // 100 per 1000 ms, one request every 10 ms for 3 s: each request finds exactly the 99 before it.
    const rows: TraceRow[] = [];
    for (let at = 0; at < 3000; at += 10) {
      rows.push({ at, cost: 1, allowed: true, remaining: at < 990 ? 99 - at / 10 : 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 });
    }
    // Then a burst at 3000: the window (2000, 3000] holds 99 entries (2010..2990), so one fits.
    rows.push({ at: 3000, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 });
    rows.push({ at: 3000, cost: 1, allowed: false, remaining: 0, retryAfterMs: 10, resetMs: 1000, delayMs: 0 });
    // Idle: everything leaves, the ring shrinks, and a full burst fits again.
    rows.push({ at: 10_000, cost: 100, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 });
    const options: TraceOptions = { policies: { algorithm: 'sliding-log', limit: 100, windowMs: 1000 } };
    expect(replay(options, rows)).toEqual(rows);
  });
});

describe('sliding-log memory bound (issue 9)', () => {
  it('keeps at most MAX_LOG_ENTRIES entries per key, and never admits more than the limit', async () => {
    const { createLimiter } = await import('../limiter/create-limiter.js');
    const { MemoryStore } = await import('../stores/memory-store.js');
    const { MAX_LOG_ENTRIES } = await import('./sliding-log.js');
    let now = 0;
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const limiter = createLimiter({ policies: { algorithm: 'sliding-log', limit: 20_000, windowMs: 60_000 }, store, clock: () => now });
    const admittedAt: number[] = [];
    for (let i = 0; i < 30_000; i++) {
      now = i * 2;
      if ((await limiter.check('k')).allowed) admittedAt.push(now);
    }
    const table = [...(store as unknown as { tables: Map<string, { logs: ({ size: number } | undefined)[] }> }).tables.values()][0];
    const sizes = (table?.logs ?? []).filter((r) => r !== undefined).map((r) => r.size);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(MAX_LOG_ENTRIES);
    // Exactness where it matters: in any window, no more than the limit was admitted.
    let lo = 0;
    for (let hi = 0; hi < admittedAt.length; hi++) {
      while ((admittedAt[lo] as number) <= (admittedAt[hi] as number) - 60_000) lo += 1;
      expect(hi - lo + 1).toBeLessThanOrEqual(20_000);
    }
    expect(admittedAt.length).toBeGreaterThanOrEqual(20_000);
  });
});
