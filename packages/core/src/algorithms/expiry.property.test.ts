/**
 * @module Every kernel's `init` and `expiresAt`, on random traces (issue 29: the memory store's sweep and the
 * Redis twin's key expiry read them, no decision does, so mutants of them lived through the decision tests):
 * - `init` writes a key never seen on a dirty row (its log dropped, for the kernels with one), and touches no
 *   other row; each kernel's `id` is its algorithm's name;
 * - `expiresAt` is exact: from it on the row decides every request as a key never seen does (it is safe to
 *   drop), and for the window kernels and concurrency, one ms earlier it does not (it is not dropped early).
 * The rows probed are copies, so the probes change nothing in the trace.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compilePolicy } from '../policy.js';
import type { AlgorithmId } from '../types.js';
import type { CompiledPolicy, LogRing, Outcome, StateTable } from './kernel.js';
import { createOutcome } from './kernel.js';

const STRIDE = 6;
const SLOT = 1;
const SENTINEL = -7;

interface Variant {
  algorithm: AlgorithmId | 'concurrency';
  anchor?: 'first-request';
}

const VARIANTS: readonly Variant[] = [
  { algorithm: 'fixed-window' },
  { algorithm: 'fixed-window', anchor: 'first-request' },
  { algorithm: 'sliding-window' },
  { algorithm: 'sliding-log' },
  { algorithm: 'token-bucket' },
  { algorithm: 'gcra' },
  { algorithm: 'leaky-bucket' },
  { algorithm: 'concurrency' },
];

/** The words of a key never seen, per kernel (its `stride` words; logs[slot] undefined). */
const FRESH: Record<AlgorithmId | 'concurrency', number[]> = {
  'fixed-window': [Number.NEGATIVE_INFINITY, 0],
  'sliding-window': [Number.NEGATIVE_INFINITY, 0, 0],
  'sliding-log': [Number.NEGATIVE_INFINITY],
  concurrency: [Number.NEGATIVE_INFINITY],
  'token-bucket': [Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0, 0, 0, Number.NEGATIVE_INFINITY],
  gcra: [Number.NEGATIVE_INFINITY, 0, 0, 0, 0, Number.NEGATIVE_INFINITY],
  'leaky-bucket': [Number.NEGATIVE_INFINITY, 0, 0, 0, 0, Number.NEGATIVE_INFINITY],
};

function policyOf(v: Variant, limit: number, windowMs: number): CompiledPolicy {
  const options =
    v.algorithm === 'concurrency'
      ? { name: 'p', algorithm: 'concurrency' as const, limit, leaseMs: windowMs }
      : { name: 'p', algorithm: v.algorithm, limit, windowMs, ...(v.anchor === undefined ? {} : { anchor: v.anchor }) };
  return compilePolicy(options, 'p', false);
}

function copy(t: StateTable): StateTable {
  const logs = t.logs.map((r): LogRing | undefined => (r === undefined ? undefined : { ...r, buf: r.buf.slice() }));
  return { f: t.f.slice(), stride: t.stride, logs };
}

/** What `p` answers at `now` for `cost` on the row at SLOT of a copy of `t`. */
function probe(t: StateTable, now: number, cost: number, p: CompiledPolicy): Outcome {
  const out = createOutcome();
  p.kernel.evaluate(copy(t), SLOT, now, cost, p, out);
  return { ...out };
}

describe.each(VARIANTS)('$algorithm $anchor', (v) => {
  it('init writes a key never seen on a dirty row, and no other row', () => {
    const p = policyOf(v, 3, 1000);
    const t: StateTable = {
      f: new Float64Array(3 * STRIDE).fill(SENTINEL),
      stride: STRIDE,
      logs: [undefined, { buf: new Float64Array(8), head: 0, size: 1, sum: 5, highWater: 0 }],
    };
    p.kernel.init(t, SLOT);
    const fresh = FRESH[v.algorithm];
    expect(Array.from(t.f.subarray(SLOT * STRIDE, SLOT * STRIDE + fresh.length))).toEqual(fresh);
    t.f.forEach((x, i) => {
      if (i < SLOT * STRIDE || i >= SLOT * STRIDE + fresh.length) expect(x, `word ${i}`).toBe(SENTINEL);
    });
    // The kernels with a log drop the one a dirty row holds.
    if (v.algorithm === 'sliding-log' || v.algorithm === 'concurrency') expect(t.logs[SLOT]).toBeUndefined();
    expect(p.kernel.id).toBe(v.algorithm);
  });

  it('expiresAt: from it on, the row answers as a key never seen; one ms before, it does not (windows, leases)', () => {
    const windowKernel = v.algorithm !== 'token-bucket' && v.algorithm !== 'gcra' && v.algorithm !== 'leaky-bucket';
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom(1, 7, 100, 1000),
        fc.array(fc.record({ dt: fc.integer({ min: 0, max: 1500 }), cost: fc.constantFrom(1, 500, 1000, 2000) }), {
          minLength: 1,
          maxLength: 15,
        }),
        (limit, windowMs, steps) => {
          const p = policyOf(v, limit, windowMs);
          const t: StateTable = { f: new Float64Array(3 * STRIDE).fill(SENTINEL), stride: STRIDE, logs: [] };
          const fresh: StateTable = { f: new Float64Array(3 * STRIDE).fill(SENTINEL), stride: STRIDE, logs: [] };
          p.kernel.init(t, SLOT);
          p.kernel.init(fresh, SLOT);
          const out = createOutcome();
          let now = 50_000;
          let charged = false;
          for (const step of steps) {
            now += step.dt;
            t.lease = now;
            p.kernel.consume(t, SLOT, now, step.cost, p, out);
            charged ||= out.allowed;
            const e = p.kernel.expiresAt(t, SLOT, p);
            if (!charged) {
              expect(e).toBe(Number.NEGATIVE_INFINITY);
              continue;
            }
            const at = Math.max(e, now);
            for (const cost of [1, 1000, Number.POSITIVE_INFINITY]) {
              expect(probe(t, at, cost, p), `at ${at}, cost ${cost}`).toEqual(probe(fresh, at, cost, p));
            }
            if (windowKernel && e - 1 >= now) {
              expect(probe(t, e - 1, Number.POSITIVE_INFINITY, p)).not.toEqual(probe(fresh, e - 1, Number.POSITIVE_INFINITY, p));
            }
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
