/**
 * @module leaky-bucket (shaper) traces, computed by hand from the contract: GCRA admission (T = windowMs /
 * limit, `burst` may arrive at once) plus `delayMs`, the debt found before the request minus `delayAfter`
 * requests' worth, rounded up to the ms: requests leave one per T. Checked against nginx `limit_req`
 * (`rate=10r/s burst=5`, our `burst: 6`): ten simultaneous requests wait 0, 100, ..., 500 ms and four are
 * rejected; nginx `delay=N` is our `delayAfter: N`.
 */
import { describe, expect, it } from 'vitest';
import { replay, type TraceOptions, type TraceRow } from '../testing/replay.js';

const nginx: TraceOptions = { policies: { algorithm: 'leaky-bucket', limit: 10, windowMs: 1000, burst: 6 } };

/** Ten requests at the same instant, `delays[i]` for the admitted ones; the rest rejected. */
function simultaneous(delays: readonly number[]): TraceRow[] {
  return Array.from({ length: 10 }, (_, i): TraceRow => {
    const delayMs = delays[i];
    return delayMs === undefined
      ? { at: 0, cost: 1, allowed: false, remaining: 0, retryAfterMs: 100, resetMs: 600, delayMs: 0, reason: 'limited' }
      : { at: 0, cost: 1, allowed: true, remaining: 5 - i, retryAfterMs: 0, resetMs: 100 * (i + 1), delayMs, reason: 'allowed' };
  });
}

describe('leaky-bucket, the nginx vector (limit 10 per 1000 ms, burst 6)', () => {
  it('ten simultaneous requests: delays 0, 100, ..., 500 ms and four rejections', () => {
    const rows = simultaneous([0, 100, 200, 300, 400, 500]);
    expect(replay(nginx, rows)).toEqual(rows);
  });

  it.each([
    { delayAfter: 0, delays: [0, 100, 200, 300, 400, 500] },
    { delayAfter: 1, delays: [0, 0, 100, 200, 300, 400] },
    { delayAfter: 2, delays: [0, 0, 0, 100, 200, 300] },
    { delayAfter: 5, delays: [0, 0, 0, 0, 0, 0] },
    { delayAfter: 100, delays: [0, 0, 0, 0, 0, 0] },
  ])('delayAfter: $delayAfter (nginx delay=$delayAfter) lets that many excess requests through undelayed', ({ delayAfter, delays }) => {
    const rows = simultaneous(delays);
    expect(replay({ policies: { algorithm: 'leaky-bucket', limit: 10, windowMs: 1000, burst: 6, delayAfter } }, rows)).toEqual(rows);
  });

  it('the queue drains at the rate: later arrivals wait for the ones ahead', () => {
    const rows: TraceRow[] = [
      ...simultaneous([0, 100, 200, 300, 400, 500]).slice(0, 6),
      // 100 ms later one slot has left: admitted, behind five others (500 ms).
      { at: 100, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 600, delayMs: 500 },
      // At 150 half a slot has drained (0.5 left); the next whole slot frees at 200.
      { at: 150, cost: 1, allowed: false, remaining: 0.5, retryAfterMs: 50, resetMs: 550, delayMs: 0 },
      { at: 200, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 600, delayMs: 500 },
      // Idle past the TAT (800): the first request of an idle key waits 0.
      { at: 1000, cost: 1, allowed: true, remaining: 5, retryAfterMs: 0, resetMs: 100, delayMs: 0 },
    ];
    expect(replay(nginx, rows)).toEqual(rows);
  });

  it('clock back: the request queues behind the ones admitted, and moves the queue by exactly one slot', () => {
    const rows: TraceRow[] = [
      { at: 1000, cost: 1, allowed: true, remaining: 5, retryAfterMs: 0, resetMs: 100, delayMs: 0 },
      { at: 1000, cost: 1, allowed: true, remaining: 4, retryAfterMs: 0, resetMs: 200, delayMs: 100 },
      { at: 1000, cost: 1, allowed: true, remaining: 3, retryAfterMs: 0, resetMs: 300, delayMs: 200 },
      // At 900 the queue ends at 1300: wait 400 ms by this clock, leaving at 1300 like a 4th request at 1000.
      { at: 900, cost: 1, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 500, delayMs: 400 },
      { at: 1000, cost: 1, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 500, delayMs: 400 },
      { at: 1000, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 600, delayMs: 500 },
      { at: 1000, cost: 1, allowed: false, remaining: 0, retryAfterMs: 100, resetMs: 600, delayMs: 0 },
    ];
    expect(replay(nginx, rows)).toEqual(rows);
  });

  it('weighted costs delay by their size', () => {
    const rows: TraceRow[] = [
      { at: 0, cost: 2.5, allowed: true, remaining: 3.5, retryAfterMs: 0, resetMs: 250, delayMs: 0 },
      { at: 0, cost: 2.5, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 500, delayMs: 250 },
      { at: 0, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 600, delayMs: 500 },
      { at: 0, cost: 0.001, allowed: false, remaining: 0, retryAfterMs: 1, resetMs: 600, delayMs: 0 },
      { at: 1, cost: 0.001, allowed: true, remaining: 0.009, retryAfterMs: 0, resetMs: 600, delayMs: 599 },
    ];
    expect(replay(nginx, rows)).toEqual(rows);
  });
});

describe('leaky-bucket, fractional rate (limit 3 per 1000 ms, burst 3)', () => {
  const lb3: TraceOptions = { policies: { algorithm: 'leaky-bucket', limit: 3, windowMs: 1000 } };

  it('delays are rounded up to the ms: 0, 334, 667', () => {
    const rows: TraceRow[] = [
      { at: 0, cost: 1, allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 334, delayMs: 0 },
      { at: 0, cost: 1, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 667, delayMs: 334 },
      { at: 0, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 667 },
      { at: 0, cost: 1, allowed: false, remaining: 0, retryAfterMs: 334, resetMs: 1000, delayMs: 0 },
      { at: 334, cost: 1, allowed: true, remaining: 0.002, retryAfterMs: 0, resetMs: 1000, delayMs: 666 },
    ];
    expect(replay(lb3, rows)).toEqual(rows);
  });

  it('cost above capacity: its own reason, no delay, nothing charged', () => {
    const rows: TraceRow[] = [
      { at: 0, cost: 3.001, allowed: false, remaining: 3, retryAfterMs: 0, resetMs: 0, delayMs: 0, reason: 'cost-exceeds-capacity' },
      { at: 0, cost: 1, allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 334, delayMs: 0 },
    ];
    expect(replay(lb3, rows)).toEqual(rows);
  });
});
