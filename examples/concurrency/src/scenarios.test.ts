import { describe, expect, it } from 'vitest';
import { burstExports, compareShedding } from './scenarios.js';

describe('examples/concurrency', () => {
  it('caps exports per user: never more than 2 running, 2 wait, 2 refused; another user is unaffected', async () => {
    const r = await burstExports();
    expect(r.peak).toBe(2);
    expect([...r.alice].sort()).toEqual([200, 200, 200, 200, 429, 429]);
    expect(r.bob).toBe(200);
  });

  // Bounds loose enough for a shared CI machine (see bench/RESULTS.md for measured figures): the
  // unprotected twin's p99 grows with the run (its queue grows 200 requests a second), the protected one's does not.
  it('keeps admitted p99 within 1 s at twice the capacity, a quarter of the unprotected twin at most', async () => {
    const { protectedRun: p, unprotectedRun: u } = await compareShedding(2_000, 400);
    expect(p.byStatus['503'] ?? 0).toBeGreaterThan(0);
    expect(p.ok.p99).toBeLessThan(1_000);
    expect(u.byStatus['503'] ?? 0).toBe(0);
    expect(u.ok.p99).toBeGreaterThan(1_500);
    expect(u.ok.p99).toBeGreaterThan(p.ok.p99 * 4);
  }, 30_000);
});
