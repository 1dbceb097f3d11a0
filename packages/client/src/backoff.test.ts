import { describe, expect, it } from 'vitest';
import { backoffDelay } from './backoff.js';
import { RetryBudget } from './retry-budget.js';

const base = { baseDelayMs: 100, maxDelayMs: 30_000, previousMs: 0 };

describe('backoffDelay', () => {
  it('full jitter: the server wait is a floor, the spread above it doubles per attempt, capped', () => {
    const at = (attempt: number, r: number, floorMs?: number) =>
      backoffDelay({ ...base, attempt, floorMs, jitter: 'full', random: () => r });
    expect(at(1, 0, 1000)).toBe(1000);
    expect(at(1, 0.999_999, 1000)).toBe(2000);
    expect(at(3, 0.5, 1000)).toBe(3000);
    expect(at(1, 0.5)).toBe(50);
    expect(at(4, 0.5)).toBe(400);
    expect(at(30, 0.999)).toBe(29_970);
    expect(at(30, 0.999, 40_000)).toBe(40_000); // a floor above the cap is never cut (the caller gives up first)
    expect(at(1, 0.999, 30_000)).toBe(30_000); // a floor at the cap leaves no room
  });

  it('keeps its draws within the cap without piling them on it: a wait near the cap spreads over what is left', () => {
    // Retry-After 20 s under the default 30 s cap: AWS's min(cap, floor + random * spread) put every draw
    // above 0.5 exactly on 30 s, so half the clients refused together came back at one instant.
    for (const jitter of ['full', 'decorrelated'] as const) {
      const draws = Array.from({ length: 1000 }, (_, i) =>
        backoffDelay({ ...base, attempt: 1, floorMs: 20_000, jitter, random: () => i / 1000 }),
      );
      expect(Math.min(...draws)).toBe(20_000);
      expect(Math.max(...draws)).toBeLessThanOrEqual(30_000);
      expect(draws.filter((d) => d === 30_000).length).toBeLessThanOrEqual(1);
      // Evenly spread: each tenth of the room above the floor gets a tenth of the draws.
      const tenths = new Array<number>(10).fill(0);
      for (const d of draws) {
        const i = Math.min(9, Math.floor((d - 20_000) / 1000));
        tenths[i] = (tenths[i] ?? 0) + 1;
      }
      for (const n of tenths) expect(n).toBeGreaterThanOrEqual(99);
    }
  });

  it('decorrelated jitter: from max(base, floor) up to three times the previous wait, capped', () => {
    const at = (previousMs: number, r: number, floorMs?: number) =>
      backoffDelay({ ...base, attempt: 2, previousMs, floorMs, jitter: 'decorrelated', random: () => r });
    // Before the first retry (previous 0) the range is low to 3 x low, as if the previous wait were low:
    // clients refused together, even with the same Retry-After, come back spread, not at one instant.
    expect(at(0, 0)).toBe(100);
    expect(at(0, 0.5)).toBe(200);
    expect(at(0, 0.5, 1000)).toBe(2000);
    expect(at(0, 0.999, 1000)).toBe(2998);
    expect(at(1000, 0.5)).toBe(1550);
    expect(at(1000, 0, 2000)).toBe(2000);
    expect(at(1000, 0.5, 2000)).toBe(2500);
    expect(at(20_000, 0.999)).toBe(29_971); // drawn within 100 to 30,000 (the cap), not cut at it
    expect(at(20_000, 0.999, 30_000)).toBe(30_000); // a floor at the cap leaves no room
  });
});

describe('RetryBudget', () => {
  it('allows the floor plus a tenth of the requests in the window, and ages them out', () => {
    let now = 0;
    const budget = new RetryBudget(0.1, 2, 10_000, () => now);
    for (let i = 0; i < 30; i++) budget.request();
    const granted = Array.from({ length: 10 }, () => budget.tryRetry()).filter(Boolean).length;
    expect(granted).toBe(5); // 2 + 0.1 * 30
    now = 10_500; // the window has passed: only the floor is left
    expect([budget.tryRetry(), budget.tryRetry(), budget.tryRetry()].map(Boolean)).toEqual([true, true, false]);
  });

  it('takes back a retry given back while its slot is in the window, and only then', () => {
    let now = 0;
    const budget = new RetryBudget(0, 2, 10_000, () => now);
    const first = budget.tryRetry();
    now = 4_000;
    const second = budget.tryRetry();
    expect(budget.tryRetry()).toBeUndefined();
    if (first === undefined || second === undefined) throw new Error('the floor allows two');
    budget.giveBack(second);
    expect(budget.tryRetry()).toBeDefined();
    // The first retry's slot has aged out by now: it frees itself, and giving it back takes nothing else.
    now = 10_500;
    budget.giveBack(first);
    expect([budget.tryRetry(), budget.tryRetry()].map(Boolean)).toEqual([true, false]);
  });
});
