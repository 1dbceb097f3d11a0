/**
 * @module Properties of combining policies, on random sets of 1 to 3 policies of any algorithm and random
 * traces (weighted costs, clocks stepping back, two keys):
 * - all-or-nothing: each policy's verdict is the one it gives alone on the history the limiter admitted,
 *   and the request passes iff every policy admits it;
 * - the binding policy is the most restrictive; the combined retryAfterMs is exact;
 * - shadow policies never change an enforced decision and decide as a limiter of their own would;
 * - mode 'shadow' charges exactly as enforcing would.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { policyArb, traceArb } from '../testing/arbitraries.js';
import { createVirtualLimiter, probe, type TraceOptions, type TraceStep } from '../testing/replay.js';
import { ALGORITHM_VARIANTS } from '../testing/variants.js';
import type { Decision, PolicyOptions } from '../types.js';

const RUNS = 80;

/** 1 to `max` named policies of random algorithms. */
function policiesArb(max: number, prefix: string): fc.Arbitrary<PolicyOptions[]> {
  return fc
    .array(
      fc.constantFrom(...ALGORITHM_VARIANTS).chain((v) => policyArb(v)),
      { minLength: 1, maxLength: max },
    )
    .map((ps) => ps.map((p, i) => ({ ...p, name: `${prefix}${i}` })));
}

/** A trace whose gaps and costs suit the first policy (the others see the same requests). */
function setupArb(maxShadow: number) {
  return fc
    .record({ policies: policiesArb(3, 'p'), shadow: maxShadow > 0 ? policiesArb(maxShadow, 's') : fc.constant([]) })
    .chain(({ policies, shadow }) =>
      traceArb(policies[0] as PolicyOptions, { weighted: true, monotone: false, maxLength: 18, keys: 2 }).map((trace) => ({
        policies,
        shadow,
        trace,
      })),
    );
}

function run(options: TraceOptions, trace: readonly TraceStep[]): Decision[] {
  const v = createVirtualLimiter(options);
  return trace.map((s) => v.at(s.at, s.cost, s.key));
}

describe('several policies', () => {
  it('each policy judges the admitted history alone; the request passes iff all admit; the most restrictive binds', () => {
    fc.assert(
      fc.property(setupArb(0), ({ policies, trace }) => {
        const decisions = run({ policies }, trace);
        decisions.forEach((d, k) => {
          const step = trace[k] as TraceStep;
          const admitted = trace.slice(0, k).filter((_, i) => decisions[i]?.allowed);
          expect(d.allowed).toBe(d.policies.every((p) => p.allowed));
          policies.forEach((policy, i) => {
            const alone = probe({ policies: policy }, admitted, step.at, step.cost, step.key);
            const mine = d.policies[i];
            expect(mine?.allowed, `policy ${i} at step ${k}`).toBe(alone.allowed);
            expect(mine?.retryAfterMs).toBe(alone.retryAfterMs);
            expect(mine?.reason).toBe(alone.reason === 'cost-exceeds-capacity' ? 'cost-exceeds-capacity' : undefined);
            if (d.allowed || !alone.allowed) expect(mine?.remaining).toBe(alone.remaining);
            if (d.allowed) expect([mine?.resetMs, mine?.delayMs]).toEqual([alone.resetMs, alone.delayMs]);
          });
          const binding = d.policies.find((p) => p.name === d.policy);
          expect(binding?.remaining).toBe(d.remaining);
          if (d.reason === 'cost-exceeds-capacity') {
            expect(binding?.reason).toBe('cost-exceeds-capacity');
            expect(d.retryAfterMs).toBe(0);
          } else if (!d.allowed) {
            expect(d.retryAfterMs).toBe(Math.max(...d.policies.map((p) => p.retryAfterMs)));
            expect(binding?.retryAfterMs).toBe(d.retryAfterMs);
          } else {
            expect(d.remaining).toBe(Math.min(...d.policies.map((p) => p.remaining)));
            expect(d.delayMs).toBe(Math.max(...d.policies.map((p) => p.delayMs)));
          }
        });
      }),
      { numRuns: RUNS },
    );
  });

  it('the combined retryAfterMs is exact', () => {
    fc.assert(
      fc.property(setupArb(0), ({ policies, trace }) => {
        run({ policies }, trace).forEach((d, k) => {
          if (d.reason !== 'limited') return;
          const step = trace[k] as TraceStep;
          const prefix = trace.slice(0, k);
          expect(probe({ policies }, prefix, step.at + d.retryAfterMs, step.cost, step.key).allowed).toBe(true);
          expect(probe({ policies }, prefix, step.at + d.retryAfterMs - 1, step.cost, step.key).allowed).toBe(false);
        });
      }),
      { numRuns: RUNS },
    );
  });
});

describe('shadow', () => {
  it('shadow policies never change enforced decisions and decide as a limiter of their own would', () => {
    fc.assert(
      fc.property(setupArb(2), ({ policies, shadow, trace }) => {
        const both = run({ policies, shadow: { policies: shadow } }, trace);
        const enforcedAlone = run({ policies }, trace);
        const shadowAlone = run({ policies: shadow }, trace);
        both.forEach((d, k) => {
          const e = enforcedAlone[k] as Decision;
          const s = shadowAlone[k] as Decision;
          expect({ ...d, shadow: undefined }).toEqual(e);
          expect(d.shadow?.allowed).toBe(s.allowed);
          expect(d.shadow?.reason).toBe(s.reason);
          expect(d.shadow?.policy).toBe(s.policy);
          expect(d.shadow?.remaining).toBe(s.remaining);
          expect(d.shadow?.retryAfterMs).toBe(s.retryAfterMs);
          expect(d.shadow?.policies.map((p) => ({ ...p, shadow: false }))).toEqual(s.policies);
        });
      }),
      { numRuns: RUNS },
    );
  });

  it("mode 'shadow' charges exactly as enforcing would, and never blocks", () => {
    fc.assert(
      fc.property(setupArb(0), ({ policies, trace }) => {
        const enforced = run({ policies }, trace);
        run({ policies, mode: 'shadow' }, trace).forEach((d, k) => {
          const e = enforced[k] as Decision;
          expect(d.allowed).toBe(true);
          expect(d.limited).toBe(!e.allowed);
          expect({ ...d, allowed: e.allowed, mode: 'enforce' }).toEqual({ ...e });
        });
      }),
      { numRuns: RUNS },
    );
  });
});
