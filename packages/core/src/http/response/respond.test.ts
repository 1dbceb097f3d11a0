import { describe, expect, it } from 'vitest';
import { createLimiter } from '../../limiter/create-limiter.js';
import type { Decision, PolicyOptions } from '../../types.js';
import { createHeaderWriter } from './header-writer.js';
import { createProblemBodyWriter, PROBLEM_TYPES } from './problem.js';
import { type ResponseConfig, respond, retryAfterSeconds } from './respond.js';

function setup(policies: PolicyOptions[], mode: 'enforce' | 'shadow' = 'enforce') {
  let now = 1_800_000_000_000;
  const limiter = createLimiter({ policies, clock: () => now, mode });
  const config: ResponseConfig = {
    mode,
    headers: createHeaderWriter('draft-11', limiter.policies, undefined),
    problemTypes: PROBLEM_TYPES,
    units: new Map(limiter.policies.map((p) => [p.name, p.unit])),
    problemBody: createProblemBodyWriter(limiter.policies, PROBLEM_TYPES),
  };
  return {
    advance(ms: number) {
      now += ms;
    },
    async plan(cost?: number) {
      const d: Decision = await limiter.check('k', cost === undefined ? undefined : { cost });
      return { d, plan: respond(d, config, () => now) };
    },
  };
}

const FW: PolicyOptions = { name: 'default', algorithm: 'fixed-window', limit: 2, windowMs: 60_000 };

describe('respond', () => {
  it('passes an admitted request with headers', async () => {
    const { plan } = await setup([FW]).plan();
    expect(plan).toMatchObject({ action: 'pass', status: undefined, body: undefined, delayMs: 0 });
    expect(plan.headers.map((h) => h[0])).toEqual(['RateLimit-Policy', 'RateLimit']);
  });

  it.each([
    [1, 'per millisecond'],
    [250, 'per 250 milliseconds'],
    [1_000, 'per second'],
    [1_500, 'per 1.5 seconds'],
    [60_000, 'per 60 seconds'],
  ])('states the window of %i ms as the policy has it, not as w rounds it: %s', async (windowMs, words) => {
    const s = setup([{ ...FW, windowMs }]);
    await s.plan();
    await s.plan();
    const { plan } = await s.plan();
    expect(JSON.parse(plan.body as string).detail).toContain(`Quota of 2 requests ${words} exhausted`);
  });

  it.each([
    [1, 'requests', 'Quota of 1 request per 10 seconds'],
    [1, 'content-bytes', 'Quota of 1 byte per 10 seconds'],
    [2, 'content-bytes', 'Quota of 2 bytes per 10 seconds'],
  ] as const)('counts a quota of %i %s in words that agree with it', async (limit, unit, words) => {
    const s = setup([{ name: 'p', algorithm: 'fixed-window', limit, windowMs: 10_000, unit }]);
    for (let i = 0; i < limit; i++) await s.plan();
    const { plan } = await s.plan();
    expect(JSON.parse(plan.body as string).detail).toContain(`${words} exhausted`);
  });

  it('answers 429 with problem+json, no-store and a Retry-After equal to retryAfter and t', async () => {
    const s = setup([FW]);
    await s.plan();
    await s.plan();
    s.advance(17_500);
    const { plan } = await s.plan();
    expect(plan.status).toBe(429);
    expect(Object.fromEntries(plan.headers)).toEqual({
      'RateLimit-Policy': '"default";q=2;w=60',
      RateLimit: '"default";r=0;t=43',
      'Retry-After': '43',
      'Cache-Control': 'no-store',
      'Content-Type': 'application/problem+json',
    });
    expect(JSON.parse(plan.body as string)).toEqual({
      type: PROBLEM_TYPES.limited,
      title: 'Too Many Requests',
      status: 429,
      detail: 'Quota of 2 requests per 60 seconds exhausted (policy "default"); retry in 43 seconds.',
      policy: 'default',
      limit: 2,
      windowSeconds: 60,
      retryAfter: 43,
      'violated-policies': ['default'],
    });
  });

  it('a weighted request refused with quota left: the detail says what it costs and what is left, as r does', async () => {
    const s = setup([{ name: 'rows', algorithm: 'fixed-window', limit: 100, windowMs: 60_000 }]);
    await s.plan(1);
    const { plan } = await s.plan(100);
    expect(plan.status).toBe(429);
    expect(Object.fromEntries(plan.headers)).toMatchObject({ RateLimit: '"rows";r=99;t=60', 'Retry-After': '60' });
    expect(JSON.parse(plan.body as string)).toMatchObject({
      detail:
        'This request costs 100 requests but 99 of the quota of 100 requests per 60 seconds are left (policy "rows"); retry in 60 seconds.',
      retryAfter: 60,
    });
    // Less than one whole unit left (a bucket half refilled): the quota is exhausted, as r=0 says.
    const half = setup([{ name: 'tb', algorithm: 'token-bucket', limit: 10, windowMs: 1_000 }]);
    await half.plan(10);
    half.advance(50);
    const refill = await half.plan(1);
    expect(refill.d.remaining).toBe(0.5);
    expect(JSON.parse(refill.plan.body as string).detail).toMatch(/^Quota of 10 requests per second exhausted/);
    const one = setup([{ name: 'rows', algorithm: 'fixed-window', limit: 2, windowMs: 60_000 }]);
    await one.plan(1);
    expect(JSON.parse((await one.plan(2)).plan.body as string).detail).toBe(
      'This request costs 2 requests but 1 of the quota of 2 requests per 60 seconds is left (policy "rows"); retry in 60 seconds.',
    );
  });

  it('answers 413 without Retry-After or any rate-limit header when the cost can never fit', async () => {
    const { d, plan } = await setup([FW]).plan(3);
    expect(d.reason).toBe('cost-exceeds-capacity');
    expect(plan.status).toBe(413);
    const headers = Object.fromEntries(plan.headers);
    expect(headers['Retry-After']).toBeUndefined();
    expect(headers['Cache-Control']).toBe('no-store');
    expect(Object.keys(headers)).toEqual(['Cache-Control', 'Content-Type']);
    expect(JSON.parse(plan.body as string)).toMatchObject({ type: PROBLEM_TYPES.costExceedsCapacity, status: 413, capacity: 2, cost: 3 });
  });

  it('answers 503 with Retry-After and no rate-limit fields for a store error', () => {
    const d = {
      allowed: false,
      limited: true,
      reason: 'store-error',
      mode: 'enforce',
      key: 'k',
      cost: 1,
      policy: 'default',
      remaining: 0,
      retryAfterMs: 1500,
      resetMs: 0,
      delayMs: 0,
      policies: [],
      shadow: undefined,
      degraded: true,
    } satisfies Decision;
    const plan = respond(
      d,
      {
        mode: 'enforce',
        headers: undefined,
        problemTypes: PROBLEM_TYPES,
        units: new Map(),
        problemBody: createProblemBodyWriter([], PROBLEM_TYPES),
      },
      () => 0,
    );
    expect(plan.status).toBe(503);
    expect(Object.fromEntries(plan.headers)).toEqual({
      'Retry-After': '2',
      'Cache-Control': 'no-store',
      'Content-Type': 'application/problem+json',
    });
    expect(JSON.parse(plan.body as string)).toMatchObject({ type: PROBLEM_TYPES.unavailable, status: 503, retryAfter: 2 });
  });

  it('shadow mode passes silently even when the verdict is "limited"', async () => {
    const s = setup([FW], 'shadow');
    await s.plan();
    await s.plan();
    const { d, plan } = await s.plan();
    expect(d.limited).toBe(true);
    expect(plan).toMatchObject({ action: 'pass', headers: [], delayMs: 0 });
  });

  it('carries the leaky-bucket delay on pass', async () => {
    const s = setup([{ name: 'shaper', algorithm: 'leaky-bucket', limit: 10, windowMs: 1000, burst: 5 }]);
    expect((await s.plan()).plan.delayMs).toBe(0);
    expect((await s.plan()).plan.delayMs).toBe(100);
  });

  it('Retry-After is at least 1 and rounds up', () => {
    expect([retryAfterSeconds(0), retryAfterSeconds(1), retryAfterSeconds(1000), retryAfterSeconds(1001)]).toEqual([1, 1, 1, 2]);
  });
});
