/**
 * @module Tests of how section A merges the passes of one cell.
 */
import { describe, expect, it } from 'vitest';
import { mergePasses } from './decision-section.js';

describe('mergePasses', () => {
  it('takes the median over every run of every pass and sums the counts', () => {
    const merged = mergePasses([
      { nsPerDecision: 2, runNs: [1, 2, 3], heapBytesPerKey: 70, populateMs: 10, unexpected: 0, decisions: 100 },
      { nsPerDecision: 11, runNs: [10, 11, 12], heapBytesPerKey: 74, populateMs: 30, unexpected: 2, decisions: 100 },
    ]);
    expect(merged).toEqual({
      nsPerDecision: 6.5,
      runNs: [1, 2, 3, 10, 11, 12],
      heapBytesPerKey: 72,
      populateMs: 20,
      unexpected: 2,
      decisions: 200,
    });
  });

  it('leaves the heap figure out when no pass measured it', () => {
    const merged = mergePasses([{ nsPerDecision: 1, runNs: [1], heapBytesPerKey: undefined, populateMs: 0, unexpected: 0, decisions: 1 }]);
    expect(merged.heapBytesPerKey).toBeUndefined();
  });
});
