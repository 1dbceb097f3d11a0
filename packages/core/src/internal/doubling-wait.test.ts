import { describe, expect, it, vi } from 'vitest';
import { DoublingWait } from './doubling-wait.js';

describe('DoublingWait', () => {
  it('waits 200 ms after a first failure, twice as long after each failure in a row, up to 10 s; a success starts over', () => {
    let t = 0;
    const wait = new DoublingWait(() => t);
    expect(wait.over).toBe(true);
    const waits: number[] = [];
    for (let i = 0; i < 8; i++) {
      wait.started();
      waits.push(wait.failed());
    }
    expect(waits).toEqual([200, 400, 800, 1_600, 3_200, 6_400, 10_000, 10_000]);
    expect(wait.over).toBe(false);
    t += 9_999;
    expect(wait.over).toBe(false);
    t += 1;
    expect(wait.over).toBe(true);
    wait.succeeded();
    wait.started();
    expect(wait.failed()).toBe(200);
  });

  it('counts the failures of one try once, and says what is left of its wait', () => {
    let t = 0;
    const wait = new DoublingWait(() => t);
    expect(wait.failed()).toBe(200);
    t += 50;
    expect(wait.failed()).toBe(150);
    wait.started();
    expect(wait.over).toBe(true);
    expect(wait.failed()).toBe(400);
  });

  it('retry runs once its wait is over, one at a time, on a timer that keeps nothing alive; stop clears it', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    try {
      const wait = new DoublingWait();
      const runs: number[] = [];
      wait.retry(() => runs.push(1));
      wait.retry(() => runs.push(2));
      expect(wait.pending).toBe(true);
      await vi.advanceTimersByTimeAsync(199);
      expect(runs).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect([runs, wait.pending]).toEqual([[1], false]);
      wait.started();
      wait.retry(() => runs.push(3));
      wait.stop();
      await vi.advanceTimersByTimeAsync(60_000);
      expect([runs, wait.pending, vi.getTimerCount()]).toEqual([[1], false, 0]);
    } finally {
      vi.useRealTimers();
    }
  });
});
