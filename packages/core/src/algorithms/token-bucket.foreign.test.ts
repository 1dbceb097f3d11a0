/**
 * @module token-bucket on state written under another limit or burst, computed by hand from the definitions in
 * token-bucket.ts (issue 29, fifth round: each case pins a mutant of code added after the fourth round that the
 * traces let live). Such state refills at the writer's rate until a charge under the reader adopts it; a refusal
 * waits in the writer's scale (`foreignRefusal`), measured from the writer's last refill when the clock stepped
 * back behind it (the bucket never refills twice over the same ms). Each wait is checked against the kernel
 * itself: a request at `now + retryAfterMs` is admitted, one a ms sooner is not.
 *
 * Writer `ten`: limit 10 per 1000 ms, burst 10 (10 ticks per ms, one tick a milli-unit, a capacity of 10000).
 * Reader `five`: limit 5 per 1000 ms, burst 5 (5 ticks per ms, a capacity of 5000). A charge of 3 under `ten` at
 * 1000 leaves 7000 ticks, 3000 short of full, refilled at 10 per ms from 1000: full again at 1300. `five` reads
 * what it lacks, 3000 ticks, as 3000 of its own: 2000 tokens.
 */
import { describe, expect, it } from 'vitest';
import { createLimiter, MemoryStore } from '../index.js';
import { decide, policyOf as policy } from '../testing/bucket-rows.js';
import { type CompiledPolicy, createOutcome, type StateTable } from './kernel.js';

const ten = policy({ name: 'p', algorithm: 'token-bucket', limit: 10, windowMs: 1000, burst: 10 });
const five = policy({ name: 'p', algorithm: 'token-bucket', limit: 5, windowMs: 1000, burst: 5 });

/** A row charged 3 under `writer` at 1000. */
function charged(writer: CompiledPolicy): StateTable {
  const t: StateTable = { f: new Float64Array(writer.kernel.stride), stride: writer.kernel.stride, logs: [] };
  writer.kernel.init(t, 0);
  expect(decide(t, 1000, 3000, writer)).toMatchObject({ allowed: true, remaining: 7000 });
  expect(Array.from(t.f.slice(0, 4)), 'tokens, last refill, limit, burst').toEqual([7000, 1000, writer.limit, writer.capacity]);
  return t;
}

describe('token-bucket: a refusal on state written under another limit, the clock behind its last refill', () => {
  it("at 950, 50 ms behind: waits are counted from 1000, the writer's last refill (retry 150, reset 350), and the retry is exact", () => {
    const t = charged(ten);
    // 3 more than the 2000 `five` reads: refused. The writer's bucket refills from 1000 (not 950) at 10 per ms:
    // 3000 short converts to at most 5000 - 3000 = 2000 once 1000 ticks are back, 100 ms after 1000, so 150 ms
    // from 950; it is full again at 1300, 350 ms from 950.
    expect(decide(t, 950, 3000, five)).toEqual({
      allowed: false,
      exceeds: false,
      remaining: 2000,
      retryAfterMs: 150,
      resetMs: 350,
      delayMs: 0,
    });
    // At 1099 the writer lacks 2010 (one ms short): refused for 1 ms; at 1100 it lacks 2000: admitted.
    expect(decide(t, 1099, 3000, five)).toEqual({
      allowed: false,
      exceeds: false,
      remaining: 2990,
      retryAfterMs: 1,
      resetMs: 201,
      delayMs: 0,
    });
    expect(decide(t, 1100, 3000, five)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("a cost that can never fit: no retry (0), the reset when the writer's bucket is full again", () => {
    const t = charged(ten);
    // 6 > burst 5: it can never fit; the writer's bucket is full at 1300 (350 ms from 950, 200 ms from 1100).
    expect(decide(t, 950, 6000, five)).toEqual({
      allowed: false,
      exceeds: true,
      remaining: 2000,
      retryAfterMs: 0,
      resetMs: 350,
      delayMs: 0,
    });
    expect(decide(t, 1100, 6000, five)).toEqual({
      allowed: false,
      exceeds: true,
      remaining: 3000,
      retryAfterMs: 0,
      resetMs: 200,
      delayMs: 0,
    });
  });

  it('a charge at 950 adopts the state refilled from 1000, not from 950: the next wait counts from 1000', () => {
    const t = charged(ten);
    // 1 of the 2000 `five` reads: admitted, 1000 left, full again at 1000 + (5000 - 1000) / 5 = 1800, 850 ms on.
    expect(decide(t, 950, 1000, five)).toEqual({
      allowed: true,
      exceeds: false,
      remaining: 1000,
      retryAfterMs: 0,
      resetMs: 850,
      delayMs: 0,
    });
    // Adopted in `five`'s scale, still refilled at 1000: the 50 ms the clock stepped back are not refilled twice.
    expect(Array.from(t.f.slice(0, 4)), 'tokens, last refill, limit, burst').toEqual([1000, 1000, 5, 5]);
    // 2 more need 1000 ticks, 200 ms at 5 per ms from 1000: 250 ms from 950. At 1199 1995 ticks: 1 ms short.
    expect(decide(t, 950, 2000, five)).toEqual({
      allowed: false,
      exceeds: false,
      remaining: 1000,
      retryAfterMs: 250,
      resetMs: 850,
      delayMs: 0,
    });
    expect(decide(t, 1199, 2000, five)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(decide(t, 1200, 2000, five)).toMatchObject({ allowed: true, remaining: 0 });
  });
});

describe('token-bucket: when a row written under another limit, same burst, is safe to drop', () => {
  it("limit 5 -> 10, burst 10: when the writer's bucket is full again (1600), not when the reader's would be (1300)", () => {
    // Writer: limit 5, burst 10 (5 ticks per ms, capacity 10000). 3 charged at 1000: 3000 short, full at 1600.
    // Read under limit 10, burst 10, it still refills at the writer's 5 per ms (nothing adopted it): dropping it
    // at 1300, when 10 per ms would have filled it, would hand out 1.5 tokens the key does not have.
    const slow = policy({ name: 'p', algorithm: 'token-bucket', limit: 5, windowMs: 1000, burst: 10 });
    const fast = policy({ name: 'p', algorithm: 'token-bucket', limit: 10, windowMs: 1000, burst: 10 });
    const t = charged(slow);
    expect(fast.kernel.expiresAt(t, 0, fast)).toBe(1600);
    const peek = (now: number) => {
      const out = createOutcome();
      fast.kernel.evaluate(t, 0, now, Number.POSITIVE_INFINITY, fast, out);
      return out.remaining;
    };
    expect(peek(1300), 'at 1300, 1500 short').toBe(8500);
    expect(peek(1599), 'at 1599, 5 short').toBe(9995);
    expect(peek(1600), 'at 1600, full').toBe(10_000);
  });
});

describe('token-bucket: a full row written under another limit, the clock behind its last refill', () => {
  it('refunded to full at 1000, read under another limit at 950: full, nothing to wait for (reset 0)', async () => {
    let now = 1000;
    const limiter = createLimiter({
      plans: {
        ten: [{ name: 'api', algorithm: 'token-bucket', limit: 10, windowMs: 1000, burst: 10 }],
        five: [{ name: 'api', algorithm: 'token-bucket', limit: 5, windowMs: 1000, burst: 5 }],
      },
      store: new MemoryStore({ sweepIntervalMs: 0 }),
      clock: () => now,
    });
    const d = await limiter.check('k', { plan: 'ten', cost: 3 });
    expect(d).toMatchObject({ allowed: true, remaining: 7 });
    // The refund puts the 3 back: the row is full, its last refill still 1000, written under limit 10.
    expect((await limiter.refund(d)).refunded).toBe(true);
    now = 950;
    // A full bucket lacks nothing in any scale: `five` reads it full (5), and a cost that can never fit has
    // nothing to wait for, however far the last refill lies ahead (waiting for it would refill nothing).
    expect(await limiter.peek('k', { plan: 'five', cost: 6 })).toMatchObject({ allowed: false, remaining: 5, retryAfterMs: 0, resetMs: 0 });
    // A peek that would admit reports the state as it stands (memory-store.ts): full, reset 0.
    expect(await limiter.peek('k', { plan: 'five' })).toMatchObject({ allowed: true, remaining: 5, resetMs: 0 });
  });
});
