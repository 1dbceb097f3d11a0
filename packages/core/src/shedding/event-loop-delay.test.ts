/**
 * @module The event-loop delay reading, in virtual time: a timer's lateness, the longest per window. A
 * loop blocked on every turn (one tick per window) must read its delay, which a per-window reset of
 * `monitorEventLoopDelay` lost.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEventLoopDelaySampler } from './event-loop-delay.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('createEventLoopDelaySampler', () => {
  it('reads the longest lateness since the last read, a loop blocked on every turn included', () => {
    vi.useFakeTimers();
    let t = 0;
    const sampler = createEventLoopDelaySampler(10, () => t);
    // Three turns each blocked 400 ms by a synchronous handler: one tick per turn, each 390 ms late.
    for (let i = 0; i < 3; i++) {
      t += 400;
      vi.advanceTimersByTime(10);
      expect(sampler.read()).toBe(390);
    }
    // An idle loop: the ticks come on time.
    for (let i = 0; i < 25; i++) {
      t += 10;
      vi.advanceTimersByTime(10);
    }
    expect(sampler.read()).toBe(0);
    // Blocked now, before the tick: read in the blocked turn, it counts, once: the tick that follows
    // records it no more (two windows of lag from one pause would shed as a saturated loop does).
    t += 250;
    expect(sampler.read()).toBe(240);
    vi.advanceTimersByTime(10);
    expect(sampler.read()).toBe(0);
    sampler.close();
  });

  it('reads only lateness of the last maxAgeMs: a read that ends an idle spell finds no pause from before it', () => {
    vi.useFakeTimers();
    let t = 0;
    const sampler = createEventLoopDelaySampler(10, () => t, 250);
    // A 300 ms pause, then 5 s of idle loop: ticks on time.
    t += 300;
    vi.advanceTimersByTime(10);
    for (let i = 0; i < 500; i++) {
      t += 10;
      vi.advanceTimersByTime(10);
    }
    // Before: 290, read in a window that began long after the pause.
    expect(sampler.read()).toBe(0);
    sampler.close();
  });
});
