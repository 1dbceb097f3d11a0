/**
 * @module A refused check writes nothing: whatever the algorithm, whatever plan the key's state was written
 * under, and whatever room the converted debt left, a trace with its refused checks taken out answers every
 * later check the same (and a peek where each refusal was answers it the same). Plans of two policies (the
 * algorithm under test and a fixed-window cap), under two limits and bursts taking turns, as in a rolling
 * deploy or a plan upgrade: a refusal under one limit used to rewrite a bucket's state in its own scale when
 * the debt left some room but not enough for the cost, or when the other policy of its group refused, so the
 * key paid its debt back at the refusing limit's rate, and the refusal's own wait was read in that rate.
 * Each refusal's wait also holds to the ms when no other check comes: a peek 1 ms before it refuses, at it
 * admits (in the state a refusal left, which is the state before it).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLimiter, type Limiter, MemoryStore } from '../index.js';
import type { Decision, PolicyOptions } from '../types.js';

type Plan = 'a' | 'b';
const ALGORITHMS = ['token-bucket', 'gcra', 'leaky-bucket', 'fixed-window', 'sliding-window', 'sliding-log'] as const;
type Algorithm = (typeof ALGORITHMS)[number];
const BUCKETS = new Set<Algorithm>(['token-bucket', 'gcra', 'leaky-bucket']);

interface Shape {
  readonly limit: number;
  readonly burst: number | undefined;
  readonly cap: number;
}

const shapeArb = fc.record({
  limit: fc.integer({ min: 1, max: 12 }),
  burst: fc.option(fc.integer({ min: 1, max: 15 }), { nil: undefined }),
  cap: fc.integer({ min: 2, max: 40 }),
});

const stepArb = fc.record({
  plan: fc.constantFrom<Plan>('a', 'b'),
  dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 120 }), fc.integer({ min: 0, max: 1500 })),
  cost: fc.constantFrom(1, 1, 2, 0.5, 3, 0.001),
});

const WINDOW_MS = 1000;

function limiterOf(algorithm: Algorithm, shapes: Record<Plan, Shape>, clock: () => number): Limiter {
  const plan = (s: Shape): PolicyOptions[] => [
    {
      name: 'api',
      algorithm,
      limit: s.limit,
      windowMs: WINDOW_MS,
      ...(s.burst === undefined || !BUCKETS.has(algorithm) ? {} : { burst: s.burst }),
    },
    { name: 'cap', algorithm: 'fixed-window', limit: s.cap, windowMs: 10 * WINDOW_MS },
  ];
  return createLimiter({ plans: { a: plan(shapes.a), b: plan(shapes.b) }, store: new MemoryStore({ sweepIntervalMs: 0 }), clock });
}

/**
 * What a decision says, policy by policy. Not its headline policy's `remaining` and `resetMs`: a refused
 * check headlines the longest wait, a peek the policy with the least left (peek-refund.ts).
 */
function view(d: Decision) {
  return {
    allowed: d.allowed,
    retryAfterMs: d.retryAfterMs,
    policies: d.policies.map((p) => [p.name, p.allowed, p.remaining, p.retryAfterMs, p.resetMs]),
  };
}

describe.each(ALGORITHMS)('%s: a refused check writes nothing', (algorithm) => {
  it('under two limits taking turns, a trace without its refusals answers every check the same, and each wait holds to the ms', async () => {
    // Refusals over all runs, and those the converted debt left room for: the property is not vacuous.
    let refusals = 0;
    let withRoom = 0;
    await fc.assert(
      fc.asyncProperty(shapeArb, shapeArb, fc.array(stepArb, { minLength: 1, maxLength: 30 }), async (a, b, steps) => {
        let now = 1_000_000;
        const clock = () => now;
        const shapes = { a, b };
        const full = limiterOf(algorithm, shapes, clock);
        const pure = limiterOf(algorithm, shapes, clock);
        for (const step of steps) {
          now += step.dt;
          const d = await full.check('k', { plan: step.plan, cost: step.cost });
          if (d.allowed) {
            expect(view(await pure.check('k', { plan: step.plan, cost: step.cost }))).toEqual(view(d));
            continue;
          }
          refusals += 1;
          // The case the property is about: the bucket policy itself refused with room left.
          const api = d.policies.find((p) => p.name === 'api');
          if (api !== undefined && !api.allowed && api.remaining > 0) withRoom += 1;
          // The twin never saw the refusal: its peek answers the same.
          expect(view(await pure.peek('k', { plan: step.plan, cost: step.cost }))).toEqual(view(d));
          if (d.reason === 'cost-exceeds-capacity') continue;
          // With no other check, the refusal's wait holds to the ms (peeks write nothing either).
          const at = now;
          now = at + d.retryAfterMs - 1;
          expect((await full.peek('k', { plan: step.plan, cost: step.cost })).allowed).toBe(false);
          now = at + d.retryAfterMs;
          expect((await full.peek('k', { plan: step.plan, cost: step.cost })).allowed).toBe(true);
          now = at;
        }
      }),
      // Seeded: the counts below are of these runs, not a chance.
      { numRuns: 150, seed: 20261204 },
    );
    expect(refusals).toBeGreaterThan(200);
    expect(withRoom).toBeGreaterThan(20);
  });
});
