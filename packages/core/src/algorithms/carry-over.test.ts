/**
 * @module Bucket state (token-bucket, gcra, leaky-bucket) across a change of limit or plan: the key keeps its name, the
 * state records the limit and burst it was written under, and a reader under other ones converts the
 * debt (what a token bucket lacks) to its own ticks, rounded up and clamped to its capacity (gcra.ts
 * gcraDebt, token-bucket.ts tbLevel). Unit tests per algorithm (free 100/min to pro 1000/min and back) and a property test on the kernel: after a change,
 * the debt is what was consumed (never less: no fresh budget; at most one tick more: no lost budget),
 * and the remaining never exceeds what the new policy gives a key that consumed exactly as much.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLimiter } from '../limiter/create-limiter.js';
import { compilePolicy } from '../policy.js';
import { MemoryStore } from '../stores/memory-store.js';
import { gcraDebt, gcraExpiresAt } from './gcra.js';
import type { CompiledPolicy } from './kernel.js';
import { createOutcome, type StateTable } from './kernel.js';
import { tbLevel } from './token-bucket.js';

for (const algorithm of ['token-bucket', 'gcra', 'leaky-bucket'] as const) {
  describe(`${algorithm}: state carries over a change of plan`, () => {
    function plans(now: () => number) {
      return createLimiter({
        plans: {
          free: [{ name: 'api', algorithm, limit: 100, windowMs: 60_000 }],
          pro: [{ name: 'api', algorithm, limit: 1000, windowMs: 60_000 }],
        },
        store: new MemoryStore({ sweepIntervalMs: 0 }),
        clock: now,
      });
    }

    it('free 100/min -> pro 1000/min keeps what was consumed (no lost budget), and back refuses until what is owed fits free (no fresh budget)', async () => {
      let now = 1_000_000;
      const limiter = plans(() => now);
      for (let i = 0; i < 60; i++) expect((await limiter.check('k', { plan: 'free' })).allowed).toBe(true);
      // 60 consumed: pro has 1000 - 60 - 1 left after one more.
      expect(await limiter.check('k', { plan: 'pro' })).toMatchObject({ allowed: true, remaining: 939 });
      for (let i = 0; i < 500; i++) await limiter.check('k', { plan: 'pro' });
      // 561 consumed: more than free holds, so free refuses, and a refusal writes nothing: the state stays
      // pro's and leaks at pro's rate (one request per 60 ms) until what it owes fits free with room for
      // one more (99): 462 requests' leak, 27.72 s. (Clamping it to free's 100 on the refusal would forget
      // 461 requests pro is owed: a key decided under both at once would get them back after every refusal.)
      expect(await limiter.check('k', { plan: 'free' })).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 27_720 });
      // (Any refusal writes nothing, with room or without: only a charge under free rewrites the state in
      // free's scale, so the wait holds to the ms.)
      now += 27_719;
      expect((await limiter.peek('k', { plan: 'free' })).allowed).toBe(false);
      now += 1;
      expect(await limiter.check('k', { plan: 'free' })).toMatchObject({ allowed: true, remaining: 0 });
    });

    it('pro -> free -> pro: a downgrade never hands out a fresh budget, an upgrade never loses one', async () => {
      const now = 5_000_000;
      const limiter = plans(() => now);
      for (let i = 0; i < 30; i++) await limiter.check('k', { plan: 'pro' });
      expect(await limiter.peek('k', { plan: 'free' })).toMatchObject({ allowed: true, remaining: 70 });
      await limiter.check('k', { plan: 'free', cost: 2.5 });
      expect(await limiter.peek('k', { plan: 'pro' })).toMatchObject({ allowed: true, remaining: 967.5 });
    });
  });
}

describe('conversion across limits and bursts (property, on the kernel)', () => {
  type Bucket = 'token-bucket' | 'gcra' | 'leaky-bucket';
  /** What the state owes `p` at `now`, in `p`'s ticks: a GCRA debt, or what a token bucket lacks. */
  const debt = (t: StateTable, now: number, p: CompiledPolicy) =>
    p.algorithm === 'token-bucket' ? p.capTicks - tbLevel(t, 0, now, p) : gcraDebt(t, 0, now, p);
  const policyArb = (algorithm: Bucket, windowMs: number) =>
    fc
      .record({ limit: fc.integer({ min: 1, max: 3000 }), burst: fc.option(fc.integer({ min: 1, max: 3000 }), { nil: undefined }) })
      .map(({ limit, burst }) =>
        compilePolicy({ name: 'p', algorithm, limit, windowMs, ...(burst === undefined ? {} : { burst }) }, 'p', false),
      );

  const caseArb = fc
    .record({
      algorithm: fc.constantFrom<Bucket>('token-bucket', 'gcra', 'leaky-bucket'),
      windowMs: fc.constantFrom(1, 7, 1000, 60_000, 3_600_000),
    })
    .chain(({ algorithm, windowMs }) =>
      fc.record({
        a: policyArb(algorithm, windowMs),
        b: policyArb(algorithm, windowMs),
        steps: fc.array(fc.record({ dt: fc.integer({ min: 0, max: 2000 }), cost: fc.integer({ min: 1, max: 5000 }) }), {
          minLength: 1,
          maxLength: 30,
        }),
        later: fc.integer({ min: 0, max: 5000 }),
      }),
    );

  it('after a change the debt is what was consumed, rounded up to a tick, clamped to capacity; remaining never exceeds a key that consumed as much', () => {
    fc.assert(
      fc.property(caseArb, ({ a, b, steps, later }) => {
        const t: StateTable = { f: new Float64Array(7), stride: 7, logs: [] };
        a.kernel.init(t, 0);
        const out = createOutcome();
        let now = 10_000_000;
        for (const step of steps) {
          now += step.dt;
          a.kernel.consume(t, 0, now, step.cost, a, out);
        }
        now += later;
        const da = BigInt(debt(t, now, a));
        const db = BigInt(debt(t, now, b));
        const [ta, tb] = [BigInt(a.tokenTicks), BigInt(b.tokenTicks)];
        const capB = BigInt(b.capTicks);
        // What was consumed, in b's ticks: exactly da * tb / ta.
        if (db < capB) {
          expect(db * ta >= da * tb).toBe(true); // never less than consumed: no fresh budget
          expect((db - 1n) * ta < da * tb).toBe(true); // at most one tick more: no lost budget
        } else {
          expect(db).toBe(capB);
          expect(da * tb >= (capB - 1n) * ta).toBe(true);
        }
        // The remaining b reports (a cost that can never fit reports the state as it stands) never exceeds
        // the remaining of a key that consumed exactly as much under b: floor((capB - da*tb/ta) / tb) milli.
        (b as CompiledPolicy).kernel.evaluate(t, 0, now, Number.POSITIVE_INFINITY, b, out);
        const exact = capB * ta - da * tb;
        const bound = exact <= 0n ? 0n : exact / (ta * tb);
        expect(BigInt(out.remaining) <= bound).toBe(true);
        // The key still expires when its debt is gone, under any reader.
        if (a.algorithm !== 'token-bucket' && Number.isFinite(t.f[0])) expect(gcraDebt(t, 0, gcraExpiresAt(t, 0), b)).toBe(0);
        if (a.algorithm === 'token-bucket') expect(debt(t, a.kernel.expiresAt(t, 0, a), b)).toBe(0);
      }),
      { numRuns: 500 },
    );
  });
});
