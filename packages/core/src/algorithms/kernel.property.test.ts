/**
 * @module Properties every algorithm shares, on random policies and traces (weighted costs, fractional
 * emission intervals, clocks that step back):
 * - `retryAfterMs` is exact: the same request after exactly that long is admitted, one ms earlier it is not;
 * - waiting never makes a request less eligible, so a clock stepping back never admits what the
 *   clock's latest reading (the monotone trace) would reject;
 * - a rejected request consumes nothing: dropping it from the trace changes no other decision;
 * - `remaining` stays within [0, capacity]; only an admitted leaky-bucket request has a delay;
 * - all of it at scale too: day-long and 2^31 ms windows, limits up to a million, idle gaps of months,
 *   clocks far from zero (negative readings included).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RateLimitConfigError } from '../errors.js';
import { capacityOf, policyAndTraceArb } from '../testing/arbitraries.js';
import { createVirtualLimiter, probe, type TraceOptions, type TraceStep } from '../testing/replay.js';
import { ALGORITHM_VARIANTS, variantPolicy } from '../testing/variants.js';
import type { Decision } from '../types.js';

const RUNS = 60;

function run(options: TraceOptions, trace: readonly TraceStep[]): Decision[] {
  const v = createVirtualLimiter(options);
  return trace.map((s) => v.at(s.at, s.cost, s.key));
}

describe.each(ALGORITHM_VARIANTS)('$label', (variant) => {
  it.each([
    { clock: 'monotone', monotone: true },
    { clock: 'stepping back', monotone: false },
  ])('retryAfterMs is exact on random traces ($clock clock)', ({ monotone }) => {
    fc.assert(
      fc.property(policyAndTraceArb(variant, { weighted: true, monotone, maxLength: 20 }), ({ policy, trace }) => {
        const options: TraceOptions = { policies: policy };
        run(options, trace).forEach((d, i) => {
          if (d.reason !== 'limited') return;
          const step = trace[i] as TraceStep;
          const prefix = trace.slice(0, i);
          const wait = d.retryAfterMs;
          expect(Number.isInteger(wait) && wait >= 1, `retryAfterMs ${wait}`).toBe(true);
          expect(probe(options, prefix, step.at + wait, step.cost).allowed, `admitted after ${wait} ms`).toBe(true);
          expect(probe(options, prefix, step.at + wait - 1, step.cost).allowed, `rejected after ${wait - 1} ms`).toBe(false);
        });
      }),
      { numRuns: RUNS },
    );
  });

  it('waiting never makes a request less eligible; a clock stepping back never admits what its latest reading rejects', () => {
    fc.assert(
      fc.property(
        policyAndTraceArb(variant, { weighted: true, monotone: false, maxLength: 20 }),
        fc.integer({ min: 1, max: 5000 }),
        ({ policy, trace }, later) => {
          const options: TraceOptions = { policies: policy };
          let highWater = Number.NEGATIVE_INFINITY;
          run(options, trace).forEach((d, i) => {
            const step = trace[i] as TraceStep;
            highWater = Math.max(highWater, step.at);
            if (!d.allowed) return;
            const prefix = trace.slice(0, i);
            for (const at of [highWater, step.at + 1, step.at + later]) {
              if (at < step.at) continue;
              expect(probe(options, prefix, at, step.cost).allowed, `admitted at ${step.at}, so at ${at}`).toBe(true);
            }
          });
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('a rejected request consumes nothing: without it, every other decision is the same', () => {
    fc.assert(
      fc.property(policyAndTraceArb(variant, { weighted: true, monotone: false, maxLength: 30, keys: 2 }), ({ policy, trace }) => {
        const options: TraceOptions = { policies: policy };
        const all = run(options, trace);
        const kept = trace.filter((_, i) => all[i]?.allowed);
        const again = run(options, kept);
        expect(again).toEqual(all.filter((d) => d.allowed));
      }),
      { numRuns: RUNS },
    );
  });

  it('remaining stays within [0, capacity]; waits and delays are whole ms where they apply', () => {
    fc.assert(
      fc.property(policyAndTraceArb(variant, { weighted: true, monotone: false, maxLength: 30 }), ({ policy, trace }) => {
        const cap = capacityOf(policy);
        for (const d of run({ policies: policy }, trace)) {
          expect(d.remaining).toBeGreaterThanOrEqual(0);
          expect(d.remaining).toBeLessThanOrEqual(cap);
          expect(Math.round(d.remaining * 1000)).toBeCloseTo(d.remaining * 1000, 6);
          expect(Number.isInteger(d.resetMs) && d.resetMs >= 0).toBe(true);
          expect(Number.isInteger(d.delayMs) && d.delayMs >= 0).toBe(true);
          if (d.reason === 'limited') expect(d.retryAfterMs).toBeGreaterThan(0);
          else expect(d.retryAfterMs).toBe(0);
          if (d.reason === 'cost-exceeds-capacity') expect(d.cost).toBeGreaterThan(cap);
          if (!d.allowed || policy.algorithm !== 'leaky-bucket') expect(d.delayMs).toBe(0);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('retryAfterMs stays exact at scale (long windows, large limits, months idle, readings far from zero)', () => {
    const numbers = fc.record({
      limit: fc.oneof(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 1_000_000 })),
      windowMs: fc.oneof(fc.constantFrom(1, 3_600_000, 86_400_000, 2_147_483_647), fc.integer({ min: 1, max: 1_000_000_000 })),
    });
    const steps = fc.array(
      fc.record({
        gap: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 0, max: 10_000_000_000 })),
        cost: fc.oneof(
          fc.constant(1),
          fc.integer({ min: 1, max: 5000 }).map((m) => m / 1000),
        ),
      }),
      { minLength: 1, maxLength: 15 },
    );
    fc.assert(
      fc.property(numbers, steps, fc.integer({ min: -1e12, max: 1e12 }), (n, gaps, start) => {
        const options: TraceOptions = { policies: variantPolicy(variant, n) };
        try {
          createVirtualLimiter(options);
        } catch (error) {
          // Too large for exact integers: refused at construction, which policy.test.ts covers.
          fc.pre(!(error instanceof RateLimitConfigError && error.code === 'ERR_RL_PRECISION'));
          throw error;
        }
        let at = start;
        const trace: TraceStep[] = gaps.map((g) => {
          at += g.gap;
          return { at, cost: g.cost };
        });
        run(options, trace).forEach((d, i) => {
          expect(d.remaining).toBeGreaterThanOrEqual(0);
          if (d.reason !== 'limited') return;
          const step = trace[i] as TraceStep;
          const prefix = trace.slice(0, i);
          expect(probe(options, prefix, step.at + d.retryAfterMs, step.cost).allowed).toBe(true);
          expect(probe(options, prefix, step.at + d.retryAfterMs - 1, step.cost).allowed).toBe(false);
        });
      }),
      { numRuns: RUNS },
    );
  });
});
