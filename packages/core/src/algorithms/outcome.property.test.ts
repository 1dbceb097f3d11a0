/**
 * @module Every kernel's `evaluate` (and `consume`) writes every field of the outcome, on random traces: a store
 * keeps one scratch outcome per policy and reuses it across calls (stores/memory-store.ts), so a field left
 * unwritten would carry the previous decision's value into the next. An outcome filled with stale values and a
 * fresh one (`createOutcome`) must come out equal. This is why the literals of `createOutcome` are equivalent
 * mutants (bench/MUTATION.md): no caller reads an outcome before a kernel has written all of it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compilePolicy } from '../policy.js';
import type { AlgorithmId } from '../types.js';
import type { CompiledPolicy, LogRing, Outcome, StateTable } from './kernel.js';
import { createOutcome } from './kernel.js';

const STRIDE = 6;
const SLOT = 1;
const ALGORITHMS: readonly (AlgorithmId | 'concurrency')[] = [
  'fixed-window',
  'sliding-window',
  'sliding-log',
  'token-bucket',
  'gcra',
  'leaky-bucket',
  'concurrency',
];

function policyOf(algorithm: AlgorithmId | 'concurrency', limit: number, windowMs: number): CompiledPolicy {
  const options =
    algorithm === 'concurrency'
      ? { name: 'p', algorithm: 'concurrency' as const, limit, leaseMs: windowMs }
      : { name: 'p', algorithm, limit, windowMs, ...(algorithm === 'leaky-bucket' ? { delayAfter: 1 } : {}) };
  return compilePolicy(options, 'p', false);
}

function copy(t: StateTable): StateTable {
  const logs = t.logs.map((r): LogRing | undefined => (r === undefined ? undefined : { ...r, buf: r.buf.slice() }));
  return { f: t.f.slice(), stride: t.stride, logs, ...(t.lease === undefined ? {} : { lease: t.lease }) };
}

/** Two stale outcomes, each field the opposite of what a decision could leave or an impossible value. */
const STALE: readonly Outcome[] = [
  { allowed: true, exceeds: true, remaining: -1, retryAfterMs: -1, resetMs: -1, delayMs: -1 },
  { allowed: false, exceeds: false, remaining: Number.NaN, retryAfterMs: Number.NaN, resetMs: Number.NaN, delayMs: Number.NaN },
];

describe.each(ALGORITHMS)('%s', (algorithm) => {
  it('evaluate and consume write every field of the outcome', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.constantFrom(1, 7, 1000),
        fc.array(
          fc.record({ dt: fc.integer({ min: -20, max: 1500 }), cost: fc.constantFrom(1, 500, 1000, 2000, 6000, Number.POSITIVE_INFINITY) }),
          {
            minLength: 1,
            maxLength: 15,
          },
        ),
        (limit, windowMs, steps) => {
          const p = policyOf(algorithm, limit, windowMs);
          const t: StateTable = { f: new Float64Array(3 * STRIDE), stride: STRIDE, logs: [] };
          p.kernel.init(t, SLOT);
          let now = 50_000;
          for (const step of steps) {
            now += step.dt;
            t.lease = now;
            const fresh = createOutcome();
            p.kernel.evaluate(copy(t), SLOT, now, step.cost, p, fresh);
            for (const stale of STALE) {
              const out = { ...stale };
              p.kernel.evaluate(copy(t), SLOT, now, step.cost, p, out);
              expect(out, `evaluate at ${now}, cost ${step.cost}`).toEqual(fresh);
              const consumed = { ...stale };
              p.kernel.consume(copy(t), SLOT, now, step.cost, p, consumed);
              expect(consumed, `consume at ${now}, cost ${step.cost}`).toEqual(fresh);
            }
            p.kernel.consume(t, SLOT, now, step.cost, p, createOutcome());
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});
