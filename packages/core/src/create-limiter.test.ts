import { describe, expect, it } from 'vitest';
import { createLimiter } from './create-limiter.js';

describe('createLimiter, multi-policy all-or-nothing', () => {
  it('reports the uncharged remaining of a policy that admitted when another rejected', async () => {
    const limiter = createLimiter({
      policies: [
        { name: 'wide', algorithm: 'gcra', limit: 10, windowMs: 1_000 },
        { name: 'narrow', algorithm: 'fixed-window', limit: 1, windowMs: 1_000 },
      ],
      clock: () => 5_000,
    });
    const first = await limiter.check('k');
    expect(first.allowed).toBe(true);
    expect(first.policies.map((p) => p.remaining)).toEqual([9, 0]);
    const second = await limiter.check('k');
    expect(second).toMatchObject({ allowed: false, reason: 'limited', policy: 'narrow', retryAfterMs: 1_000 });
    expect(second.policies.map((p) => [p.allowed, p.remaining])).toEqual([
      [true, 9],
      [false, 0],
    ]);
  });

  it('serializes policies of a single-policy decision (built lazily) with JSON.stringify', async () => {
    const limiter = createLimiter({ policies: { limit: 2, windowMs: 1_000 }, clock: () => 0 });
    const d = await limiter.check('k');
    const json = JSON.parse(JSON.stringify(d));
    expect(json.policies).toEqual([expect.objectContaining({ name: 'default', allowed: true, remaining: 1 })]);
    expect(d.policies).toBe(d.policies);
  });
});
