import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DistinctCount } from './distinct-count.js';
import { SpaceSaving } from './space-saving.js';

function exact(stream: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const k of stream) counts.set(k, (counts.get(k) ?? 0) + 1);
  return counts;
}

describe('SpaceSaving', () => {
  it('keeps its guarantees on any stream: count - error <= truth <= count, error <= N/m, every key above N/m reported', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 60 }), { maxLength: 600 }), fc.integer({ min: 1, max: 16 }), (ints, m) => {
        const stream = ints.map((i) => `k${i % (i % 7 === 0 ? 3 : 61)}`);
        const sketch = new SpaceSaving(m);
        for (const k of stream) sketch.offer(k, 'p', 0);
        const truth = exact(stream);
        const entries = sketch.entries();
        expect(entries.length).toBeLessThanOrEqual(m);
        for (const e of entries) {
          const t = truth.get(e.key) ?? 0;
          expect(e.count).toBeGreaterThanOrEqual(t);
          expect(e.count - e.error).toBeLessThanOrEqual(t);
          expect(e.error).toBeLessThanOrEqual(stream.length / m);
        }
        const reported = new Set(entries.map((e) => e.key));
        for (const [key, t] of truth) if (t > stream.length / m) expect(reported.has(key)).toBe(true);
        expect(sketch.total).toBe(stream.length);
      }),
    );
  });

  it('keeps them for weighted offers (a sampled stream), on the weighted counts', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.constantFrom(1, 16)), { maxLength: 300 }),
        fc.integer({ min: 1, max: 12 }),
        (offers, m) => {
          const sketch = new SpaceSaving(m);
          const truth = new Map<string, number>();
          let total = 0;
          for (const [i, w] of offers) {
            const key = `k${i % (i % 5 === 0 ? 2 : 41)}`;
            sketch.offer(key, 'p', 0, w);
            truth.set(key, (truth.get(key) ?? 0) + w);
            total += w;
          }
          for (const e of sketch.entries()) {
            const t = truth.get(e.key) ?? 0;
            expect(e.count).toBeGreaterThanOrEqual(t);
            expect(e.count - e.error).toBeLessThanOrEqual(t);
            expect(e.error).toBeLessThanOrEqual(total / m);
          }
          const reported = new Set(sketch.entries().map((e) => e.key));
          for (const [key, t] of truth) if (t > total / m) expect(reported.has(key)).toBe(true);
          expect(sketch.total).toBe(total);
        },
      ),
    );
  });

  it('uses fixed memory whatever the number of distinct keys', () => {
    const sketch = new SpaceSaving(8);
    // 20 % of the stream, above N / m = 12.5 %: guaranteed to be reported, and first.
    for (let i = 0; i < 100_000; i++) sketch.offer(i % 5 === 0 ? 'attacker' : `client-${i}`, 'p', 0);
    const entries = sketch.entries();
    expect(entries).toHaveLength(8);
    expect(entries[0]?.key).toBe('attacker');
    expect(entries[0]?.count).toBeGreaterThanOrEqual(20_000);
  });
});

describe('DistinctCount', () => {
  it.each([0, 1, 10, 1000, 50_000])('estimates %i distinct keys within 10%%', (n) => {
    const hll = new DistinctCount();
    for (let i = 0; i < n; i++) {
      hll.add(`ip:10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
      hll.add(`ip:10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
    }
    expect(Math.abs(hll.estimate() - n)).toBeLessThanOrEqual(Math.max(1, n * 0.1));
  });
});
