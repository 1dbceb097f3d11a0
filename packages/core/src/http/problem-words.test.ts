/**
 * @module Problem details count in words that agree with their numbers: "retry in 1 second", "2 seconds",
 * "per second", in both the fast body writer and `buildProblem`, for the 429 and the 503.
 */
import { describe, expect, it } from 'vitest';
import { createLimiter } from '../create-limiter.js';
import type { Decision, PolicyOptions } from '../types.js';
import { buildProblem, createProblemBodyWriter, PROBLEM_TYPES } from './problem.js';

const POLICY: PolicyOptions = { name: 'default', algorithm: 'fixed-window', limit: 2, windowMs: 1_000 };

async function limited(): Promise<{ decision: Decision; write: ReturnType<typeof createProblemBodyWriter> }> {
  const limiter = createLimiter({ policies: [POLICY], clock: () => 1_800_000_000_000 });
  await limiter.check('k');
  await limiter.check('k');
  const decision = await limiter.check('k');
  expect(decision.limited).toBe(true);
  return { decision, write: createProblemBodyWriter(limiter.policies, PROBLEM_TYPES) };
}

function detail(body: string): string {
  return (JSON.parse(body) as { detail: string }).detail;
}

describe('problem detail wording', () => {
  it.each([
    [1, 'retry in 1 second.'],
    [2, 'retry in 2 seconds.'],
    [60, 'retry in 60 seconds.'],
  ])('503 unavailable, Retry-After %d: "%s"', async (retryAfter, tail) => {
    const { decision, write } = await limited();
    const expected = `The rate limiter cannot decide right now; ${tail}`;
    expect(detail(write('unavailable', decision, retryAfter))).toBe(expected);
    expect(buildProblem('unavailable', decision, retryAfter, PROBLEM_TYPES.unavailable, new Map()).detail).toBe(expected);
  });

  it('503 unavailable without a Retry-After says 1 second', async () => {
    const { decision } = await limited();
    expect(buildProblem('unavailable', decision, undefined, PROBLEM_TYPES.unavailable, new Map()).detail).toBe(
      'The rate limiter cannot decide right now; retry in 1 second.',
    );
  });

  it.each([
    [1, 'retry in 1 second.'],
    [3, 'retry in 3 seconds.'],
  ])('429 limited, Retry-After %d: "... per second exhausted ...; %s"', async (retryAfter, tail) => {
    const { decision, write } = await limited();
    const expected = `Quota of 2 requests per second exhausted (policy "default"); ${tail}`;
    expect(detail(write('limited', decision, retryAfter))).toBe(expected);
    expect(buildProblem('limited', decision, retryAfter, PROBLEM_TYPES.limited, new Map()).detail).toBe(expected);
  });
});
