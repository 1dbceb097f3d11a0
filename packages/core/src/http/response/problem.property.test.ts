/**
 * @module The problem body writer splices integers between pieces made once per middleware; it must
 * give exactly `JSON.stringify(buildProblem(...))` for every decision a limiter can make.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLimiter } from '../../limiter/create-limiter.js';
import type { Decision, PolicyOptions } from '../../types.js';
import { buildProblem, createProblemBodyWriter, PROBLEM_TYPES, type ProblemKind } from './problem.js';
import { retryAfterSeconds } from './respond.js';

const name = fc.oneof(
  fc.constantFrom('default', 'burst', 'daily', 'a "quoted" name', 'back\\slash', 'x'),
  fc.stringMatching(/^[\x21-\x7e]{1,12}$/),
);
const policy: fc.Arbitrary<PolicyOptions> = fc.record({
  name,
  algorithm: fc.constantFrom('fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'gcra', 'leaky-bucket' as const),
  limit: fc.integer({ min: 1, max: 50 }),
  windowMs: fc.integer({ min: 1, max: 120_000 }),
  unit: fc.constantFrom('requests', 'content-bytes' as const),
});
const policies = fc.uniqueArray(policy, { minLength: 1, maxLength: 3, selector: (p) => p.name });
const costs = fc.array(fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 80 }), fc.double({ min: 0.001, max: 60, noNaN: true })), {
  minLength: 1,
  maxLength: 40,
});
const types = fc.record({
  limited: fc.constantFrom(PROBLEM_TYPES.limited, 'https://iana.org/assignments/http-problem-types#quota-exceeded', 'tag:a"b'),
  costExceedsCapacity: fc.constant(PROBLEM_TYPES.costExceedsCapacity),
  unavailable: fc.constant(PROBLEM_TYPES.unavailable),
});

function kindOf(d: Decision): ProblemKind {
  return d.reason === 'cost-exceeds-capacity' ? 'costExceedsCapacity' : d.reason === 'store-error' ? 'unavailable' : 'limited';
}

describe('createProblemBodyWriter', () => {
  it('writes exactly JSON.stringify(buildProblem(...)) for every rejection', () => {
    fc.assert(
      fc.property(policies, costs, types, (ps, cs, t) => {
        const limiter = createLimiter({ policies: ps, clock: () => 1_800_000_000_000 });
        const write = createProblemBodyWriter(limiter.policies, t);
        const units = new Map(limiter.policies.map((p) => [p.name, p.unit]));
        for (const cost of cs) {
          const d = limiter.decide('k', { cost: Math.round(cost * 1000) / 1000 }) as Decision;
          if (d.allowed) continue;
          const kind = kindOf(d);
          const retryAfter = kind === 'costExceedsCapacity' ? undefined : retryAfterSeconds(d.retryAfterMs);
          expect(write(kind, d, retryAfter)).toBe(JSON.stringify(buildProblem(kind, d, retryAfter, t[kind], units)));
          // The unavailable body, for the same policies (what a fail-closed limiter answers).
          expect(write('unavailable', d, 7)).toBe(JSON.stringify(buildProblem('unavailable', d, 7, t.unavailable, units)));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('reuses the last body only for the same wait: a new Retry-After writes a new body', () => {
    let now = 1_800_000_000_000;
    const limiter = createLimiter({ policies: { limit: 1, windowMs: 60_000 }, clock: () => now });
    const write = createProblemBodyWriter(limiter.policies, PROBLEM_TYPES);
    limiter.decide('k');
    const first = limiter.decide('k') as Decision;
    const body = write('limited', first, retryAfterSeconds(first.retryAfterMs));
    now += 1;
    const again = limiter.decide('k') as Decision;
    expect(write('limited', again, retryAfterSeconds(again.retryAfterMs))).toBe(body);
    now += 1_000;
    const later = limiter.decide('k') as Decision;
    expect(write('limited', later, retryAfterSeconds(later.retryAfterMs))).not.toBe(body);
    expect(JSON.parse(write('limited', later, retryAfterSeconds(later.retryAfterMs))).retryAfter).toBe(59);
  });
});
