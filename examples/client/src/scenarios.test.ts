import { describe, expect, it } from 'vitest';
import { burstThroughShaper, burstWithRetry, pacedPerApiKey } from './scenarios.js';

describe('examples/client', () => {
  it('withRetry: a burst beyond the partner quota all succeeds, after the partner asked to wait', async () => {
    const r = await burstWithRetry(8);
    expect(r.outcomes).toEqual(Array.from({ length: 8 }, () => 200));
    expect(r.served).toBe(8);
    expect(r.retries).toBeGreaterThan(0);
    expect(r.received).toBe(8 + r.retries);
  });

  it('shaper: the partner never refuses; what cannot start within the deadline is dropped, not sent late', async () => {
    const r = await burstThroughShaper(10, 1_200);
    // 4 at once (our burst), then one per 200 ms until the 1.2 s deadline; none is refused.
    expect(r.received).toBe(r.served);
    expect(r.outcomes.filter((o) => o === 200)).toHaveLength(r.served);
    expect(r.outcomes.every((o) => o === 200 || o === 'ERR_RL_TASK_EXPIRED')).toBe(true);
    const short = await burstThroughShaper(10, 500);
    expect(short.outcomes.filter((o) => o === 'ERR_RL_TASK_EXPIRED').length).toBeGreaterThan(0);
    expect(short.received).toBe(short.served);
  });

  it("pacing per API key: a key whose quota is spent waits for it, and never holds the other key's calls", async () => {
    const r = await pacedPerApiKey(10, 3, 100);
    expect(r.b.outcomes).toEqual([200, 200, 200]);
    // B was done while A's calls still waited for A's quota (without pacing.key, one partition: B waited behind A).
    expect(r.aPendingWhenBDone).toBeGreaterThan(0);
    expect(r.a.outcomes).toEqual(Array.from({ length: 10 }, () => 200));
    expect(r.pacedMs).toBeGreaterThan(0);
    expect(r.pacedRefused).toBe(0);
  });
});
