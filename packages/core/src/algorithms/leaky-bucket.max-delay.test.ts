/**
 * @module leaky-bucket's queue bound (`maxDelayMs`) at its edge, on the kernel, computed by hand (issue 29: the
 * random traces rarely hit the equality). Limit 10 per 1000 ms (T = 100 ms), burst 10, maxDelayMs 200: at one
 * instant the first three requests are admitted with delays 0, 100 and 200 ms (a debt of exactly maxDelayMs
 * still queues), the fourth would wait 300 ms and is rejected, retrying when the queue is 200 ms again. `evaluate`
 * and `consume` answer each one the same, and neither marks an admitted request as a cost that can never fit.
 */
import { describe, expect, it } from 'vitest';
import { compilePolicy } from '../policy.js';
import { createOutcome, type Outcome, type StateTable } from './kernel.js';

describe('leaky-bucket maxDelayMs: a debt of exactly maxDelayMs is admitted, one more request is not', () => {
  it('evaluate and consume: delays 0, 100, 200, then rejected with a retry of 100 ms and nothing left to take', () => {
    const p = compilePolicy({ name: 'q', algorithm: 'leaky-bucket', limit: 10, windowMs: 1000, burst: 10, maxDelayMs: 200 }, 'q', false);
    const t: StateTable = { f: new Float64Array(p.kernel.stride), stride: p.kernel.stride, logs: [] };
    p.kernel.init(t, 0);
    const want: Outcome[] = [
      // What is left counts what can still be taken before the queue is full, not the bucket's room
      // (9, 8, 7 before: a client reading RateLimit r=8 would send 8 and see 7 refused).
      { allowed: true, exceeds: false, remaining: 2000, retryAfterMs: 0, resetMs: 100, delayMs: 0 },
      { allowed: true, exceeds: false, remaining: 1000, retryAfterMs: 0, resetMs: 200, delayMs: 100 },
      { allowed: true, exceeds: false, remaining: 0, retryAfterMs: 0, resetMs: 300, delayMs: 200 },
      // Refused for the queue's length: the bucket has room, but nothing can be taken now (a client
      // reading RateLimit r>0 on a 429 would retry at once and be refused again).
      { allowed: false, exceeds: false, remaining: 0, retryAfterMs: 100, resetMs: 300, delayMs: 0 },
    ];
    for (const [i, row] of want.entries()) {
      const evaluated = createOutcome();
      p.kernel.evaluate(t, 0, 0, 1000, p, evaluated);
      expect(evaluated, `evaluate, request ${i + 1}`).toEqual(row);
      const consumed = createOutcome();
      p.kernel.consume(t, 0, 0, 1000, p, consumed);
      expect(consumed, `consume, request ${i + 1}`).toEqual(row);
    }
  });
});
