/**
 * @module Every kernel decides through three paths: `consume` (a one-policy plan), `evaluate` then `commit`
 * (a policy among others) and `evaluate` alone (a peek). On random policies and traces, with clocks that
 * step back and leaky-bucket delays and queue bounds, the three agree: a peek answers exactly what the
 * check that follows at the same `now` answers (what is left and the reset: before it), and a policy decides the same alone or beside another that
 * never binds. Issue 29 (mutation testing): the peek and multi-policy paths were the ones no test read.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLimiter, MemoryStore } from '../index.js';
import { policyArb, traceArb } from '../testing/arbitraries.js';
import { ALGORITHM_VARIANTS } from '../testing/variants.js';
import type { Decision, PolicyOptions, PolicyResult } from '../types.js';

/** The variants, plus leaky-bucket with a queue bound (maxDelayMs) and delays from the first request. */
const policiesArb = fc.oneof(
  ...ALGORITHM_VARIANTS.map((v) => policyArb(v)),
  fc
    .record({
      limit: fc.integer({ min: 1, max: 12 }),
      windowMs: fc.constantFrom(7, 100, 999, 1000),
      burst: fc.option(fc.integer({ min: 1, max: 15 }), { nil: undefined }),
      delayAfter: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
      maxDelayMs: fc.integer({ min: 0, max: 1500 }),
    })
    .map(
      (n): PolicyOptions => ({
        algorithm: 'leaky-bucket',
        limit: n.limit,
        windowMs: n.windowMs,
        maxDelayMs: n.maxDelayMs,
        ...(n.burst === undefined ? {} : { burst: n.burst }),
        ...(n.delayAfter === undefined ? {} : { delayAfter: n.delayAfter }),
      }),
    ),
);

const caseArb = fc
  .record({ policy: policiesArb, monotone: fc.boolean() })
  .chain(({ policy, monotone }) =>
    fc.record({ policy: fc.constant(policy), trace: traceArb(policy, { monotone, weighted: true, maxLength: 25 }) }),
  );

const view = (d: Decision | PolicyResult) => [d.allowed, d.retryAfterMs, d.delayMs, d.reason === 'cost-exceeds-capacity'];

describe('consume, evaluate + commit and evaluate agree', () => {
  it('a peek answers exactly what the check that follows at the same now answers, and what was left before it', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ policy, trace }) => {
        let now = 0;
        const limiter = createLimiter({
          policies: { name: 'p', ...policy },
          store: new MemoryStore({ sweepIntervalMs: 0 }),
          clock: () => now,
        });
        for (const step of trace) {
          now = step.at;
          const peek = await limiter.peek('k', { cost: step.cost });
          // The state as it stands, as every kernel reports it for a cost that can never fit.
          const standing = await limiter.peek('k', { cost: 1000 });
          const check = await limiter.check('k', { cost: step.cost });
          const at = `at ${step.at} cost ${step.cost}`;
          expect(view(peek), at).toEqual(view(check));
          // peek's remaining and reset are those of the state before the check (issue 26): the check's
          // remaining plus its charge, and the reset a refused check reports.
          // (A leaky-bucket queue bound counts what requests can take before the queue is full, which a
          // charge can cut to 0 at once: the check's remaining plus its charge does not hold there.)
          const capacity = check.policies[0]?.capacity ?? Number.POSITIVE_INFINITY;
          const before = check.allowed ? Math.min(capacity, check.remaining + step.cost) : check.remaining;
          if (policy.maxDelayMs === undefined) expect(peek.remaining, at).toBeCloseTo(before, 9);
          expect(peek.resetMs, at).toBe(standing.resetMs);
          if (!check.allowed) expect(peek.resetMs, at).toBe(check.resetMs);
          // And a peek right after the check reads what the check said is left: one number for one state.
          expect((await limiter.peek('k')).remaining, `${at}, a peek after`).toBeCloseTo(check.remaining, 9);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('a policy decides the same alone and beside a policy that never binds', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ policy, trace }) => {
        let now = 0;
        const store = () => new MemoryStore({ sweepIntervalMs: 0 });
        const alone = createLimiter({ policies: { name: 'p', ...policy }, store: store(), clock: () => now });
        const beside = createLimiter({
          policies: [
            { name: 'p', ...policy },
            { name: 'wide', algorithm: 'fixed-window', limit: 1_000_000, windowMs: 1000 },
          ],
          store: store(),
          clock: () => now,
        });
        for (const step of trace) {
          now = step.at;
          const a = await alone.check('k', { cost: step.cost });
          const b = await beside.check('k', { cost: step.cost });
          const p = b.policies.find((r) => r.name === 'p') as PolicyResult;
          expect(view(p), `at ${step.at} cost ${step.cost}`).toEqual(view(a));
          expect(b.allowed).toBe(a.allowed);
        }
      }),
      { numRuns: 200 },
    );
  });
});
