/**
 * @module The default clock follows test runners' fake timers: a user tests a limit by playing time,
 * and so do our own watchdog and queue tests. Reading `performance` from node:perf_hooks, faster on
 * Node 20, would escape them (clock.ts says why it reads the global).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { monotonicClock, READS_PER_READING } from './clock.js';
import { createLimiter } from './limiter/create-limiter.js';

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

describe('monotonicClock shares one reading per turn of the event loop', () => {
  it('serves a turn from one reading, and reads again on the next turn', async () => {
    await new Promise((resolve) => setImmediate(resolve));
    const first = monotonicClock();
    const spin = performance.now() + 3;
    while (performance.now() < spin) {
      // Burn 3 ms inside this turn: the shared reading does not move.
    }
    expect(monotonicClock()).toBe(first);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(monotonicClock()).toBeGreaterThanOrEqual(first + 3);
  });

  it('reads again after READS_PER_READING reads, however long the turn', () => {
    for (let i = 0; i < READS_PER_READING; i++) monotonicClock();
    const start = monotonicClock();
    const spin = performance.now() + 2;
    while (performance.now() < spin) {
      // Burn 2 ms.
    }
    let moved = false;
    for (let i = 0; i <= READS_PER_READING && !moved; i++) moved = monotonicClock() >= start + 2;
    expect(moved).toBe(true);
  });

  it('never shares a real reading with a test that installed fake timers', () => {
    monotonicClock();
    vi.useFakeTimers();
    const before = monotonicClock();
    vi.advanceTimersByTime(5_000);
    expect(monotonicClock() - before).toBe(5_000);
  });

  it('never steps back', () => {
    let last = monotonicClock();
    for (let i = 0; i < 10_000; i++) {
      const t = monotonicClock();
      expect(t).toBeGreaterThanOrEqual(last);
      last = t;
    }
  });
});
