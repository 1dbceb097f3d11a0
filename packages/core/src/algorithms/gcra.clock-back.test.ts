/**
 * @module gcra and leaky-bucket when the clock steps back behind a full bucket (issue 29): the debt read at the
 * earlier `now` is more than the capacity (the TAT lies more than a full bucket ahead), and what is left is 0,
 * never negative, on each of the three paths that report it (a rejected request in `evaluate` and in `consume`,
 * a cost that can never fit). Computed by hand: limit 5 per 1000 ms, burst 5 (5 ticks per ms, a capacity of
 * 5000 ticks, one milli-unit a tick); 5 requests at 1000 leave the TAT at 2000; at 500 the debt is 1500 ms,
 * 7500 ticks; one request fits at 1200 (a debt of 4000), 700 ms later, and the bucket is full at 2000.
 */
import { describe, expect, it } from 'vitest';
import { compilePolicy } from '../policy.js';
import { createOutcome, type StateTable } from './kernel.js';

describe.each(['gcra', 'leaky-bucket'] as const)('%s: a clock stepping back behind a full bucket', (algorithm) => {
  const p = compilePolicy({ name: 'p', algorithm, limit: 5, windowMs: 1000 }, 'p', false);

  function full(): StateTable {
    const t: StateTable = { f: new Float64Array(p.kernel.stride), stride: p.kernel.stride, logs: [] };
    p.kernel.init(t, 0);
    p.kernel.commit(t, 0, 1000, 5000, p);
    return t;
  }

  it('a rejected request leaves 0, in evaluate and in consume', () => {
    const want = { allowed: false, exceeds: false, remaining: 0, retryAfterMs: 700, resetMs: 1500, delayMs: 0 };
    const evaluated = createOutcome();
    p.kernel.evaluate(full(), 0, 500, 1000, p, evaluated);
    expect(evaluated).toEqual(want);
    const consumed = createOutcome();
    p.kernel.consume(full(), 0, 500, 1000, p, consumed);
    expect(consumed).toEqual(want);
  });

  it('a cost that can never fit leaves 0, in evaluate and in consume', () => {
    const want = { allowed: false, exceeds: true, remaining: 0, retryAfterMs: 0, resetMs: 1500, delayMs: 0 };
    for (const cost of [Number.POSITIVE_INFINITY, 6000]) {
      const evaluated = createOutcome();
      p.kernel.evaluate(full(), 0, 500, cost, p, evaluated);
      expect(evaluated, `evaluate, cost ${cost}`).toEqual(want);
      const consumed = createOutcome();
      p.kernel.consume(full(), 0, 500, cost, p, consumed);
      expect(consumed, `consume, cost ${cost}`).toEqual(want);
    }
  });
});
