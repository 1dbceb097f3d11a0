/**
 * @module The common limiter's own path (solo.ts) against the general one (decide.ts), on random policies
 * of every algorithm and random traces (weighted costs, clocks stepping back, several keys, one of them
 * too long): a limiter whose checks of cost 1 take the solo path (no options, or only the adapters' route,
 * request and signal) and whose other checks take
 * the general one decides, counts and refunds exactly as a twin whose every check takes the general path,
 * also when a key is checked again in the same ms (a rejection answered again without the store) and
 * when a store of two rows evicts between those checks.
 */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { MemoryStore } from '../stores/memory-store.js';
import { policyArb, traceArb } from '../testing/arbitraries.js';
import { ALGORITHM_VARIANTS } from '../testing/variants.js';
import type { Decision, PolicyOptions } from '../types.js';
import { createLimiter } from './create-limiter.js';

const LONG_KEY = `k${'x'.repeat(300)}`;

/** Everything a caller can read of a decision, the receipt as its JSON. */
function seen(d: Decision): unknown {
  const { receipt, policies, ...rest } = JSON.parse(JSON.stringify(d)) as Record<string, unknown>;
  return { ...rest, policies, receipt, hasReceipt: d.receipt !== undefined };
}

function twin(policy: PolicyOptions, clock: () => number, maxKeys: number) {
  const store = new MemoryStore({ sweepIntervalMs: 0, maxKeys });
  return { store, limiter: createLimiter({ policies: policy, store, clock }) };
}

describe('the solo path', () => {
  it.each(ALGORITHM_VARIANTS.map((v) => [v.label, v] as const))(
    '%s: decides, counts and refunds as the general path',
    async (_, variant) => {
      await fc.assert(
        fc.asyncProperty(
          policyArb(variant).chain((policy) =>
            fc.record({
              policy: fc.constant(policy),
              trace: traceArb(policy, { weighted: true, monotone: false, maxLength: 24, keys: 3 }),
              refunds: fc.array(fc.boolean(), { minLength: 24, maxLength: 24 }),
              // Checks of the same key again in the same ms: a rejection is answered again without the store.
              repeats: fc.array(fc.nat(2), { minLength: 24, maxLength: 24 }),
              // Two rows for three keys: evictions between the repeats.
              maxKeys: fc.constantFrom(2, 1000),
            }),
          ),
          async ({ policy, trace, refunds, repeats, maxKeys }) => {
            let now = 0;
            const clock = () => now;
            const solo = twin(policy, clock, maxKeys);
            const general = twin(policy, clock, maxKeys);
            const generalCalls = vi.spyOn(solo.store, 'apply');
            let expectedGeneral = 0;
            for (const [i, step] of trace.entries()) {
              now = step.at;
              const key = step.key === 'k2' ? LONG_KEY : (step.key ?? 'k0');
              const fast = step.cost === 1 && key !== LONG_KEY;
              // What the adapters pass with every request (route, request, signal) keeps a check on the solo path.
              const adapterOptions = { route: '/r', request: { step: i }, signal: new AbortController().signal };
              const fastCheck = () => (i % 2 === 0 ? solo.limiter.decide(key) : solo.limiter.decide(key, adapterOptions));
              for (let again = 0; again <= (repeats[i] ?? 0); again++) {
                if (!fast) expectedGeneral += 1;
                const a = (fast ? fastCheck() : solo.limiter.decide(key, { cost: step.cost })) as Decision;
                const b = general.limiter.decide(key, { cost: step.cost }) as Decision;
                expect(seen(a), `step ${i}, check ${again}`).toEqual(seen(b));
                if (refunds[i] === true && a.receipt !== undefined) {
                  expect(await solo.limiter.refund(a), `refund ${i}`).toEqual(await general.limiter.refund(b));
                }
              }
            }
            // Every check of cost 1 under a short key took the solo path: the general one asked the store for the others only.
            expect(generalCalls).toHaveBeenCalledTimes(expectedGeneral);
            expect(solo.limiter.stats()).toEqual(general.limiter.stats());
          },
        ),
        { numRuns: 60 },
      );
    },
  );
});
