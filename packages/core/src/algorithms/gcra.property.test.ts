/**
 * @module gcra and token-bucket are one contract in two representations (a TAT versus a token count): on
 * random monotone traces with the same limit, windowMs and burst they give identical decisions, remaining,
 * retryAfterMs and resetMs, for unit and for weighted costs.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { policyAndTraceArb } from '../testing/arbitraries.js';
import { createVirtualLimiter } from '../testing/replay.js';
import { ALGORITHM_VARIANTS } from '../testing/variants.js';

const gcra = ALGORITHM_VARIANTS.find((v) => v.algorithm === 'gcra');

describe('gcra', () => {
  it.each([
    { costs: 'unit', weighted: false },
    { costs: 'weighted', weighted: true },
  ])('decides exactly as token-bucket on random monotone traces ($costs costs)', ({ weighted }) => {
    if (gcra === undefined) throw new Error('gcra variant missing');
    fc.assert(
      fc.property(policyAndTraceArb(gcra, { weighted, maxLength: 60, keys: 3 }), ({ policy, trace }) => {
        const g = createVirtualLimiter({ policies: policy });
        const tb = createVirtualLimiter({ policies: { ...policy, algorithm: 'token-bucket' } });
        for (const step of trace) {
          const a = g.at(step.at, step.cost, step.key);
          const b = tb.at(step.at, step.cost, step.key);
          const view = (d: typeof a) => [d.allowed, d.reason, d.remaining, d.retryAfterMs, d.resetMs];
          expect(view(a), `at ${step.at} cost ${step.cost}`).toEqual(view(b));
        }
      }),
      { numRuns: 200 },
    );
  });
});
