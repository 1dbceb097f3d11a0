/**
 * @module Tests of how section B merges the rounds of one subject.
 */
import { describe, expect, it } from 'vitest';
import type { RedisCellResult } from './redis-cell.js';
import { mergeRounds } from './redis-section.js';

function round(ops: number, p99: number, bytes: number, trips: number): RedisCellResult {
  return {
    concurrency: [{ inFlight: 256, opsPerSec: ops, runOpsPerSec: [ops], p50Ms: 1, p99Ms: p99 }],
    memoryUsageBytes: bytes,
    usedMemoryPerRedisKey: bytes,
    usedMemoryPerRedisKeyNet: bytes,
    usedMemoryDeltaPerClientKey: bytes,
    redisKeysPerClientKey: 1,
    roundTripsPerDecision: trips,
    unexpected: 1,
  };
}

describe('mergeRounds', () => {
  it('keeps every run, takes medians, the worst round-trip count and the sum of unexpected verdicts', () => {
    const merged = mergeRounds([round(100, 5, 70, 1), round(300, 9, 90, 1), round(200, 7, 80, 2)]);
    expect(merged.concurrency).toEqual([{ inFlight: 256, opsPerSec: 200, runOpsPerSec: [100, 300, 200], p50Ms: 1, p99Ms: 7 }]);
    expect(merged.usedMemoryPerRedisKey).toBe(80);
    expect(merged.roundTripsPerDecision).toBe(2);
    expect(merged.unexpected).toBe(3);
  });

  it('refuses an empty list', () => {
    expect(() => mergeRounds([])).toThrow(/no rounds/);
  });
});
