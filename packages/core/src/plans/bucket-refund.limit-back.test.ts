/**
 * @module Issue 29's mutation work found it (bench/MUTATION.md, "Bug found"): a bucket receipt made before a change
 * of limit refunded again once the limit changed back. The contract (refund-frame.ts): "a change of limit or burst
 * counts everything the charges before it could still give back, so their receipts refund nothing after it". The
 * change A -> B counted it (`closeFrame`) but clamped the frame's horizon to a full bucket of B (`now + span`);
 * when B's bucket is shorter than A's marks, the frame ended before the receipt's mark, started over at 0, and
 * after the change back to A the row's limit and burst were A's again: the receipt passed every guard of
 * `allowance` (algorithms/refund-kernels.ts) and gave back what later charges used. Fixed: the frame lives until the
 * latest mark (the key as long), whatever the new policy's span.
 *
 * Here: A = 1 per 10 s, burst 5; B = 100 per 10 s, burst 100 (a full bucket in 10 s). 5 charged under A at 0, 1
 * under B at 100, 1 under A at 20 000: at 20 100 the bucket holds 4.01 (what it would hold had the first charge
 * been 0, or refunded at once: B's charge and A's second one are long refilled or still in). Refunding the first
 * receipt changes nothing (it gave back 0.99 before the fix: the bucket read 5). The Redis twin:
 * test/integration/redis/refund-limit-back.test.ts.
 *
 * The same path holds when the receipt's frame had counted a refund before its charge (its position is above 0):
 * a restarted frame would count 0, less than the position, and `allowance` refuses the receipt (`refunded >=
 * position`, the guard that kills two mutants of refund-kernels.ts).
 *
 * And with a daily window beside the bucket, where the store's group path (`applyGroup`) adopts the row
 * before it charges: the mutant that skipped that adoption survived the apply path's Stryker run of this session.
 */
import { describe, expect, it } from 'vitest';
import { createLimiter, MemoryStore, type PolicyOptions } from '../index.js';

type Bucket = 'token-bucket' | 'gcra' | 'leaky-bucket';

/**
 * A (1 per 10 s, burst 5) charges 5 at 0, B (100 per 10 s, burst 100) charges 1 at 100, A charges 1 at 20 000;
 * the clock then stands at 20 100. `beside`: policies both limiters also hold (the store's group path).
 */
async function changedAndBack(algorithm: Bucket, beside: readonly PolicyOptions[] = []) {
  let now = 0;
  const clock = () => now;
  const store = new MemoryStore({ sweepIntervalMs: 0 });
  const bucket = (limit: number, burst: number): PolicyOptions[] => [{ name: 'api', algorithm, limit, windowMs: 10_000, burst }, ...beside];
  const a = createLimiter({ name: 'api', policies: bucket(1, 5), store, clock });
  const b = createLimiter({ name: 'api', policies: bucket(100, 100), store, clock });
  const first = await a.check('k', { cost: 5 });
  expect(first.allowed).toBe(true);
  now = 100;
  expect((await b.check('k', { cost: 1 })).allowed).toBe(true);
  now = 20_000;
  expect((await a.check('k', { cost: 1 })).allowed).toBe(true);
  now = 20_100;
  return { a, first };
}

describe.each(['token-bucket', 'gcra', 'leaky-bucket'] as const)('%s: a limit changed and changed back', (algorithm) => {
  it('a receipt made before the change refunds nothing after the change back', async () => {
    const { a, first } = await changedAndBack(algorithm);
    expect((await a.peek('k')).remaining).toBe(4.01);
    const result = await a.refund(first);
    expect((await a.peek('k')).remaining).toBe(4.01);
    expect(result.refunded).toBe(false);
  });
});

describe.each(['token-bucket', 'gcra', 'leaky-bucket'] as const)('%s: a limit changed and changed back', (algorithm) => {
  it('a receipt whose frame had counted a refund before it refunds nothing after the change back', async () => {
    let now = 0;
    const clock = () => now;
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const a = createLimiter({ name: 'api', policies: { algorithm, limit: 1, windowMs: 10_000, burst: 5 }, store, clock });
    const b = createLimiter({ name: 'api', policies: { algorithm, limit: 100, windowMs: 10_000, burst: 100 }, store, clock });
    const older = await a.check('k', { cost: 1 });
    expect((await a.check('k', { cost: 1 })).allowed).toBe(true);
    // Refunding a charge that is not the newest counts in the frame: the next charge's position is above 0.
    expect((await a.refund(older)).refunded).toBe(true);
    const first = await a.check('k', { cost: 3 });
    expect(first.allowed).toBe(true);
    now = 100;
    expect((await b.check('k', { cost: 1 })).allowed).toBe(true);
    now = 20_000;
    expect((await a.check('k', { cost: 1 })).allowed).toBe(true);
    now = 20_100;
    expect((await a.peek('k')).remaining).toBe(4.01);
    expect((await a.refund(first)).refunded).toBe(false);
    expect((await a.peek('k')).remaining).toBe(4.01);
  });
});

describe.each(['token-bucket', 'gcra', 'leaky-bucket'] as const)(
  '%s beside a second policy: a limit changed and changed back',
  (algorithm) => {
    it('the group path closes the frame as the one-policy path does: the old receipt gives back nothing of the bucket', async () => {
      // A daily window beside the bucket: every check takes the store's group path (applyGroup), not applySingle.
      const { a, first } = await changedAndBack(algorithm, [
        { name: 'daily', algorithm: 'fixed-window', limit: 1000, windowMs: 86_400_000 },
      ]);
      const bucket = async () => (await a.peek('k')).policies.find((p) => p.name === 'api')?.remaining;
      expect(await bucket()).toBe(4.01);
      await a.refund(first);
      expect(await bucket()).toBe(4.01);
    });
  },
);
