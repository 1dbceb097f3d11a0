import { describe, expect, it } from 'vitest';
import { BoundedCache } from './bounded-cache.js';

describe('BoundedCache', () => {
  it('returns what was set, and undefined for what was not', () => {
    const cache = new BoundedCache<string>(4);
    cache.set('a', 'A');
    expect(cache.get('a')).toBe('A');
    expect(cache.get('b')).toBeUndefined();
  });

  it('never holds more than its capacity: a full cache is emptied before the next entry', () => {
    const cache = new BoundedCache<number>(3);
    for (let i = 0; i < 10; i++) {
      cache.set(`k${i}`, i);
      expect(cache.size).toBeLessThanOrEqual(3);
    }
    // 0-2 filled it, 3 emptied it and so on: the last round holds 9 alone.
    expect(cache.size).toBe(1);
    expect(cache.get('k9')).toBe(9);
    expect(cache.get('k8')).toBeUndefined();
  });
});
