/**
 * @module Refund-then-check equals never-charged, for the window algorithms (plans/refund-kernels.ts; the
 * buckets' twin is algorithms/bucket-refund.property.test.ts), on random traces through a limiter on a memory
 * store: refunding the newest charge while it still counts (fixed-window: before its window ends;
 * sliding-window: while its counter is the current one; sliding-log: while its entry is in the window) leaves
 * the key deciding exactly as a twin that never saw it, and a partial refund as a twin charged that much less,
 * whatever refunds of older charges came before. Issue 29 (mutation testing).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { alignedStart } from '../algorithms/kernel.js';
import { createLimiter, type Limiter, MemoryStore } from '../index.js';
import { ALGORITHM_VARIANTS, type AlgorithmVariant, variantPolicy } from '../testing/variants.js';
import type { Decision } from '../types.js';

const WINDOWS = ALGORITHM_VARIANTS.filter(
  (v) => v.algorithm === 'fixed-window' || v.algorithm === 'sliding-window' || v.algorithm === 'sliding-log',
);

type Op = { kind: 'check'; dt: number; cost: number } | { kind: 'refund'; dt: number; which: number; part: boolean };

const opArb = (windowMs: number): fc.Arbitrary<Op> =>
  fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant<'check'>('check'),
        dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: windowMs })),
        cost: fc.constantFrom(1, 1, 2, 0.5, 0.001),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant<'refund'>('refund'),
        dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: windowMs })),
        which: fc.nat(),
        part: fc.boolean(),
      }),
    },
  );

const view = (d: Decision) => [d.allowed, d.remaining, d.retryAfterMs, d.resetMs];

/** Whether a charge at `t` with `d`'s mark still counts, and can be refunded, at `u`. */
function stillCounts(v: AlgorithmVariant, w: number, t: number, d: Decision, u: number): boolean {
  if (v.algorithm === 'sliding-window') return alignedStart(u, w) === alignedStart(t, w);
  if (v.algorithm === 'sliding-log') return u - t < w;
  return u < t + d.resetMs;
}

describe.each(WINDOWS)('$label: refunding the newest charge', (v) => {
  const caseArb = fc.record({ limit: fc.integer({ min: 1, max: 8 }), windowMs: fc.constantFrom(1, 7, 100, 999, 1000) }).chain((shape) =>
    fc.record({
      shape: fc.constant(shape),
      prefix: fc.array(opArb(shape.windowMs), { maxLength: 12 }),
      cost: fc.constantFrom(1, 2, 0.5, 0.001),
      part: fc.option(fc.integer({ min: 1, max: 999 }), { nil: undefined }),
      wait: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: shape.windowMs })),
      after: fc.array(fc.record({ dt: fc.integer({ min: 0, max: shape.windowMs }), cost: fc.constantFrom(1, 0.5, 2) }), { maxLength: 6 }),
    }),
  );

  it('while it still counts: decides as if it had never been made (in part: as if it had been that much smaller)', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ shape, prefix, cost, part, wait, after }) => {
        let now = 1_000_000;
        const limiterOf = (): Limiter =>
          createLimiter({ policies: variantPolicy(v, shape), store: new MemoryStore({ sweepIntervalMs: 0 }), clock: () => now });
        const refunded = limiterOf();
        const never = limiterOf();
        // The same prefix on both, at the same times.
        const start = now;
        for (const limiter of [refunded, never]) {
          now = start;
          const charged: Decision[] = [];
          for (const op of prefix) {
            now += op.dt;
            if (op.kind === 'check') {
              const d = await limiter.check('k', { cost: op.cost });
              if (d.receipt !== undefined) charged.push(d);
            } else if (charged.length > 0) {
              const d = charged[op.which % charged.length] as Decision;
              const c = d.receipt?.cost ?? 0;
              await limiter.refund(d, op.part && c > 0.001 ? { cost: Math.round(c * 500) / 1000 } : undefined);
            }
          }
        }
        const t = now;
        const d = await refunded.check('k', { cost });
        if (!d.allowed || !stillCounts(v, shape.windowMs, t, d, t + wait)) return;
        const give = part === undefined ? cost : Math.max(0.001, Math.floor(cost * part) / 1000);
        if (give < cost) expect((await never.check('k', { cost: Math.round((cost - give) * 1000) / 1000 })).allowed).toBe(true);
        now += wait;
        expect((await refunded.refund(d, give < cost ? { cost: give } : undefined)).refunded).toBe(true);
        for (const probe of [0.001, 1, shape.limit]) {
          expect(view(await refunded.peek('k', { cost: probe })), `peek ${probe} at +${wait}`).toEqual(
            view(await never.peek('k', { cost: probe })),
          );
        }
        for (const step of after) {
          now += step.dt;
          expect(view(await refunded.check('k', { cost: step.cost })), `check ${step.cost} at +${now - t}`).toEqual(
            view(await never.check('k', { cost: step.cost })),
          );
        }
      }),
      { numRuns: 150 },
    );
  });
});
