/**
 * @module sliding-log's defining property on random traces: the cost admitted in any rolling window
 * `(t - windowMs, t]` never exceeds `limit` (checked in integer milli-units at every admission, where the
 * rolling sum peaks).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { policyAndTraceArb } from '../testing/arbitraries.js';
import { createVirtualLimiter } from '../testing/replay.js';
import { ALGORITHM_VARIANTS } from '../testing/variants.js';

const slidingLog = ALGORITHM_VARIANTS.find((v) => v.algorithm === 'sliding-log');

describe('sliding-log', () => {
  it.each([
    { costs: 'unit', weighted: false },
    { costs: 'weighted', weighted: true },
  ])('never admits more than limit in any rolling window ($costs costs)', ({ weighted }) => {
    if (slidingLog === undefined) throw new Error('sliding-log variant missing');
    fc.assert(
      fc.property(policyAndTraceArb(slidingLog, { weighted, maxLength: 60 }), ({ policy, trace }) => {
        const v = createVirtualLimiter({ policies: policy });
        const admitted: { at: number; milli: number }[] = [];
        for (const step of trace) {
          if (v.at(step.at, step.cost).allowed) admitted.push({ at: step.at, milli: Math.round(step.cost * 1000) });
        }
        for (const end of admitted) {
          const inWindow = admitted.filter((a) => a.at > end.at - policy.windowMs && a.at <= end.at);
          const sum = inWindow.reduce((s, a) => s + a.milli, 0);
          expect(sum, `admitted in (${end.at - policy.windowMs}, ${end.at}]`).toBeLessThanOrEqual(policy.limit * 1000);
        }
      }),
      { numRuns: 150 },
    );
  });
});
