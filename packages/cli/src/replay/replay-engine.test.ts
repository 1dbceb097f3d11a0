/**
 * @module The replay's figures on a log small enough to decide by hand, and the engine's bounded bookkeeping.
 */
import { describe, expect, it } from 'vitest';
import { parseCandidates } from './candidates.js';
import { createReplayEngine } from './replay-engine.js';

const T0 = 1_700_000_000_000;

/**
 * A log small enough to decide by hand (see the comments), replayed through three candidates:
 * fixed-window 2/1s, sliding-log 2/1s, leaky-bucket 1/1s burst 3.
 */
const LOG: readonly [number, string][] = [
  [0, 'a'],
  [100, 'a'],
  [200, 'a'],
  [500, 'b'],
  [900, 'a'],
  [1000, 'a'],
  [1050, 'a'],
  [1100, 'a'],
  [1500, 'b'],
];

function replaySmallLog() {
  const engine = createReplayEngine(
    parseCandidates([
      '{"algorithm":"fixed-window","limit":2,"windowMs":1000}',
      '{"algorithm":"sliding-log","limit":2,"windowMs":1000}',
      '{"algorithm":"leaky-bucket","limit":1,"windowMs":1000,"burst":3}',
    ]),
  );
  for (const [at, key] of LOG) engine.push(T0 + at, key, 1);
  return engine.report();
}

describe('replay engine on a hand-computed log', () => {
  const report = replaySmallLog();
  const [fw, sl, lb] = report.candidates;

  it('fixed window: a200 and a900 over the 2 of window 0, a1100 over the 2 of window 1', () => {
    expect(fw).toMatchObject({ requests: 9, admitted: 6, rejected: 3, clientsRejected: 1, clientsRejectedShare: 0.5 });
    // a: R(200) R(900) then admitted, then R(1100) still open at the end.
    expect(fw?.longestStreak).toEqual({ length: 2, key: 'a' });
    expect(fw?.streaks).toEqual([
      { from: 1, to: 1, count: 1 },
      { from: 2, to: 3, count: 1 },
    ]);
    expect(fw?.delayMs).toBeNull();
    expect(fw?.disagreement).toBeNull();
    expect(fw?.topRejected).toEqual([{ key: 'a', requests: 7, rejected: 3, longestStreak: 2, disagreements: 0 }]);
  });

  it('sliding log (left-open window): a1000 fits because a0 left, a1050 does not, a1100 does because a100 left', () => {
    expect(sl).toMatchObject({ admitted: 6, rejected: 3, clientsRejected: 1 });
    // Rejected a200, a900, a1050 against fixed window's a200, a900, a1100.
    expect(sl?.disagreement).toEqual({ onlyThis: 1, onlyFirst: 1, total: 2, share: 2 / 9 });
    expect(sl?.topDisagreeing).toEqual([{ key: 'a', requests: 7, rejected: 3, longestStreak: 2, disagreements: 2 }]);
  });

  it('leaky bucket: a0, a100, a200 queue (delays 0, 900, 1800), a1000 waits 2000, the rest overflow the burst of 3', () => {
    // TAT after a200 is 3000; a900 would make it 4000 = 3100 ahead (> 3000); a1000 makes it 3000 ahead (fits).
    expect(lb).toMatchObject({ admitted: 6, rejected: 3 });
    // Admitted delays 0, 900, 1800, 2000 (a) and 0, 0 (b): nearest rank p50 = 3rd of 6, p99 = 6th.
    expect(lb?.delayMs).toEqual({ p50: 0, p99: 2000, max: 2000 });
    // Rejects a900, a1050, a1100: a1050 only here, a200 only in fixed window.
    expect(lb?.disagreement).toEqual({ onlyThis: 1, onlyFirst: 1, total: 2, share: 2 / 9 });
    expect(lb?.longestStreak).toEqual({ length: 2, key: 'a' });
  });

  it('per-second series: window 0 holds 5 requests, window 1 holds 4', () => {
    expect(report.timeline).toEqual({ firstMs: T0, lastMs: T0 + 1500, startMs: T0, bucketMs: 1000 });
    // At 1 s slices the busiest second of a slice is the slice.
    expect(fw?.series).toEqual({ admitted: [3, 3], rejected: [2, 1], peakAdmitted: [3, 3], peakRejected: [2, 1] });
    expect(sl?.series).toEqual({ admitted: [3, 3], rejected: [2, 1], peakAdmitted: [3, 3], peakRejected: [2, 1] });
    expect(lb?.series).toEqual({ admitted: [4, 2], rejected: [1, 2], peakAdmitted: [4, 2], peakRejected: [1, 2] });
    expect(report.clients).toBe(2);
  });
});

describe('replay engine bookkeeping', () => {
  it('halves the series resolution past maxPoints, keeping every count', () => {
    const engine = createReplayEngine(parseCandidates(['{"limit":1,"windowMs":1000}']), { maxPoints: 4 });
    for (let s = 0; s < 10; s++) engine.push(T0 + s * 1000, 'k', 1);
    const r = engine.report();
    expect(r.timeline.bucketMs).toBe(4000);
    expect(r.candidates[0]?.series.admitted).toEqual([4, 4, 2]);
    expect(r.candidates[0]?.series.peakAdmitted).toEqual([1, 1, 1]);
  });

  it('keeps the busiest second of each slice, and the busiest minutes second by second', () => {
    const engine = createReplayEngine(parseCandidates(['{"algorithm":"fixed-window","limit":3,"windowMs":1000}']), {
      maxPoints: 2,
      busiestMinutes: 2,
    });
    const T = 1_700_000_040_000; // a clock minute's start
    // Minute 0: 1 request a second for 60 s; minute 1: a burst of 10 in second 5 (3 admitted); minute 2: 2 requests.
    for (let s = 0; s < 60; s++) engine.push(T + s * 1000, 'k', 1);
    for (let i = 0; i < 10; i++) engine.push(T + 65_000 + i, 'k', 1);
    engine.push(T + 120_000, 'k', 1);
    engine.push(T + 121_000, 'k', 1);
    const r = engine.report();
    const c = r.candidates[0];
    expect(r.timeline.bucketMs).toBe(64_000);
    expect(c?.series).toEqual({ admitted: [60, 5], rejected: [0, 7], peakAdmitted: [1, 3], peakRejected: [0, 7] });
    expect(r.busiestMinutes.map((m) => [m.startMs - T, m.requests])).toEqual([
      [0, 60],
      [60_000, 10],
    ]);
    const burst = r.busiestMinutes[1]?.candidates[0];
    expect(burst?.admitted[5]).toBe(3);
    expect(burst?.rejected[5]).toBe(7);
    expect(burst?.admitted.reduce((a, b) => a + b, 0)).toBe(3);
  });

  it('keeps a request of a second already past in the counts, not in the per-second figures', () => {
    const engine = createReplayEngine(parseCandidates(['{"algorithm":"fixed-window","limit":100,"windowMs":60000}']));
    engine.push(T0 + 2000, 'a', 1);
    engine.push(T0 + 1000, 'a', 1);
    const r = engine.report();
    // The series starts at the first request's second: the late one is counted in the first slice.
    expect(r.candidates[0]?.series).toEqual({ admitted: [2], rejected: [0], peakAdmitted: [1], peakRejected: [0] });
    expect(r.busiestMinutes[0]?.requests).toBe(1);
  });

  it('counts requests earlier than the one before them, and never tracks more clients than maxClients', () => {
    const engine = createReplayEngine(parseCandidates(['{"limit":5,"windowMs":1000}']), { maxClients: 2 });
    engine.push(T0 + 1000, 'a', 1);
    engine.push(T0 + 500, 'b', 1);
    engine.push(T0 + 1200, 'c', 1);
    const r = engine.report();
    expect(r.input.outOfOrder).toBe(1);
    expect(r.clients).toBe(2);
    expect(r.untrackedRequests).toBe(1);
    expect(r.candidates[0]?.requests).toBe(3);
  });

  it('evicts limiter state like the MemoryStore when maxKeys is reached, and reports it', () => {
    const engine = createReplayEngine(parseCandidates(['{"algorithm":"fixed-window","limit":5,"windowMs":60000}']), { maxKeys: 2 });
    for (const k of ['a', 'b', 'c', 'd']) engine.push(T0, k, 1);
    expect(engine.report().evictions).toBe(2);
  });

  it('counts a cost that can never fit as rejected and as cost-exceeds-capacity', () => {
    const engine = createReplayEngine(parseCandidates(['{"algorithm":"token-bucket","limit":2,"windowMs":1000}']));
    engine.push(T0, 'k', 5);
    engine.push(T0, 'k', 2);
    expect(engine.report().candidates[0]).toMatchObject({ admitted: 1, rejected: 1, costExceedsCapacity: 1 });
  });
  it('counts nothing for a request the core refuses: it throws, and admitted + rejected = requests still', () => {
    const engine = createReplayEngine(
      parseCandidates([
        '{"algorithm":"fixed-window","limit":3,"windowMs":10000}',
        '{"algorithm":"sliding-log","limit":3,"windowMs":10000}',
      ]),
    );
    engine.push(T0, 'k', 1);
    expect(() => engine.push(T0 + 1000, 'k', 0.0001)).toThrow(/ERR_RL_INVALID_COST/);
    expect(() => engine.push(T0 + 1500, 'new', 0.0001)).toThrow(/ERR_RL_INVALID_COST/);
    engine.push(T0 + 2000, 'k', 1);
    const r = engine.report();
    expect(r.input.requests).toBe(2);
    expect(r.clients).toBe(1);
    expect(r.timeline).toMatchObject({ firstMs: T0, lastMs: T0 + 2000 });
    for (const c of r.candidates) {
      expect(c).toMatchObject({ requests: 2, admitted: 2, rejected: 0 });
      expect(c.series.admitted.reduce((a, b) => a + b, 0)).toBe(2);
    }
  });
});
