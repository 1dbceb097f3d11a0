/**
 * @module The hot-key sketches' sampling, driven the way DecisionObserver drives it: a decision is
 * counted when `skip` has run down to 0, or when it is the first of a new epoch.
 */
import { describe, expect, it } from 'vitest';
import { EXACT_OFFERS, HotKeys, SAMPLE_EVERY } from './hot-keys.js';

/** `decisions` rejections of `keyOf(i)` at time `at` through the countdown; returns how many reached the sketch. */
function flood(hot: HotKeys, decisions: number, keyOf: (i: number) => string, at = 0): number {
  let counted = 0;
  for (let i = 0; i < decisions; i++) {
    if (hot.skip > 0 && at < hot.epochEnd) {
      hot.skip -= 1;
    } else {
      counted += 1;
      hot.rejected(keyOf(i), 'api', at);
    }
  }
  return counted;
}

describe('HotKeys sampling', () => {
  it('counts the first EXACT_OFFERS decisions of an epoch one by one, exactly', () => {
    const hot = new HotKeys(128, 60_000, () => 0);
    expect(flood(hot, EXACT_OFFERS, (i) => (i % 4 === 0 ? 'a' : 'b'))).toBe(EXACT_OFFERS);
    const report = hot.report(2);
    expect(report.rejected.map((k) => [k.key, k.count, k.error])).toEqual([
      ['b', 768, 0],
      ['a', 256, 0],
    ]);
  });

  it('samples 1 in SAMPLE_EVERY up to SAMPLE_EVERY x size² decisions, then ever fewer, and stays unbiased', () => {
    const size = 128;
    const hot = new HotKeys(size, 60_000, () => 0);
    const decisions = 2_000_000;
    // Two thirds from one attacker, a sixth from a scanner, a sixth spread over 500 clients.
    const counted = flood(hot, decisions, (i) => (i % 6 < 4 ? 'attacker' : i % 6 === 4 ? 'scanner' : `client-${i % 500}`));
    const fixedRate = EXACT_OFFERS + (decisions - EXACT_OFFERS) / SAMPLE_EVERY;
    // Past 16 x 128² = 262,144 the interval grows with the total: about 16,400 + 16,384 x ln(2M / 262,144) = 50,000 updates.
    expect(counted).toBeLessThan(fixedRate / 2);
    expect(counted).toBeGreaterThan(40_000);
    const report = hot.report(2);
    // The sampling error's standard deviation stays under N / size (15,600 here): allow three of them.
    const bound = decisions / size;
    const [attacker, scanner] = report.rejected;
    expect(attacker?.key).toBe('attacker');
    expect(Math.abs((attacker?.count ?? 0) - (decisions * 4) / 6)).toBeLessThan(3 * bound);
    expect(scanner?.key).toBe('scanner');
    expect(Math.abs((scanner?.count ?? 0) - (scanner?.error ?? 0) - decisions / 6)).toBeLessThan(3 * bound);
    // N, estimated from the sample: errorBound is N / size.
    expect(Math.abs(report.errorBound * size - decisions)).toBeLessThan(decisions * 0.01);
  });

  it('a key counted in both epochs is reported at its whole count, exact while neither sketch evicted it', () => {
    let at = 0;
    const hot = new HotKeys(4, 60_000, () => at);
    flood(hot, 10, () => 'a', at);
    at = 60_000;
    flood(hot, 10, () => 'a', at);
    // Four more keys fill the sketch of four: one of them evicts another, so the sketch's minimum is 5.
    for (const k of ['b', 'c', 'd', 'e']) flood(hot, 5, () => k, at);
    const a = hot.report(10).rejected.find((k) => k.key === 'a');
    expect(a).toMatchObject({ count: 20, error: 0 });
    // Every key's truth lies in [count - error, count].
    for (const k of hot.report(10).rejected) {
      const truth = k.key === 'a' ? 20 : 5;
      expect(k.count - k.error).toBeLessThanOrEqual(truth);
      expect(k.count).toBeGreaterThanOrEqual(truth);
    }
  });

  it('counts exactly again from the first decision of a new epoch: no gap or weight of the last epoch carries over', () => {
    // Size 2: after 200,000 rejections the interval is 50,000, and so is a pending gap.
    const hot = new HotKeys(2, 60_000, () => 110_000);
    flood(hot, 200_000, () => 'flood');
    expect(hot.skip).toBeGreaterThan(1000);
    // The next epoch: a light stream, one rejection a second, is counted one by one, each at weight 1.
    for (let s = 0; s < 50; s++) flood(hot, 1, () => 'light', 60_000 + s * 1000);
    const report = hot.report(2);
    expect(report.rejected.find((k) => k.key === 'light')).toMatchObject({ count: 50, error: 0 });
    // The flood is the epoch before, still in the report.
    expect(report.rejected.map((k) => k.key).sort()).toEqual(['flood', 'light']);
  });

  it('reports at least one epoch when its clock reads before the epoch began (a clock that stepped back)', () => {
    const hot = new HotKeys(128, 60_000, () => 0);
    hot.rejected('k', 'api', 100_000);
    const report = hot.report(1);
    expect(report.windowMs).toBe(60_000);
    expect(report.rejected.map((k) => k.key)).toEqual(['k']);
  });

  it('samples again once a new epoch has seen EXACT_OFFERS decisions', () => {
    let now = 0;
    const hot = new HotKeys(128, 60_000, () => now);
    flood(hot, 100_000, () => 'old');
    now = 60_000;
    const counted = flood(hot, 5 * EXACT_OFFERS, () => 'new', now);
    // 1024 exact, then 4096 sampled about 1 in 16.
    expect(counted).toBeGreaterThan(EXACT_OFFERS + 100);
    expect(counted).toBeLessThan(EXACT_OFFERS + 500);
    const fresh = hot.report(2).rejected.find((k) => k.key === 'new');
    // A sampling standard deviation of sqrt(16 x 4096) = 256: allow about four.
    expect(Math.abs((fresh?.count ?? 0) - 5 * EXACT_OFFERS)).toBeLessThan(1000);
  });
});

describe('HotKeys busy: keys ranked by decisions, with their share of store calls', () => {
  /** `decisions` decisions of `keyOf(i)` through the busy countdown, the ones `called(i)` also waiting for a store call. */
  function decide(hot: HotKeys, decisions: number, keyOf: (i: number) => string, called: (i: number) => boolean, at = 0): void {
    for (let i = 0; i < decisions; i++) {
      if (hot.busySkip > 0 && at < hot.epochEnd) hot.busySkip -= 1;
      else hot.decided(keyOf(i), 'api', at);
      if (called(i)) hot.storeCall(keyOf(i), at);
    }
  }

  /** Each step: `n` decisions of one key, all waiting for a store call or none. */
  function keyed(hot: HotKeys, ...steps: [key: string, n: number, called: boolean][]): void {
    for (const [key, n, called] of steps)
      decide(
        hot,
        n,
        () => key,
        () => called,
      );
  }

  it('ranks every decision, admitted ones too, and gives each busy key its share of the store calls', () => {
    const hot = new HotKeys(64, 60_000, () => 0);
    // 'hot' decided 600 times with 6 store calls (batched), 'warm' 300 times each a store call, 100 cold keys once each.
    decide(
      hot,
      600,
      () => 'hot',
      (i) => i % 100 === 0,
    );
    decide(
      hot,
      300,
      () => 'warm',
      () => true,
    );
    decide(
      hot,
      100,
      (i) => `cold${i}`,
      () => true,
    );
    const report = hot.report(2);
    expect(report.storeCalls).toBe(406);
    expect(report.busy.map((b) => [b.key, b.decisions, b.storeCalls])).toEqual([
      ['hot', 600, 6],
      ['warm', 300, 300],
    ]);
    expect(report.busy[0]?.storeShare).toBeCloseTo(6 / 406, 6);
    expect(report.busy[1]?.storeShare).toBeCloseTo(300 / 406, 6);
    // Rejections and near-limit admissions are untouched by the busy countdown.
    expect(report.rejected).toEqual([]);
  });

  it("bounds a key's store calls by what an eviction may have added: a cold key that inherits a count says so", () => {
    const hot = new HotKeys(2, 60_000, () => 0);
    // 'c' takes the place of 'b' (the minimum) in both sketches, inheriting its 40.
    keyed(hot, ['a', 50, true], ['b', 40, true], ['c', 1, true]);
    const busy = hot.report(2).busy.map((b) => [b.key, b.decisions, b.error, b.storeCalls, b.storeCallsError]);
    expect(busy).toEqual([
      ['a', 50, 0, 50, 0],
      ['c', 41, 40, 41, 40],
    ]);
  });

  it("a key the calls sketch evicted reads the sketch's minimum, all of it error: never a count of 0 said to be exact", () => {
    const hot = new HotKeys(2, 60_000, () => 0);
    // 'a': 1 decision that waited for the store, then 49 batched; 'b' and 'c' then push it out of the calls sketch.
    keyed(hot, ['a', 1, true], ['a', 49, false], ['b', 5, true], ['c', 5, true]);
    const a = hot.report(3).busy.find((b) => b.key === 'a');
    // Before: storeCalls 0, storeCallsError 0 ("exact"), where the truth is 1.
    expect(a?.storeCalls).toBeGreaterThanOrEqual(1);
    expect(a?.storeCallsError).toBe(a?.storeCalls);
  });

  it('keeps an exact store-call count whatever the sampled decisions read: 6,000 round trips are 6,000, error 0', () => {
    // Every decision a round trip: past the first offers, decisions are sampled (an estimate, above or
    // below), calls are not. Twenty limiters' worth, so that some sample below.
    const reads = Array.from({ length: 20 }, () => {
      const hot = new HotKeys(64, 60_000, () => 0);
      decide(
        hot,
        6_000,
        () => 'k',
        () => true,
      );
      const [k] = hot.report(1).busy;
      return [k?.storeCalls, k?.storeCallsError, k?.storeShare];
    });
    // Before: storeCalls clamped to the sampled decisions (5,632 to 5,792 in a probe, error 0 and share 0.94).
    expect(reads).toEqual(Array.from({ length: 20 }, () => [6_000, 0, 1]));
  });

  it('samples a flood of decisions on its own countdown, within the sketch bound, and starts over each epoch', () => {
    let now = 0;
    const hot = new HotKeys(64, 1_000, () => now);
    decide(
      hot,
      200_000,
      (i) => (i % 10 === 0 ? 'b' : 'a'),
      () => false,
    );
    const [a, b] = hot.report(2).busy;
    expect(a?.key).toBe('a');
    expect(Math.abs((a?.decisions ?? 0) - 180_000)).toBeLessThan(0.05 * 180_000);
    expect(Math.abs((b?.decisions ?? 0) - 20_000)).toBeLessThan(0.1 * 20_000);
    // Two epochs later both are gone.
    now = 3_000;
    decide(
      hot,
      1,
      () => 'c',
      () => false,
      now,
    );
    expect(hot.report(3).busy.map((x) => x.key)).toEqual(['c']);
  });
});
