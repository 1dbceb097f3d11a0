import { afterEach, describe, expect, it, vi } from 'vitest';
import { ProcessStore, Shared } from '../testing/shared-store.js';
import { createLimiter } from './create-limiter.js';

/** Timers, `Date` and `performance.now()` in virtual time: the limiter's clock is `Date.now`. */
const FAKE: NonNullable<Parameters<typeof vi.useFakeTimers>[0]>['toFake'] = ['setTimeout', 'clearTimeout', 'Date', 'performance'];

describe("a carry's charge of one policy on its own, sent until it lands", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a plan of a short and a long window: the long one is charged every local admission even when its own charge fails at first', async () => {
    // A ten-minute window starts at 1,200,000.
    vi.useFakeTimers({ toFake: FAKE, now: 1_200_000 });
    const store = new ProcessStore(new Shared());
    const limiter = createLimiter({
      name: 'carry-rest',
      policies: [
        { name: 'second', algorithm: 'fixed-window', limit: 5, windowMs: 1_000 },
        { name: 'ten-minutes', algorithm: 'fixed-window', limit: 100, windowMs: 600_000 },
      ],
      store,
      clock: () => Date.now(),
      localShare: 1,
      storeTimeoutMs: 100,
      logger: { warn() {}, error() {} },
    });
    let admitted = 0;
    const check = async (): Promise<boolean> => {
      const d = await limiter.check('k');
      if (d.allowed) admitted += 1;
      return d.degraded;
    };
    expect(await check()).toBe(false);
    // Three seconds of outage: the failure mode admits 5 in each new second.
    store.failing = true;
    for (let t = 0; t < 3_000; t += 20) {
      expect(await check()).toBe(true);
      await vi.advanceTimersByTimeAsync(20);
    }
    expect(admitted).toBeGreaterThan(6);
    // Back, but a charge of one policy alone (the long window's rest) fails for a while.
    store.failing = false;
    store.failsFor = (plan) => plan.policies.length === 1;
    for (let i = 0; i < 50 && (await check()); i++) await vi.advanceTimersByTimeAsync(200);
    await vi.advanceTimersByTimeAsync(300);
    store.failsFor = undefined;
    await vi.advanceTimersByTimeAsync(2_000);
    const long = (await limiter.peek('k')).policies.find((p) => p.name === 'ten-minutes');
    expect(long?.remaining).toBe(100 - admitted);
    await limiter.close();
  });
});
