import { describe, expect, it } from 'vitest';
import { RESULT_STRIDE, resultNow } from './store.js';

describe('resultNow: the store clock slot after the policies of a store result', () => {
  it("reads the slot a store with its own clock adds (RedisStore's Redis TIME)", () => {
    const one = new Float64Array(RESULT_STRIDE + 1);
    one[RESULT_STRIDE] = 1_700_000_000_123;
    expect(resultNow(one, 1, 5)).toBe(1_700_000_000_123);
    const three = new Float64Array(3 * RESULT_STRIDE + 1);
    three[3 * RESULT_STRIDE] = 42;
    expect(resultNow(three, 3, 5)).toBe(42);
  });

  it('falls back to the limiter clock the call was made with when the store added none (MemoryStore)', () => {
    expect(resultNow(new Float64Array(RESULT_STRIDE), 1, 5)).toBe(5);
    expect(resultNow(new Float64Array(3 * RESULT_STRIDE), 3, 7)).toBe(7);
  });

  it('counts the slot after all n policies, not after the first', () => {
    // Three policies and no slot: the fourth policy's place is not read as a clock.
    const r = new Float64Array(3 * RESULT_STRIDE).fill(9);
    expect(resultNow(r, 3, 11)).toBe(11);
    expect(resultNow(r, 1, 11)).toBe(9);
  });
});
