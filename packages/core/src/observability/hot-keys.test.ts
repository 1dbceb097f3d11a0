/**
 * @module The hot-key sketches' sampling, driven the way DecisionObserver drives it: a decision is
 * counted only when `skip` has run down to 0.
 */
import { describe, expect, it } from 'vitest';
import { EXACT_OFFERS, HotKeys, SAMPLE_EVERY } from './hot-keys.js';

/** `decisions` rejections of `keyOf(i)` at time `at` through the countdown; returns how many reached the sketch. */
function flood(hot: HotKeys, decisions: number, keyOf: (i: number) => string, at = 0): number {
  let counted = 0;
  for (let i = 0; i < decisions; i++) {
    if (hot.skip > 0) {
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

  it('counts exactly again in a new epoch, and weighs the first decision after it at the interval it was sampled at', () => {
    let now = 0;
    const hot = new HotKeys(128, 60_000, () => now);
    flood(hot, 100_000, () => 'old');
    now = 60_000;
    // The first decision of the new epoch moves the sketches on, whatever the countdown said.
    const counted = flood(hot, 5 * EXACT_OFFERS, () => 'new', now);
    expect(counted).toBeGreaterThan(EXACT_OFFERS);
    // The report covers this epoch and the one before: 'old' is still in it, 'new' is counted apart.
    const report = hot.report(2).rejected;
    expect(report.map((k) => k.key).sort()).toEqual(['new', 'old']);
    const fresh = report.find((k) => k.key === 'new');
    // 1024 exact, then 4096 sampled 1 in 16: a sampling standard deviation of 256. The first decision of the
    // epoch weighed at 16 (the interval of the old epoch's flood) instead of 1 would add 15; every exact one, 15,000.
    expect(Math.abs((fresh?.count ?? 0) - 5 * EXACT_OFFERS)).toBeLessThan(1000);
  });
});
