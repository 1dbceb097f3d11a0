/**
 * @module MemoryStore properties on random key streams, 1 to 3 policies of any algorithm, one or two
 * limiters sharing the store, with sweeps and resets in between:
 * - the store never holds more than maxKeys entries;
 * - a request's own rows survive its decision (the charge is never lost to the eviction it causes);
 * - sweeping expired entries never changes a decision (each algorithm's expiresAt is exact).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLimiter, type Limiter } from '../limiter/create-limiter.js';
import { policyArb } from '../testing/arbitraries.js';
import { ALGORITHM_VARIANTS } from '../testing/variants.js';
import type { Decision, PolicyOptions } from '../types.js';
import { MemoryStore } from './memory-store.js';

const RUNS = 100;

function policiesArb(prefix: string): fc.Arbitrary<PolicyOptions[]> {
  return fc
    .array(
      fc.constantFrom(...ALGORITHM_VARIANTS).chain((v) => policyArb(v)),
      { minLength: 1, maxLength: 3 },
    )
    .map((ps) => ps.map((p, i) => ({ ...p, name: `${prefix}${i}` })));
}

type Op =
  | { kind: 'check'; limiter: number; key: number; gap: number; cost: number }
  | { kind: 'sweep' }
  | { kind: 'reset'; limiter: number; key: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('check' as const),
      limiter: fc.integer({ min: 0, max: 1 }),
      key: fc.integer({ min: 0, max: 15 }),
      gap: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 5000 })),
      cost: fc.oneof(
        fc.constant(1),
        fc.integer({ min: 1, max: 2000 }).map((m) => m / 1000),
      ),
    }),
    weight: 12,
  },
  { arbitrary: fc.constant({ kind: 'sweep' as const }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('reset' as const),
      limiter: fc.integer({ min: 0, max: 1 }),
      key: fc.integer({ min: 0, max: 15 }),
    }),
    weight: 1,
  },
);

const setupArb = fc.record({
  maxKeys: fc.integer({ min: 1, max: 20 }),
  first: policiesArb('a'),
  // The second limiter shares the first one's first policy (same state) plus its own.
  second: policiesArb('b'),
  ops: fc.array(opArb, { minLength: 1, maxLength: 120 }),
});

describe('MemoryStore', () => {
  it('never holds more than maxKeys entries; a request’s own rows survive its decision', async () => {
    await fc.assert(
      fc.asyncProperty(setupArb, async ({ maxKeys, first, second, ops }) => {
        const store = new MemoryStore({ maxKeys, sweepIntervalMs: 0 });
        let now = 0;
        const clock = () => now;
        const limiters: Limiter[] = [
          createLimiter({ name: 'shared', policies: first, store, clock }),
          createLimiter({ name: 'shared', policies: [first[0] as PolicyOptions, ...second], store, clock }),
        ];
        const policyCount = [first.length, second.length + 1];
        for (const op of ops) {
          if (op.kind === 'sweep') store.sweep(now);
          else if (op.kind === 'reset') await limiters[op.limiter]?.reset(`k${op.key}`);
          else {
            now += op.gap;
            const limiter = limiters[op.limiter] as Limiter;
            const d = limiter.decide(`k${op.key}`, { cost: op.cost }) as Decision;
            // With room for all of this request's rows, none of them may be the one evicted for it.
            if (d.allowed && maxKeys >= (policyCount[op.limiter] as number)) {
              const peek = limiter.decide(`k${op.key}`, { cost: 1_000_000 }) as Decision;
              expect(peek.policies.map((p) => p.remaining)).toEqual(d.policies.map((p) => p.remaining));
            }
          }
          expect(store.size).toBeLessThanOrEqual(maxKeys);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('sweeping expired entries never changes a decision', () => {
    fc.assert(
      fc.property(setupArb, ({ first, ops }) => {
        let now = 0;
        const clock = () => now;
        const swept = new MemoryStore({ sweepIntervalMs: 0 });
        const kept = new MemoryStore({ sweepIntervalMs: 0 });
        const a = createLimiter({ policies: first, store: swept, clock });
        const b = createLimiter({ policies: first, store: kept, clock });
        for (const op of ops) {
          if (op.kind !== 'check') continue;
          now += op.gap;
          swept.sweep(now);
          expect(a.decide(`k${op.key}`, { cost: op.cost })).toEqual(b.decide(`k${op.key}`, { cost: op.cost }));
        }
      }),
      { numRuns: RUNS },
    );
  });
});
