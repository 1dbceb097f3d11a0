/**
 * @module Properties of bucket refunds and limit changes (token-bucket, gcra, leaky-bucket) through a limiter
 * on a memory store, on random traces (issue 29: each one kills mutants the older tests let live):
 * - refunding the newest charge, at any time after it, leaves the bucket as if that charge had never been
 *   made (a partial refund: as if it had been that much smaller), whatever refunds of older charges came
 *   before: the charge's mark and position, and the refund frame's horizon, are exact;
 * - a limit change keeps what was consumed (a peek under the new limit gives its capacity less what the old
 *   one had consumed, to 1/1000), its waits are exact (waiting exactly `retryAfterMs` admits, 1 ms less does
 *   not), and a receipt of a charge made before the change gives nothing back after it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLimiter, type Limiter, MemoryStore } from '../index.js';
import type { Decision } from '../types.js';

type Bucket = 'token-bucket' | 'gcra' | 'leaky-bucket';
const BUCKETS: readonly Bucket[] = ['token-bucket', 'gcra', 'leaky-bucket'];

interface Shape {
  limit: number;
  windowMs: number;
  burst: number | undefined;
}

const shapeArb: fc.Arbitrary<Shape> = fc.record({
  limit: fc.integer({ min: 1, max: 12 }),
  windowMs: fc.constantFrom(1, 7, 100, 999, 1000, 1500),
  burst: fc.option(fc.integer({ min: 1, max: 15 }), { nil: undefined }),
});

type Op = { kind: 'check'; dt: number; cost: number } | { kind: 'refund'; dt: number; which: number; part: boolean };

const opArb = (windowMs: number): fc.Arbitrary<Op> =>
  fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant<'check'>('check'),
        dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: windowMs })),
        cost: fc.constantFrom(1, 1, 2, 0.5, 0.001, 3),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant<'refund'>('refund'),
        dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: windowMs })),
        which: fc.nat(),
        part: fc.boolean(),
      }),
    },
  );

function limiterOf(algorithm: Bucket, shape: Shape, clock: () => number): Limiter {
  return createLimiter({
    policies: { algorithm, limit: shape.limit, windowMs: shape.windowMs, ...(shape.burst === undefined ? {} : { burst: shape.burst }) },
    store: new MemoryStore({ sweepIntervalMs: 0 }),
    clock,
  });
}

const view = (d: Decision) => [d.allowed, d.remaining, d.retryAfterMs, d.resetMs];

/** Runs `ops` on `limiter` at `clock`'s times, refunding earlier receipts (any of them, in part or whole). */
async function run(limiter: Limiter, ops: readonly Op[], advance: (dt: number) => void): Promise<void> {
  const charged: Decision[] = [];
  for (const op of ops) {
    advance(op.dt);
    if (op.kind === 'check') {
      const d = await limiter.check('k', { cost: op.cost });
      if (d.receipt !== undefined) charged.push(d);
    } else if (charged.length > 0) {
      const d = charged[op.which % charged.length] as Decision;
      const cost = d.receipt?.cost ?? 0;
      await limiter.refund(d, op.part && cost > 0.001 ? { cost: Math.round(cost * 500) / 1000 } : undefined);
    }
  }
}

describe.each(BUCKETS)('%s: refunding the newest charge', (algorithm) => {
  const caseArb = shapeArb.chain((shape) =>
    fc.record({
      shape: fc.constant(shape),
      prefix: fc.array(opArb(shape.windowMs), { maxLength: 14 }),
      cost: fc.constantFrom(1, 2, 0.5, 0.001, 1.5),
      part: fc.option(fc.integer({ min: 1, max: 999 }), { nil: undefined }),
      wait: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2 * shape.windowMs })),
      after: fc.array(fc.record({ dt: fc.integer({ min: 0, max: shape.windowMs }), cost: fc.constantFrom(1, 0.5, 2) }), { maxLength: 6 }),
    }),
  );

  it('leaves the bucket as if it had never been made (in part: as if it had been that much smaller)', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ shape, prefix, cost, part, wait, after }) => {
        let now = 1_000_000;
        const clock = () => now;
        const refunded = limiterOf(algorithm, shape, clock);
        const never = limiterOf(algorithm, shape, clock);
        const advance = (dt: number) => {
          now += dt;
        };
        // One clock for both: the prefix runs on each, the second time at the same times.
        const start = now;
        await run(refunded, prefix, advance);
        const end = now;
        now = start;
        await run(never, prefix, advance);
        expect(now).toBe(end);
        const d = await refunded.check('k', { cost });
        if (!d.allowed) return;
        // As if it had been smaller: the twin is charged what the refund leaves of it.
        const give = part === undefined ? cost : Math.max(0.001, Math.floor(cost * part) / 1000);
        if (give < cost) expect((await never.check('k', { cost: Math.round((cost - give) * 1000) / 1000 })).allowed).toBe(true);
        now += wait;
        await refunded.refund(d, give < cost ? { cost: give } : undefined);
        for (const probe of [0.001, 1, shape.burst ?? shape.limit]) {
          expect(view(await refunded.peek('k', { cost: probe })), `peek ${probe} at +${wait}`).toEqual(
            view(await never.peek('k', { cost: probe })),
          );
        }
        for (const step of after) {
          now += step.dt;
          expect(view(await refunded.check('k', { cost: step.cost }))).toEqual(view(await never.check('k', { cost: step.cost })));
        }
      }),
      { numRuns: 150 },
    );
  });

  it('vector: after a counted refund of an older charge, the newest charge refunds in full past the frame it started in', async () => {
    // limit 10 per 1000 ms: one token per 100 ms.
    let now = 1_000_000;
    const shape = { limit: 10, windowMs: 1000, burst: undefined };
    const limiter = limiterOf(algorithm, shape, () => now);
    const a = await limiter.check('k', { cost: 2 });
    await limiter.check('k', { cost: 1 });
    // a is not the newest: its refund counts, and the frame lives until the bucket is full (300 ms).
    expect((await limiter.refund(a)).refunded).toBe(true);
    const x = await limiter.check('k', { cost: 5 });
    expect(x.allowed).toBe(true);
    // Past the frame's first horizon, before x's mark: x's refund gives back what has not leaked of it.
    now += 350;
    expect((await limiter.refund(x)).refunded).toBe(true);
    const never = limiterOf(algorithm, shape, () => now);
    now -= 350;
    await never.check('k', { cost: 1 });
    now += 350;
    for (const probe of [0.001, 1, 10])
      expect(view(await limiter.peek('k', { cost: probe }))).toEqual(view(await never.peek('k', { cost: probe })));
  });
});

describe.each(BUCKETS)('%s: a change of limit', (algorithm) => {
  const caseArb = fc.record({
    a: shapeArb,
    b: shapeArb,
    prefix: fc.array(opArb(1000), { maxLength: 12 }),
    later: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3000 })),
    cost: fc.constantFrom(1, 2, 0.5, 3),
  });

  it('keeps what was consumed, waits exactly under the new limit, and older receipts give nothing back', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ a, b, prefix, later, cost }) => {
        let now = 2_000_000;
        const windowMs = 1000;
        const policy = (s: Shape) => [
          { name: 'api', algorithm, limit: s.limit, windowMs, ...(s.burst === undefined ? {} : { burst: s.burst }) },
        ];
        const limiter = createLimiter({
          plans: { a: policy(a), b: policy(b) },
          store: new MemoryStore({ sweepIntervalMs: 0 }),
          clock: () => now,
        });
        const charged: Decision[] = [];
        for (const op of prefix) {
          now += op.dt;
          if (op.kind === 'check') {
            const d = await limiter.check('k', { plan: 'a', cost: op.cost });
            if (d.receipt !== undefined) charged.push(d);
          } else if (charged.length > 0) {
            await limiter.refund(charged[op.which % charged.length] as Decision);
          }
        }
        now += later;
        const capA = a.burst ?? a.limit;
        const capB = b.burst ?? b.limit;
        const leftA = (await limiter.peek('k', { plan: 'a', cost: Number.MAX_SAFE_INTEGER })).remaining;
        const consumed = capA - leftA;
        const leftB = (await limiter.peek('k', { plan: 'b', cost: Number.MAX_SAFE_INTEGER })).remaining;
        // No fresh budget, none lost: the new capacity less what was consumed, within the rounding of each side.
        expect(leftB).toBeLessThanOrEqual(Math.max(0, capB - consumed) + 0.0011);
        expect(leftB).toBeGreaterThanOrEqual(Math.max(0, capB - consumed) - 0.0021);
        // The first charge under b converts the state: then every receipt of a's charges is spent. A
        // refusal writes nothing, whatever room it found, and waits in a's scale below.
        const d = await limiter.check('k', { plan: 'b', cost: Math.min(cost, capB) });
        const leftAfter = (await limiter.peek('k', { plan: 'b', cost: Number.MAX_SAFE_INTEGER })).remaining;
        // (Under the same limit and burst nothing changed: those receipts may still refund, and are left alone.)
        if ((a.limit !== b.limit || capA !== capB) && d.allowed)
          for (const old of charged) expect((await limiter.refund(old)).refunded).toBe(false);
        expect((await limiter.peek('k', { plan: 'b', cost: Number.MAX_SAFE_INTEGER })).remaining).toBe(leftAfter);
        if (d.allowed) {
          // Its own receipt still refunds (the newest charge, right away: in full).
          expect((await limiter.refund(d)).refunded).toBe(true);
          expect((await limiter.peek('k', { plan: 'b', cost: Number.MAX_SAFE_INTEGER })).remaining).toBeCloseTo(
            Math.min(capB, leftAfter + Math.min(cost, capB)),
            3,
          );
          return;
        }
        // Waiting exactly retryAfterMs admits, 1 ms less does not.
        const wait = d.retryAfterMs;
        expect(wait).toBeGreaterThan(0);
        now += wait - 1;
        expect((await limiter.peek('k', { plan: 'b', cost: Math.min(cost, capB) })).allowed).toBe(false);
        now += 1;
        expect((await limiter.peek('k', { plan: 'b', cost: Math.min(cost, capB) })).allowed).toBe(true);
      }),
      { numRuns: 150 },
    );
  });
});
