/**
 * @module The default clock follows test runners' fake timers: a user tests a limit by playing time,
 * and so do our own watchdog and queue tests. Reading `performance` from node:perf_hooks, faster on
 * Node 20, would escape them (clock.ts says why it reads the global).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { monotonicClock } from './clock.js';
import { createLimiter } from './create-limiter.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('monotonicClock', () => {
  it('moves with fake timers, by exactly the time they advance', () => {
    vi.useFakeTimers({ toFake: ['performance', 'setTimeout', 'clearTimeout'] });
    const before = monotonicClock();
    vi.advanceTimersByTime(61_000);
    expect(monotonicClock() - before).toBe(61_000);
  });

  it('lets a test play time through a limit with the default clock', async () => {
    vi.useFakeTimers({ toFake: ['performance', 'setTimeout', 'clearTimeout'] });
    const limiter = createLimiter({ policies: [{ algorithm: 'fixed-window', limit: 1, windowMs: 60_000 }] });
    expect((await limiter.check('k')).allowed).toBe(true);
    expect((await limiter.check('k')).allowed).toBe(false);
    vi.advanceTimersByTime(60_000);
    expect((await limiter.check('k')).allowed).toBe(true);
    await limiter.close();
  });
});
