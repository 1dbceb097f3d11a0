/**
 * @module Plans, several keys in one decision, peek and refund on the memory store: the contract by
 * example. The properties (nothing above the limit, refunds never above capacity, all-or-nothing across
 * keys) are in plans.property.test.ts; the Redis twins in test/integration/redis/plans-differential.test.ts.
 */
import { describe, expect, it, vi } from 'vitest';
import { RateLimitConfigError } from '../errors.js';
import { createLimiter } from '../limiter/create-limiter.js';
import { MemoryStore } from '../stores/memory-store.js';
import type { Store } from '../stores/store.js';
import type { AlgorithmId, Decision, Logger } from '../types.js';

const ALGORITHMS: readonly AlgorithmId[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'gcra', 'leaky-bucket'];

function virtual(options: Parameters<typeof createLimiter>[0]) {
  let now = 1_000_000;
  const limiter = createLimiter({ ...options, store: new MemoryStore({ sweepIntervalMs: 0 }), clock: () => now });
  return {
    limiter,
    advance(ms: number) {
      now += ms;
    },
  };
}

function quietLogger(): Logger & { warn: ReturnType<typeof vi.fn> } {
  return { warn: vi.fn(), error: vi.fn() } as unknown as Logger & { warn: ReturnType<typeof vi.fn> };
}

describe('plans', () => {
  const plans = {
    free: [{ name: 'minute', limit: 2, windowMs: 60_000 }],
    pro: [
      { name: 'minute', limit: 5, windowMs: 60_000 },
      { name: 'burst', algorithm: 'token-bucket' as const, limit: 3, windowMs: 1000 },
    ],
  };

  it('applies the named plan, the first plan by default, and says which plan applied', async () => {
    const { limiter } = virtual({ plans });
    expect(limiter.defaultPlan).toBe('free');
    expect([...limiter.plans.keys()]).toEqual(['free', 'pro']);
    const free = await limiter.check('a');
    expect(free).toMatchObject({ plan: 'free', allowed: true, remaining: 1 });
    expect(free.policies.map((p) => p.limit)).toEqual([2]);
    const pro = await limiter.check('b', { plan: 'pro' });
    expect(pro.plan).toBe('pro');
    expect(pro.policies.map((p) => [p.name, p.limit])).toEqual([
      ['minute', 5],
      ['burst', 3],
    ]);
  });

  it('answers an unknown plan with the unknownPlan fallback, never a bypass, in at most one line a minute (issue 26)', async () => {
    const logger = quietLogger();
    const { limiter, advance } = virtual({ plans, unknownPlan: 'free', defaultPlan: 'pro', logger });
    const d1 = await limiter.check('k', { plan: 'enterprise' });
    const d2 = await limiter.check('k', { plan: 'enterprise' });
    const d3 = await limiter.check('k', { plan: 'enterprise' });
    expect([d1.plan, d1.allowed, d2.allowed, d3.allowed]).toEqual(['free', true, true, false]);
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(logger.warn.mock.calls[0]?.[0]).toMatchObject({ code: 'WRN_RL_UNKNOWN_PLAN', plan: 'enterprise', appliedPlan: 'free' });
    // 1,000 names an attacker picks: still one line in the minute, then one that counts them.
    for (let i = 0; i < 1000; i++) await limiter.check(`k${i}`, { plan: `made-up-${i}` });
    expect(logger.warn).toHaveBeenCalledTimes(1);
    advance(60_000);
    await limiter.check('k', { plan: 'other' });
    expect(logger.warn).toHaveBeenCalledTimes(2);
    expect(logger.warn.mock.calls[1]?.[0]).toMatchObject({ plan: 'other', alsoSinceLastLine: 1002 });
    // A name of a megabyte (a header the client wrote) is shown cut, with its length.
    advance(60_000);
    await limiter.check('k', { plan: 'x'.repeat(1_000_000) });
    expect(logger.warn.mock.calls[2]?.[0]).toMatchObject({ plan: `${'x'.repeat(64)}… (1000000 characters)` });
  });

  it('is silenced by validate, on the limiter and per code', async () => {
    for (const validate of [false, { WRN_RL_UNKNOWN_PLAN: false }] as const) {
      const logger = quietLogger();
      const { limiter } = virtual({ plans, unknownPlan: 'free', logger, validate });
      expect((await limiter.check('k', { plan: 'enterprise' })).plan).toBe('free');
      limiter.hotKeys();
      expect(logger.warn).toHaveBeenCalledTimes(validate === false ? 0 : 1);
    }
  });

  it('validates plans at construction with coded errors', () => {
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        expect(e).toBeInstanceOf(RateLimitConfigError);
        return (e as RateLimitConfigError).code;
      }
      return 'no error';
    };
    expect(code(() => createLimiter({ plans: {} }))).toBe('ERR_RL_INVALID_PLANS');
    expect(code(() => createLimiter({ plans, policies: { limit: 1, windowMs: 1 } }))).toBe('ERR_RL_INVALID_PLANS');
    expect(code(() => createLimiter({ plans, defaultPlan: 'gold' }))).toBe('ERR_RL_UNKNOWN_PLAN');
    expect(code(() => createLimiter({ plans, unknownPlan: 'gold' }))).toBe('ERR_RL_UNKNOWN_PLAN');
    expect(code(() => createLimiter({ policies: { limit: 1, windowMs: 1 }, defaultPlan: 'free' }))).toBe('ERR_RL_INVALID_PLANS');
    expect(code(() => createLimiter({ plans: { ' bad': [{ limit: 1, windowMs: 1 }] } }))).toBe('ERR_RL_INVALID_PLAN_NAME');
    expect(code(() => createLimiter({ plans: { free: [{ limit: 0, windowMs: 1 }] } }))).toBe('ERR_RL_INVALID_LIMIT');
    expect(code(() => createLimiter({ plans: { free: [] } }))).toBe('ERR_RL_NO_POLICIES');
  });
});

describe('leaky-bucket maxDelayMs', () => {
  it('rejects now what would wait longer, with the exact retryAfterMs; never delays past the maximum', async () => {
    for (const [limit, windowMs, burst, maxDelayMs, delayAfter] of [
      [10, 1000, 10, 250, 0],
      [3, 1000, 6, 400, 1],
      [7, 60_000, 7, 0, 0],
    ] as const) {
      const { limiter, advance } = virtual({ policies: { algorithm: 'leaky-bucket', limit, windowMs, burst, maxDelayMs, delayAfter } });
      let rejected = 0;
      for (let i = 0; i < 30 && rejected < 3; i++) {
        const d = await limiter.check('k');
        if (d.allowed) {
          expect(d.delayMs).toBeLessThanOrEqual(maxDelayMs);
          continue;
        }
        rejected += 1;
        expect(d.retryAfterMs).toBeGreaterThan(0);
        // One ms earlier is still too long a wait; exactly then, admitted within the maximum.
        advance(d.retryAfterMs - 1);
        expect((await limiter.peek('k')).allowed).toBe(false);
        advance(1);
        const again = await limiter.check('k');
        expect(again.allowed).toBe(true);
        expect(again.delayMs).toBeLessThanOrEqual(maxDelayMs);
      }
      expect(rejected).toBe(3);
    }
  });

  it('is validated at construction', () => {
    expect(() => createLimiter({ policies: { algorithm: 'gcra', limit: 1, windowMs: 1000, maxDelayMs: 5 } })).toThrow(
      /ERR_RL_OPTION_NOT_APPLICABLE/,
    );
    expect(() => createLimiter({ policies: { algorithm: 'leaky-bucket', limit: 1, windowMs: 1000, maxDelayMs: -1 } })).toThrow(
      /ERR_RL_INVALID_MAX_DELAY/,
    );
  });
});

describe('state across a change of plan or limit', () => {
  it.each(['fixed-window', 'sliding-window', 'sliding-log'] as const)(
    '%s: the count carries over: no fresh budget on a downgrade, none lost on an upgrade, never negative',
    async (algorithm) => {
      const { limiter } = virtual({
        plans: {
          pro: [{ name: 'minute', algorithm, limit: 5, windowMs: 60_000 }],
          free: [{ name: 'minute', algorithm, limit: 2, windowMs: 60_000 }],
        },
      });
      for (let i = 0; i < 4; i++) expect((await limiter.check('k', { plan: 'pro' })).allowed).toBe(true);
      const down = await limiter.check('k', { plan: 'free' });
      expect(down).toMatchObject({ allowed: false, remaining: 0, plan: 'free' });
      expect(down.retryAfterMs).toBeGreaterThan(0);
      const up = await limiter.check('k', { plan: 'pro' });
      expect(up).toMatchObject({ allowed: true, remaining: 0, plan: 'pro' });
    },
  );
});

describe('several keys, one decision', () => {
  const policies = [
    { name: 'per-ip', algorithm: 'fixed-window' as const, limit: 3, windowMs: 60_000 },
    { name: 'per-account', algorithm: 'sliding-log' as const, limit: 2, windowMs: 60_000 },
  ];

  it('charges every key or none', async () => {
    const { limiter } = virtual({ policies });
    expect((await limiter.check({ 'per-ip': '1.2.3.4', 'per-account': 'alice' })).allowed).toBe(true);
    expect((await limiter.check({ 'per-ip': '1.2.3.4', 'per-account': 'alice' })).allowed).toBe(true);
    // alice is out: the IP is not charged by the rejected request.
    const third = await limiter.check({ 'per-ip': '1.2.3.4', 'per-account': 'alice' });
    expect(third).toMatchObject({ allowed: false, policy: 'per-account' });
    expect(third.policies.find((p) => p.name === 'per-ip')?.remaining).toBe(1);
    expect((await limiter.check({ 'per-ip': '1.2.3.4', 'per-account': 'bob' })).allowed).toBe(true);
    const ipOut = await limiter.check({ 'per-ip': '1.2.3.4', 'per-account': 'carol' });
    expect(ipOut).toMatchObject({ allowed: false, policy: 'per-ip' });
    expect(ipOut.key).toBe('per-ip=1.2.3.4&per-account=carol');
    // carol was not charged by the request the IP refused.
    expect((await limiter.peek({ 'per-ip': '5.6.7.8', 'per-account': 'carol' })).remaining).toBe(2);
  });

  it('needs a key for every policy of the plan', async () => {
    const { limiter } = virtual({ policies });
    await expect(limiter.check({ 'per-ip': '1.2.3.4' })).rejects.toThrow(/ERR_RL_MISSING_POLICY_KEY.*'per-account'/);
    await expect(limiter.check({ 'per-ip': '1.2.3.4', 'per-account': 7 as unknown as string })).rejects.toThrow(/ERR_RL_INVALID_KEY/);
  });

  it('a shadow candidate without a key of its own counts under the enforced keys together; with one, under it', async () => {
    const { limiter } = virtual({ policies, shadowPolicies: { name: 'cand', algorithm: 'fixed-window', limit: 1, windowMs: 60_000 } });
    // Adding a candidate never makes a check that named every enforced policy throw.
    const first = await limiter.check({ 'per-ip': '1.2.3.4', 'per-account': 'alice' });
    expect(first).toMatchObject({ allowed: true, key: 'per-ip=1.2.3.4&per-account=alice', shadow: { allowed: true } });
    expect((await limiter.check({ 'per-ip': '1.2.3.4', 'per-account': 'alice' })).shadow?.allowed).toBe(false);
    expect((await limiter.check({ 'per-ip': '1.2.3.4', 'per-account': 'bob' })).shadow?.allowed).toBe(true);
    // Named, the candidate counts per its own key (here per IP, whoever the account).
    const own = virtual({ policies, shadowPolicies: { name: 'cand', algorithm: 'fixed-window', limit: 1, windowMs: 60_000 } }).limiter;
    expect((await own.check({ 'per-ip': '9.9.9.9', 'per-account': 'alice', cand: 'ip:9.9.9.9' })).shadow?.allowed).toBe(true);
    const other = await own.check({ 'per-ip': '9.9.9.9', 'per-account': 'bob', cand: 'ip:9.9.9.9' });
    expect(other).toMatchObject({ allowed: true, key: 'per-ip=9.9.9.9&per-account=bob', shadow: { allowed: false } });
  });
});

describe('peek', () => {
  it.each(ALGORITHMS)('%s: answers whether check would admit, and what is left now, charging nothing', async (algorithm) => {
    const { limiter, advance } = virtual({ policies: { algorithm, limit: 3, windowMs: 1000 } });
    const first = await limiter.check('k');
    advance(10);
    const seen = await limiter.peek('k', { cost: 2 });
    const again = await limiter.peek('k', { cost: 2 });
    expect(again).toEqual(seen);
    expect(seen.receipt).toBeUndefined();
    const real = await limiter.check('k', { cost: 2 });
    // The same verdict; `remaining` and `resetMs` are those of the state before the check took its 2
    // (issue 26): what was left, and the first check's reset 10 ms on.
    const leftNow = (d: Decision) => ({
      ...d,
      receipt: undefined,
      remaining: undefined,
      resetMs: undefined,
      policies: d.policies.map((r) => ({ ...r, remaining: undefined, resetMs: undefined })),
    });
    expect(leftNow(real)).toEqual(leftNow(seen));
    expect(real.allowed).toBe(true);
    expect(seen.remaining).toBeCloseTo(real.remaining + 2, 9);
    expect(seen.policies[0]?.remaining).toBeCloseTo((real.policies[0]?.remaining as number) + 2, 9);
    expect(seen.resetMs).toBe(first.resetMs - 10);
    expect(seen.policies[0]?.resetMs).toBe(seen.resetMs);
    expect(limiter.stats().requests).toBe(2);
  });

  it.each(ALGORITHMS)('%s: a key never seen is full: all of the limit left, nothing to reset', async (algorithm) => {
    const { limiter } = virtual({ policies: { algorithm, limit: 3, windowMs: 1000 } });
    expect(await limiter.peek('k')).toMatchObject({ allowed: true, remaining: 3, resetMs: 0 });
    expect(await limiter.peek('k', { cost: 3 })).toMatchObject({ allowed: true, remaining: 3, resetMs: 0 });
  });

  it.each(ALGORITHMS)('%s: remaining is what is left now: after 2 of 3, 1 (issue 26)', async (algorithm) => {
    const { limiter } = virtual({ policies: { algorithm, limit: 3, windowMs: 1000 } });
    expect((await limiter.peek('k')).remaining).toBe(3);
    await limiter.check('k');
    await limiter.check('k');
    const left = await limiter.peek('k');
    expect(left).toMatchObject({ allowed: true, remaining: 1 });
    await limiter.check('k');
    expect(await limiter.peek('k')).toMatchObject({ allowed: false, remaining: 0 });
  });
});

describe('peek of several policies', () => {
  it('headlines the policy with the least left whatever the cost asks; allowed and retryAfterMs answer the cost', async () => {
    const { limiter } = virtual({
      policies: [
        { name: 'a', algorithm: 'fixed-window', limit: 5, windowMs: 10_000 },
        { name: 'b', algorithm: 'gcra', limit: 8, windowMs: 3_000, burst: 4 },
      ],
    });
    await limiter.check('k', { cost: 3 }); // a has 2 left, b 1
    const now = await limiter.peek('k');
    expect(now).toMatchObject({ policy: 'b', remaining: 1, allowed: true });
    for (const cost of [1, 2, 3, 5]) {
      const d = await limiter.peek('k', { cost });
      // Before: a cost of 3 (refused by both, a's wait the longer) headlined a with 2 left.
      expect(d, `cost ${cost}`).toMatchObject({ policy: 'b', remaining: 1, resetMs: now.resetMs });
      expect(d.allowed, `cost ${cost}`).toBe(cost <= 1);
    }
    const refused = await limiter.peek('k', { cost: 3 });
    expect(refused.retryAfterMs).toBe(Math.max(...refused.policies.map((r) => r.retryAfterMs)));
    // A check refused the same way still headlines the longest wait (what its 429 says).
    expect(await limiter.check('k', { cost: 3 })).toMatchObject({ allowed: false, policy: 'a', remaining: 2 });
  });
});

describe('refund', () => {
  it.each(ALGORITHMS)('%s: gives back exactly the charge, once, never above capacity', async (algorithm) => {
    const { limiter, advance } = virtual({ policies: { algorithm, limit: 3, windowMs: 1000 } });
    const first = await limiter.check('k');
    advance(1);
    const second = await limiter.check('k', { cost: 2 });
    expect(second.remaining).toBeLessThan(1);
    expect(await limiter.refund(second)).toEqual({ refunded: true, policies: ['default'] });
    // Given back once only, however often it is passed.
    expect(await limiter.refund(second)).toEqual({ refunded: false, policies: [] });
    const after = await limiter.peek('k', { cost: 2 });
    expect(after.allowed).toBe(true);
    expect(await limiter.refund(first)).toMatchObject({ refunded: true });
    const full = await limiter.peek('k', { cost: 3 });
    expect(full.allowed).toBe(true);
    expect(full.remaining).toBe(3);
  });

  it.each(['fixed-window', 'sliding-window', 'sliding-log'] as const)(
    '%s: a refund after the window rolled over changes nothing',
    async (algorithm) => {
      const { limiter, advance } = virtual({ policies: { algorithm, limit: 3, windowMs: 1000 } });
      const d = await limiter.check('k');
      advance(2000);
      expect(await limiter.refund(d)).toEqual({ refunded: false, policies: [] });
    },
  );

  it.each(['token-bucket', 'gcra', 'leaky-bucket'] as const)(
    '%s: several refunds on one key, in the order of the charges or the newest first, give each charge back whole',
    async (algorithm) => {
      for (const order of [
        [0, 1, 2],
        [2, 1, 0],
        [0, 2, 1],
      ]) {
        const { limiter, advance } = virtual({ policies: { algorithm, limit: 3, windowMs: 1000 } });
        const charges = [];
        for (let i = 0; i < 3; i++) {
          charges.push(await limiter.check('k'));
          advance(0);
        }
        for (const i of order) expect(await limiter.refund(charges[i] as Decision), `order ${order}`).toMatchObject({ refunded: true });
        const full = await limiter.peek('k', { cost: 3 });
        expect(full.allowed, `order ${order}`).toBe(true);
        expect(full.remaining).toBe(3);
      }
    },
  );

  it('gcra: refunds interleaved otherwise may give an earlier charge back less, never more', async () => {
    const { limiter } = virtual({ policies: { algorithm: 'gcra', limit: 3, windowMs: 1000 } });
    const [a, b, c] = [await limiter.check('k'), await limiter.check('k'), await limiter.check('k')];
    // b's refund moves c's refill earlier, so it counts against every charge before c, a included.
    expect(await limiter.refund(b)).toMatchObject({ refunded: true });
    expect(await limiter.refund(c)).toMatchObject({ refunded: true });
    expect(await limiter.refund(a)).toMatchObject({ refunded: false });
    expect((await limiter.peek('k', { cost: 0.001 })).remaining).toBe(2);
  });

  it.each(['token-bucket', 'gcra', 'leaky-bucket'] as const)(
    '%s: a charge made before the key changed plan gives nothing back after it (issue 10)',
    async (algorithm) => {
      const { limiter, advance } = virtual({
        plans: { free: [{ name: 'm', algorithm, limit: 2, windowMs: 1000 }], pro: [{ name: 'm', algorithm, limit: 10, windowMs: 1000 }] },
      });
      const free = await limiter.check('k', { plan: 'free' });
      advance(1);
      const pro = await limiter.check('k', { plan: 'pro' });
      expect(await limiter.refund(free)).toEqual({ refunded: false, policies: [] });
      expect(await limiter.refund(pro)).toEqual({ refunded: true, policies: ['m'] });
    },
  );

  it('refunds part of a charge, then the rest, and rejects more than was charged', async () => {
    const { limiter } = virtual({ policies: { algorithm: 'fixed-window', limit: 5, windowMs: 1000 } });
    const d = await limiter.check('k', { cost: 4 });
    await expect(limiter.refund(d, { cost: 5 })).rejects.toThrow(/ERR_RL_INVALID_REFUND_COST/);
    await limiter.refund(d, { cost: 1.5 });
    expect((await limiter.peek('k', { cost: 0.001 })).remaining).toBe(2.5);
    await limiter.refund(d);
    expect((await limiter.peek('k', { cost: 0.001 })).remaining).toBe(5);
    expect(await limiter.refund(d, { cost: 1 })).toMatchObject({ refunded: false });
  });

  it('refuses an option refund() does not have (a misspelt cost would give back the whole charge), giving back nothing', async () => {
    const { limiter } = virtual({ policies: { algorithm: 'fixed-window', limit: 5, windowMs: 1000 } });
    const d = await limiter.check('k', { cost: 4 });
    const typo = { cots: 1 } as unknown as { cost: number };
    await expect(limiter.refund(d, typo)).rejects.toMatchObject({ code: 'ERR_RL_UNKNOWN_OPTION' });
    // Before: the whole charge went back, 5 left where the caller meant 2.
    expect((await limiter.peek('k', { cost: 0.001 })).remaining).toBe(1);
    // A key whose value is undefined counts as absent, as in every option object.
    expect(await limiter.refund(d, { cost: 1, ...({ note: undefined } as object) })).toMatchObject({ refunded: true });
  });

  it.each(ALGORITHMS)(
    '%s: a charge made before its key was reset refunds nothing (it went with the state); one made after does',
    async (algorithm) => {
      const { limiter } = virtual({ policies: { algorithm, limit: 3, windowMs: 60_000 } });
      const old = await limiter.check('k');
      await limiter.reset('k');
      const fresh = [await limiter.check('k'), await limiter.check('k'), await limiter.check('k')];
      expect(fresh.map((d) => d.allowed)).toEqual([true, true, true]);
      // Refunded into the state made since, it would give back budget nobody spent: a 4th admission.
      expect(await limiter.refund(old)).toMatchObject({ refunded: false });
      expect((await limiter.check('k')).allowed).toBe(false);
      expect(await limiter.refund(fresh[2] as Decision)).toMatchObject({ refunded: true });
      expect((await limiter.check('k')).allowed).toBe(true);
    },
  );

  it('a charge sent before a reset and answered after the reset was asked refunds nothing (a store that answers in order, as Redis does)', async () => {
    const inner = new MemoryStore({ sweepIntervalMs: 0 });
    // Each call runs when sent and answers a microtask later, in order: one connection to Redis.
    const store: Store = {
      kind: 'ordered',
      apply: (key, plan, cost, now) => Promise.resolve(Float64Array.from(inner.apply(key, plan, cost, now))),
      peek: (key, plan, cost, now) => Promise.resolve(Float64Array.from(inner.peek(key, plan, cost, now))),
      refund: (key, plan, cost, marks, now) => Promise.resolve(inner.refund(key, plan, cost, marks, now)),
      reset: (key, plan) => Promise.resolve(inner.reset(key, plan)),
    };
    const limiter = createLimiter({ policies: { limit: 3, windowMs: 60_000 }, store, clock: () => 1_000_000 });
    const sent = limiter.check('k');
    const reset = limiter.reset('k');
    const old = await sent;
    await reset;
    for (let i = 0; i < 3; i++) expect((await limiter.check('k')).allowed).toBe(true);
    expect(await limiter.refund(old)).toMatchObject({ refunded: false });
    expect((await limiter.check('k')).allowed).toBe(false);
  });

  it('a reset of one key of a decision over several makes its receipt stale; a reset of another key does not', async () => {
    const { limiter } = virtual({
      policies: [
        { name: 'ip', limit: 3, windowMs: 60_000 },
        { name: 'user', limit: 3, windowMs: 60_000 },
      ],
    });
    const a = await limiter.check({ ip: 'ip:1', user: 'u1' });
    const b = await limiter.check({ ip: 'ip:1', user: 'u1' });
    await limiter.reset('u2');
    expect(await limiter.refund(a)).toMatchObject({ refunded: true });
    await limiter.reset('u1');
    expect(await limiter.refund(b)).toMatchObject({ refunded: false });
  });

  it('refuses receipts of another limiter and anything that is not a decision', async () => {
    const a = virtual({ policies: { limit: 5, windowMs: 1000 } }).limiter;
    const b = virtual({ policies: { limit: 5, windowMs: 1000 } }).limiter;
    const d = await a.check('k');
    await expect(b.refund(d)).rejects.toThrow(/ERR_RL_INVALID_RECEIPT/);
    await expect(b.refund({ plan: 'default', cost: 1 })).rejects.toThrow(/ERR_RL_INVALID_RECEIPT/);
    // An object made from a receipt's prototype has the class but none of a receipt's private state.
    const forged = Object.create(Object.getPrototypeOf(d.receipt)) as NonNullable<Decision['receipt']>;
    await expect(a.refund(forged)).rejects.toThrow(/ERR_RL_INVALID_RECEIPT/);
    // A decision that charged nothing refunds nothing.
    const limited = await virtual({ policies: { limit: 1, windowMs: 1000 } }).limiter.check('k', { cost: 2 });
    expect(limited.receipt).toBeUndefined();
  });

  it('refunds every key of a multi-key charge, and the shadow policies it charged', async () => {
    const { limiter } = virtual({
      policies: [
        { name: 'ip', algorithm: 'fixed-window', limit: 2, windowMs: 1000 },
        { name: 'account', algorithm: 'gcra', limit: 2, windowMs: 1000 },
      ],
      shadow: { policies: { name: 'next', algorithm: 'sliding-log', limit: 1, windowMs: 1000 } },
    });
    const keys = { ip: '1.1.1.1', account: 'a', next: 'a' };
    const d = await limiter.check(keys);
    expect(await limiter.refund(d)).toEqual({ refunded: true, policies: ['ip', 'account', 'next'] });
    const p = await limiter.peek(keys);
    expect(p.policies.map((r) => r.remaining)).toEqual([2, 2]);
    expect(p.shadow?.policies.map((r) => r.remaining)).toEqual([1]);
    expect(p.shadow?.allowed).toBe(true);
  });
});
