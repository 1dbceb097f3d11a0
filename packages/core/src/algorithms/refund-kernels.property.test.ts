/**
 * @module Refund-then-check equals never-charged, for the window algorithms (algorithms/refund-kernels.ts; the
 * buckets' twin is algorithms/bucket-refund.property.test.ts), on random traces through a limiter on a memory
 * store: refunding the newest charge while it still counts (fixed-window: before its window ends;
 * sliding-window: while its counter is the current one; sliding-log: while its entry is in the window) leaves
 * the key deciding exactly as a twin that never saw it, and a partial refund as a twin charged that much less,
 * whatever refunds of older charges came before. Issue 29 (mutation testing).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLimiter, type Limiter, MemoryStore } from '../index.js';
import { ALGORITHM_VARIANTS, type AlgorithmVariant, variantPolicy } from '../testing/variants.js';
import type { Decision } from '../types.js';
import { alignedStart } from './kernel.js';

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

/** The first time a charge at `t` with `d`'s mark no longer counts (see stillCounts). */
function stopsCounting(v: AlgorithmVariant, w: number, t: number, d: Decision): number {
  if (v.algorithm === 'sliding-window') return alignedStart(t, w) + w;
  if (v.algorithm === 'sliding-log') return t + w;
  return t + d.resetMs;
}

const ALL = ALGORITHM_VARIANTS;

describe.each(ALL)('$label: a refund of a charge that no longer counts', (v) => {
  it('gives nothing back and changes nothing, from the first ms it stops counting', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({ limit: fc.integer({ min: 1, max: 8 }), windowMs: fc.constantFrom(1, 7, 100, 999, 1000) }),
        fc.array(fc.record({ dt: fc.integer({ min: 0, max: 1500 }), cost: fc.constantFrom(1, 0.5, 2) }), { maxLength: 8 }),
        fc.constantFrom(1, 0.5, 0.001),
        fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 3000 })),
        async (shape, prefix, cost, extra) => {
          let now = 1_000_000;
          const limiter = createLimiter({
            policies: variantPolicy(v, shape),
            store: new MemoryStore({ sweepIntervalMs: 0 }),
            clock: () => now,
          });
          for (const step of prefix) {
            now += step.dt;
            await limiter.check('k', { cost: step.cost });
          }
          const t = now;
          const d = await limiter.check('k', { cost });
          if (!d.allowed) return;
          now = stopsCounting(v, shape.windowMs, t, d) + extra;
          const before = await Promise.all([0.001, 1, shape.limit].map((c) => limiter.peek('k', { cost: c })));
          expect((await limiter.refund(d)).refunded).toBe(false);
          const after = await Promise.all([0.001, 1, shape.limit].map((c) => limiter.peek('k', { cost: c })));
          expect(after.map(view)).toEqual(before.map(view));
        },
      ),
      { numRuns: 120 },
    );
  });
});

const ANY = ALGORITHM_VARIANTS.filter(
  (v) => (v.algorithm === 'fixed-window' && v.anchor === undefined) || v.algorithm === 'sliding-window' || v.algorithm === 'sliding-log',
);

describe.each(ANY)('$label: refunding any charge that still counts', (v) => {
  it('decides as if it had never been made, when its absence changes no decision before the refund', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({ limit: fc.integer({ min: 1, max: 8 }), windowMs: fc.constantFrom(7, 100, 999, 1000) }),
        fc.array(fc.record({ dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 300 })), cost: fc.constantFrom(1, 0.5, 2) }), {
          minLength: 1,
          maxLength: 10,
        }),
        fc.nat(),
        fc.option(fc.integer({ min: 1, max: 999 }), { nil: undefined }),
        fc.array(fc.record({ dt: fc.integer({ min: 0, max: 700 }), cost: fc.constantFrom(1, 0.5, 2) }), { maxLength: 8 }),
        async (shape, steps, which, part, after) => {
          let now = 1_000_000;
          const limiterOf = () =>
            createLimiter({ policies: variantPolicy(v, shape), store: new MemoryStore({ sweepIntervalMs: 0 }), clock: () => now });
          const refunded = limiterOf();
          const never = limiterOf();
          const start = now;
          const decisions: Decision[] = [];
          for (const step of steps) {
            now += step.dt;
            decisions.push(await refunded.check('k', { cost: step.cost }));
          }
          const admitted = decisions.map((d, i) => [d, i] as const).filter(([d]) => d.allowed);
          if (admitted.length === 0) return;
          const [x, xi] = admitted[which % admitted.length] as readonly [Decision, number];
          const cost = steps[xi]?.cost ?? 0;
          const give = part === undefined ? cost : Math.max(0.001, Math.floor(cost * part) / 1000);
          // The twin: the same requests, that one charged `cost - give` (or not at all).
          now = start;
          for (const [i, step] of steps.entries()) {
            now += step.dt;
            if (i === xi) {
              if (give < cost) expect((await never.check('k', { cost: Math.round((cost - give) * 1000) / 1000 })).allowed).toBe(true);
              continue;
            }
            if ((await never.check('k', { cost: step.cost })).allowed !== decisions[i]?.allowed) return;
          }
          const t = start + steps.slice(0, xi + 1).reduce((s, step) => s + step.dt, 0);
          if (!stillCounts(v, shape.windowMs, t, x, now)) return;
          expect((await refunded.refund(x, give < cost ? { cost: give } : undefined)).refunded).toBe(true);
          for (const probe of [0.001, 1, shape.limit]) {
            expect(view(await refunded.peek('k', { cost: probe }))).toEqual(view(await never.peek('k', { cost: probe })));
          }
          for (const step of after) {
            now += step.dt;
            expect(view(await refunded.check('k', { cost: step.cost }))).toEqual(view(await never.check('k', { cost: step.cost })));
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
