/**
 * @module sliding-window vectors for the two edges the random traces rarely reach (issue 29):
 * - a clock stepping back across a boundary, into the window before a charged one: the estimate is read at
 *   the charged window's start (the key's window never moves back), so the previous window weighs in full;
 * - counters holding more than the limit (state charged under a higher limit, read under a lower one): what is
 *   left is 0, never negative;
 * - a wait that ends one ms before the next boundary (the edge between the in-window and the next-window formulas).
 */
import { describe, expect, it } from 'vitest';
import { compilePolicy } from '../policy.js';
import { replay, type TraceRow } from '../testing/replay.js';
import { createOutcome, type StateTable } from './kernel.js';
import { slidingWindow } from './sliding-window.js';

describe('sliding-window', () => {
  it('a clock stepping back across a boundary reads the estimate at the window start', () => {
    const rows: TraceRow[] = [
      { at: 500, cost: 5, allowed: true, remaining: 5, retryAfterMs: 0, resetMs: 1500, delayMs: 0 },
      // Window [1000, 2000) at 1500: 5 * (1000 - 500) / 1000 = 2.5 of the previous window weigh in.
      { at: 1500, cost: 1, allowed: true, remaining: 6.5, retryAfterMs: 0, resetMs: 1500, delayMs: 0 },
      // Back to 900: read at 1000, where the previous window weighs all 5: 5 + 1 + 4 = 10 fits exactly.
      { at: 900, cost: 4, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 2100, delayMs: 0 },
      // Full: 0.5 fits once 0.5 of the previous window has left the estimate, 100 ms after 1000, so at 1100.
      { at: 900, cost: 0.5, allowed: false, remaining: 0, retryAfterMs: 200, resetMs: 2100, delayMs: 0 },
    ];
    expect(replay({ policies: { algorithm: 'sliding-window', limit: 10, windowMs: 1000 } }, rows)).toEqual(rows);
  });

  it('a wait of one ms less than the rest of the window is answered in the window, not at the next boundary', () => {
    // Window 10 ms, limit 10: 8 charged in [0, 10); at 10 a request of 9 fits once 8 * (10 - e) + 9 * 10 <= 100,
    // at e = 9 (8 * 2 + 90 = 106 at e = 8): a wait of 9, one less than the 10 left of the window.
    const rows: TraceRow[] = [
      { at: 0, cost: 8, allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 20, delayMs: 0 },
      { at: 10, cost: 9, allowed: false, remaining: 2, retryAfterMs: 9, resetMs: 10, delayMs: 0 },
      { at: 18, cost: 9, allowed: false, remaining: 8.4, retryAfterMs: 1, resetMs: 2, delayMs: 0 },
      { at: 19, cost: 9, allowed: true, remaining: 0.2, retryAfterMs: 0, resetMs: 11, delayMs: 0 },
    ];
    expect(replay({ policies: { algorithm: 'sliding-window', limit: 10, windowMs: 10 } }, rows)).toEqual(rows);
  });

  it('counters above a lowered limit leave 0, never a negative remaining', () => {
    const high = compilePolicy({ name: 'p', algorithm: 'sliding-window', limit: 10, windowMs: 1000 }, 'p', false);
    const low = compilePolicy({ name: 'p', algorithm: 'sliding-window', limit: 3, windowMs: 1000 }, 'p', false);
    const t: StateTable = { f: new Float64Array(3), stride: 3, logs: [] };
    slidingWindow.init(t, 0);
    slidingWindow.commit(t, 0, 100, 8000, high);
    const out = createOutcome();
    slidingWindow.evaluate(t, 0, 200, 1000, low, out);
    expect(out).toMatchObject({ allowed: false, remaining: 0 });
    slidingWindow.evaluate(t, 0, 200, Number.POSITIVE_INFINITY, low, out);
    expect(out).toMatchObject({ allowed: false, exceeds: true, remaining: 0 });
    // In the next window the 8 weigh in part: 8 * 0.9 = 7.2 still above 3.
    slidingWindow.evaluate(t, 0, 1100, Number.POSITIVE_INFINITY, low, out);
    expect(out).toMatchObject({ remaining: 0 });
  });
});
