/**
 * @module gcra and leaky-bucket, on the kernel, computed by hand from the definitions in gcra.ts (issue 29, fifth
 * round: each case pins a mutant of code added after the fourth round that the traces let live).
 *
 * What is left (`gcraLeft`): for a leaky bucket with `maxDelayMs`, as many milli-units as requests of cost 1 can
 * still take before one would wait longer, never more than the room to the capacity, never below 0. A request of
 * cost 1 is `unit = 1000 * tokenTicks` ticks, admitted while the debt it finds is at most `maxDelayTicks`.
 *
 * A refusal on state written under another limit (`foreignRefusal`): the state leaks at the writer's rate, and
 * the waits are read in the writer's scale (the retry until the writer's debt converts to at most
 * `capTicks - need`, and to at most `maxDelayTicks` for a leaky bucket's queue bound; the reset until it is gone).
 * Each wait is checked against the kernel itself: a request at `now + retryAfterMs` is admitted, one a ms sooner
 * is not.
 */
import { describe, expect, it } from 'vitest';
import { decide, policyOf as policy, row } from '../testing/bucket-rows.js';
import { createOutcome, type StateTable } from './kernel.js';

describe('leaky-bucket maxDelayMs: what is left counts what the queue can still take', () => {
  it('a request of cost 5 queued past the bound leaves 0, not a negative count, until the queue drains to the bound', () => {
    // Limit 10 per 1000 ms (T = 100 ms, 10 ticks per ms, one tick a milli-unit), burst 10, maxDelayMs 200:
    // maxDelayTicks 2000. A request of cost 5 on an empty queue finds a debt of 0 (within the bound) and fits the
    // capacity: admitted, the debt becomes 5000 ticks (500 ms). The next request would find 5000 > 2000: nothing
    // can be taken until the debt drains to 2000, 300 ms later.
    const p = policy({ name: 'p', algorithm: 'leaky-bucket', limit: 10, windowMs: 1000, burst: 10, maxDelayMs: 200 });
    const t = row(p);
    expect(decide(t, 0, 5000, p)).toEqual({ allowed: true, exceeds: false, remaining: 0, retryAfterMs: 0, resetMs: 500, delayMs: 0 });
    // Refused for the queue's length: 3000 ticks over the bound, 300 ms at 10 ticks per ms; full again at 500.
    expect(decide(t, 0, 1000, p)).toEqual({ allowed: false, exceeds: false, remaining: 0, retryAfterMs: 300, resetMs: 500, delayMs: 0 });
    // At 299 the debt is 2010, still over; at 300 it is the bound (a debt of exactly maxDelayMs still queues),
    // and the request waits those 200 ms.
    expect(decide(t, 299, 1000, p)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 1 });
    expect(decide(t, 300, 1000, p)).toEqual({ allowed: true, exceeds: false, remaining: 0, retryAfterMs: 0, resetMs: 300, delayMs: 200 });
  });

  it('a window that is not a whole number of ms per request (tokenTicks 3): the count is in requests of cost 1', () => {
    // Limit 10 per 3000 ms: gcd(3000, 10000) = 1000, so 10 ticks per ms and 3 ticks a milli-unit; T = 300 ms,
    // a request of cost 1 is 3000 ticks. maxDelayMs 600: maxDelayTicks 6000, two requests' worth. On an empty
    // queue, requests are admitted at debts 0, 3000 and 6000 (delays 0, 300, 600 ms): three, so 2, 1 and 0 are
    // left after each; the fourth would find 9000 and is refused until the queue is back to 6000, 300 ms later.
    const p = policy({ name: 'p', algorithm: 'leaky-bucket', limit: 10, windowMs: 3000, burst: 10, maxDelayMs: 600 });
    expect([p.rate, p.tokenTicks, p.capTicks, p.maxDelayTicks]).toEqual([10, 3, 30_000, 6000]);
    const t = row(p);
    // A peek of the empty queue (a cost that can never fit reports the state): 3 requests can be taken.
    const peek = createOutcome();
    p.kernel.evaluate(t, 0, 0, Number.POSITIVE_INFINITY, p, peek);
    expect(peek.remaining, 'three requests of cost 1, 3000 milli-units').toBe(3000);
    expect(decide(t, 0, 1000, p)).toEqual({ allowed: true, exceeds: false, remaining: 2000, retryAfterMs: 0, resetMs: 300, delayMs: 0 });
    expect(decide(t, 0, 1000, p)).toEqual({ allowed: true, exceeds: false, remaining: 1000, retryAfterMs: 0, resetMs: 600, delayMs: 300 });
    expect(decide(t, 0, 1000, p)).toEqual({ allowed: true, exceeds: false, remaining: 0, retryAfterMs: 0, resetMs: 900, delayMs: 600 });
    expect(decide(t, 0, 1000, p)).toEqual({ allowed: false, exceeds: false, remaining: 0, retryAfterMs: 300, resetMs: 900, delayMs: 0 });
  });

  it("a bound just short of the capacity: the capacity cuts the count (8.5 left, not the queue bound's 9)", () => {
    // Limit 10 per 1000 ms, burst 10 (capacity 10000 ticks), maxDelayMs 950: maxDelayTicks 9500. One request at 0
    // leaves a debt of 1000; at 50 it has leaked to 500, and a second request makes it 1500. The queue bound
    // alone would admit requests of cost 1 at debts 1500, 2500, ..., 9500 (nine), but the ninth would pass the
    // capacity (9500 + 1000 > 10000): eight fit, and half a request more: 8500 milli-units.
    const p = policy({ name: 'p', algorithm: 'leaky-bucket', limit: 10, windowMs: 1000, burst: 10, maxDelayMs: 950 });
    const t = row(p);
    expect(decide(t, 0, 1000, p)).toMatchObject({ allowed: true, remaining: 9000 });
    expect(decide(t, 50, 1000, p)).toMatchObject({ allowed: true, remaining: 8500 });
    // What is left is what can be taken: eight requests of cost 1, the ninth refused, then a half.
    for (let i = 0; i < 8; i++) expect(decide(t, 50, 1000, p)).toMatchObject({ allowed: true, remaining: 7500 - i * 1000 });
    expect(decide(t, 50, 1000, p)).toMatchObject({ allowed: false, remaining: 500 });
    expect(decide(t, 50, 500, p)).toMatchObject({ allowed: true, remaining: 0 });
  });
});

describe("gcra: a refusal on state written under another limit waits in the writer's scale", () => {
  // Writer: limit 3 per 1000 ms (3 ticks per ms, one tick a milli-unit). A charge of 2 at 0 is 2000 ticks: 666 ms
  // and 2 ticks, so the TAT is 666 and 2 ticks (2/3 ms) are still owed at 666. Reader: limit 1 per 1000 ms, burst 1
  // (1 tick per ms, a capacity of 1000): it converts those 2 ticks up to 2 of its own, 2 ms at its rate. But the
  // state leaks at the writer's rate: at 667 nothing is owed, so a refusal at 666 retries 1 ms later, not 2.
  const writer = policy({ name: 'p', algorithm: 'gcra', limit: 3, windowMs: 1000 });
  const reader = policy({ name: 'p', algorithm: 'gcra', limit: 1, windowMs: 1000 });

  function written(): StateTable {
    const t = row(writer);
    expect(decide(t, 0, 2000, writer)).toMatchObject({ allowed: true, resetMs: 667 });
    expect([t.f[0], t.f[1]], 'TAT 666 ms and 2 ticks').toEqual([666, 2]);
    return t;
  }

  it("at the TAT itself, with a fraction still owed: retry and reset 1 ms (the writer's 2/3 ms), and the retry is exact", () => {
    const t = written();
    // 1000 more would make the reader's debt 1002 > 1000: refused; what is left is the room, 1000 - 2.
    expect(decide(t, 666, 1000, reader)).toEqual({
      allowed: false,
      exceeds: false,
      remaining: 998,
      retryAfterMs: 1,
      resetMs: 1,
      delayMs: 0,
    });
    expect(decide(t, 667, 1000, reader)).toEqual({
      allowed: true,
      exceeds: false,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 1000,
      delayMs: 0,
    });
  });

  it("a cost that can never fit: no retry (0), the reset when the writer's debt is gone", () => {
    const t = written();
    // 2 > burst 1: it can never fit, so nothing to retry after; the key is full again when the 2 writer ticks
    // have leaked, 1 ms on.
    expect(decide(t, 666, 2000, reader)).toEqual({
      allowed: false,
      exceeds: true,
      remaining: 998,
      retryAfterMs: 0,
      resetMs: 1,
      delayMs: 0,
    });
    // Earlier, at 600: 200 writer ticks owed (66 ms and 2 ticks), the reader's 200 ticks; full again at 667.
    expect(decide(t, 600, 2000, reader)).toEqual({
      allowed: false,
      exceeds: true,
      remaining: 800,
      retryAfterMs: 0,
      resetMs: 67,
      delayMs: 0,
    });
  });
});

describe("leaky-bucket: a refusal for the queue's length on state written under another limit", () => {
  it("waits until the writer's debt, leaking at the writer's rate, converts to the bound: 200 ms, not at once", () => {
    // Writer: limit 5 per 1000 ms, burst 5 (5 ticks per ms, one tick a milli-unit). A charge of 3 at 0: 3000
    // ticks, 600 ms. Reader: limit 10 per 1000 ms, burst 10, maxDelayMs 200 (10 ticks per ms, maxDelayTicks
    // 2000). It reads the debt as 3000 of its ticks: the capacity has room (4000 <= 10000) but the queue is
    // 1000 ticks past its bound. Those leak at the writer's 5 ticks per ms: 200 ms, not the reader's 100. The
    // bucket's room alone would allow a retry at once; the bound is what waits.
    const writer = policy({ name: 'p', algorithm: 'leaky-bucket', limit: 5, windowMs: 1000 });
    const reader = policy({ name: 'p', algorithm: 'leaky-bucket', limit: 10, windowMs: 1000, burst: 10, maxDelayMs: 200 });
    const t = row(writer);
    expect(decide(t, 0, 3000, writer)).toMatchObject({ allowed: true, resetMs: 600 });
    // Refused for the queue's length: nothing can be taken now; full again when the writer's 600 ms are paid.
    expect(decide(t, 0, 1000, reader)).toEqual({
      allowed: false,
      exceeds: false,
      remaining: 0,
      retryAfterMs: 200,
      resetMs: 600,
      delayMs: 0,
    });
    // At 199 the writer owes 2005 ticks, still past the bound: 1 ms more. At 200 it owes 2000, the bound: admitted,
    // and the request waits the 2000 ticks at the reader's rate, 200 ms.
    expect(decide(t, 199, 1000, reader)).toEqual({
      allowed: false,
      exceeds: false,
      remaining: 0,
      retryAfterMs: 1,
      resetMs: 401,
      delayMs: 0,
    });
    expect(decide(t, 200, 1000, reader)).toMatchObject({ allowed: true, remaining: 0, delayMs: 200 });
  });
});
