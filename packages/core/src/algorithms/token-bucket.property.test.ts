/**
 * @module token-bucket's defining property on random traces: in any closed interval [a, b] of length T it
 * admits at most `burst + limit * T / windowMs` (the bucket holds at most `burst` at a, and refills
 * `limit` per `windowMs` after). Checked exactly, in integers: admitted milli-units * windowMs <=
 * burst * 1000 * windowMs + limit * 1000 * T.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { capacityOf, policyAndTraceArb } from '../testing/arbitraries.js';
import { createVirtualLimiter } from '../testing/replay.js';
import { ALGORITHM_VARIANTS } from '../testing/variants.js';

const buckets = ALGORITHM_VARIANTS.filter((v) => v.algorithm === 'token-bucket' || v.algorithm === 'gcra');

describe.each(buckets)('$label', (variant) => {
  it.each([
    { costs: 'unit', weighted: false },
    { costs: 'weighted', weighted: true },
  ])('never admits more than burst + limit * T / windowMs in any interval of length T ($costs costs)', ({ weighted }) => {
    fc.assert(
      fc.property(policyAndTraceArb(variant, { weighted, maxLength: 60 }), ({ policy, trace }) => {
        const v = createVirtualLimiter({ policies: policy });
        const admitted: { at: number; milli: number }[] = [];
        for (const step of trace) {
          if (v.at(step.at, step.cost).allowed) admitted.push({ at: step.at, milli: Math.round(step.cost * 1000) });
        }
        const w = policy.windowMs;
        const burstMilli = capacityOf(policy) * 1000;
        for (let i = 0; i < admitted.length; i++) {
          let sum = 0;
          for (let j = i; j < admitted.length; j++) {
            const a = admitted[i] as { at: number; milli: number };
            const b = admitted[j] as { at: number; milli: number };
            sum += b.milli;
            const t = b.at - a.at;
            expect(sum * w, `admitted in [${a.at}, ${b.at}]`).toBeLessThanOrEqual(burstMilli * w + policy.limit * 1000 * t);
          }
        }
      }),
      { numRuns: 150 },
    );
  });
});
