/**
 * @module Bucket refunds across limit changes, on random traces (token-bucket, gcra, leaky-bucket; issue 29's
 * limit-change-and-back bug, plans/bucket-refund.limit-back.test.ts): rounds of checks under limit A or B (any
 * limits and bursts, often a slow bucket and a fast one: the pair where the frame used to end early), each after
 * a gap, with refunds of any earlier receipt between them, then a refund of every receipt. After every refund:
 * - a receipt made before a charge under another limit or burst gives nothing back (it is spent by the
 *   change, also once the limit changes back), and the bucket reads as before (a refused check writes
 *   nothing, whatever room it found, so it changes nothing);
 * - the bucket never reads more than it would had every charge refunded so far never been made: a replay of
 *   the trace's charges at their times on a fresh store, each refunded one charged and given back at once
 *   (it converts state of the other limit, as the charge did, and leaves nothing charged); refusals are not
 *   replayed. Refunds give back at most the charge, and a change of limit converts a smaller debt to a
 *   smaller one.
 * The Redis twin of these traces: test/integration/redis/refund-limit-back.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLimiter, type Limiter, MemoryStore } from '../index.js';
import type { Decision } from '../types.js';

type Bucket = 'token-bucket' | 'gcra' | 'leaky-bucket';
type Plan = 'a' | 'b';

interface Shape {
  readonly limit: number;
  readonly burst: number | undefined;
}

const anyShape: fc.Arbitrary<Shape> = fc.record({
  limit: fc.integer({ min: 1, max: 12 }),
  burst: fc.option(fc.integer({ min: 1, max: 15 }), { nil: undefined }),
});
const slow: fc.Arbitrary<Shape> = fc.record({ limit: fc.integer({ min: 1, max: 2 }), burst: fc.integer({ min: 4, max: 15 }) });
const fast: fc.Arbitrary<Shape> = fc.record({
  limit: fc.integer({ min: 6, max: 12 }),
  burst: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
});
const pairArb: fc.Arbitrary<readonly [Shape, Shape]> = fc.oneof(fc.tuple(anyShape, anyShape), fc.tuple(slow, fast), fc.tuple(fast, slow));

interface Round {
  readonly plan: Plan;
  readonly gap: number;
  readonly checks: readonly { readonly dt: number; readonly cost: number }[];
  readonly refunds: readonly { readonly dt: number; readonly which: number }[];
}

const small = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 100 }));
const roundArb: fc.Arbitrary<Round> = fc.record({
  plan: fc.constantFrom<Plan>('a', 'b'),
  gap: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 5000 })),
  checks: fc.array(fc.record({ dt: small, cost: fc.constantFrom(1, 1, 2, 0.5, 0.001, 3) }), { maxLength: 5 }),
  refunds: fc.array(fc.record({ dt: small, which: fc.nat() }), { maxLength: 3 }),
});

const WINDOW_MS = 1000;

function limiterOf(algorithm: Bucket, a: Shape, b: Shape, clock: () => number): Limiter {
  const policy = (s: Shape) => [
    { name: 'api', algorithm, limit: s.limit, windowMs: WINDOW_MS, ...(s.burst === undefined ? {} : { burst: s.burst }) },
  ];
  return createLimiter({ plans: { a: policy(a), b: policy(b) }, store: new MemoryStore({ sweepIntervalMs: 0 }), clock });
}

const sameShape = (x: Shape, y: Shape) => x.limit === y.limit && (x.burst ?? x.limit) === (y.burst ?? y.limit);

/** A charge of the trace. */
interface Check {
  readonly plan: Plan;
  readonly at: number;
  readonly cost: number;
}

interface Charge {
  readonly d: Decision;
  readonly plan: Plan;
  readonly check: Check;
  /** A check under another limit or burst came after it. */
  changed: boolean;
  /** A refund took some of it. */
  refunded: boolean;
}

describe.each(['token-bucket', 'gcra', 'leaky-bucket'] as const)('%s: refunds across limit changes A -> B -> A', (algorithm) => {
  it('a receipt made before a change gives nothing back after it; the bucket never reads more than without the refunded charges', async () => {
    // Refunds of receipts a change had spent, over all runs: the property is not vacuous.
    let spent = 0;
    await fc.assert(
      fc.asyncProperty(pairArb, fc.array(roundArb, { maxLength: 6 }), async ([a, b], rounds) => {
        let now = 1_000_000;
        const clock = () => now;
        const limiter = limiterOf(algorithm, a, b, clock);
        const shapes = { a, b };
        const checks: Check[] = [];
        const charges: Charge[] = [];
        let last: Plan = 'a';

        /** What a peek under the current plan reads had the refunded charges never been made. */
        async function without(): Promise<number> {
          const end = now;
          const never = limiterOf(algorithm, a, b, clock);
          const counted = new Set(charges.filter((c) => !c.refunded).map((c) => c.check));
          for (const c of checks) {
            now = c.at;
            const d = await never.check('k', { plan: c.plan, cost: c.cost });
            expect(d.allowed).toBe(true);
            // A refunded charge converted the state as it was made: replayed, then given back in full.
            if (!counted.has(c)) expect((await never.refund(d)).refunded).toBe(true);
          }
          now = end;
          return (await never.peek('k', { plan: last, cost: 0.001 })).remaining;
        }

        async function refund(c: Charge): Promise<void> {
          const before = (await limiter.peek('k', { plan: c.plan, cost: 0.001 })).remaining;
          const r = await limiter.refund(c.d);
          if (c.changed) {
            spent += 1;
            expect(r.refunded).toBe(false);
            expect((await limiter.peek('k', { plan: c.plan, cost: 0.001 })).remaining).toBe(before);
          }
          if (r.refunded) c.refunded = true;
          expect((await limiter.peek('k', { plan: last, cost: 0.001 })).remaining).toBeLessThanOrEqual(await without());
        }

        for (const round of rounds) {
          now += round.gap;
          for (const step of round.checks) {
            now += step.dt;
            // A charge converts state of the other limit: older receipts of it are spent. A refusal writes
            // nothing, whatever room it found (the other limit's debt is kept whole, leaking at its rate).
            last = round.plan;
            const d = await limiter.check('k', { plan: round.plan, cost: step.cost });
            if (d.receipt === undefined) continue;
            for (const c of charges) if (!sameShape(shapes[c.plan], shapes[round.plan])) c.changed = true;
            const check = { plan: round.plan, at: now, cost: step.cost };
            checks.push(check);
            charges.push({ d, plan: round.plan, check, changed: false, refunded: false });
          }
          for (const step of round.refunds) {
            now += step.dt;
            const c = charges[step.which % Math.max(1, charges.length)];
            if (c !== undefined) await refund(c);
          }
        }
        for (const c of charges) await refund(c);
      }),
      { numRuns: 400 },
    );
    expect(spent).toBeGreaterThan(100);
  });
});
