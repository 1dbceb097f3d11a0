/**
 * @module createLimiter: several policies decided all-or-nothing, the binding policy, shadow policies and
 * shadow mode, the counters of stats(), key normalisation and bad input at check time. Virtual time only.
 */
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../stores/memory-store.js';
import type { Store, StorePlan, StoreResult } from '../stores/store.js';
import { createVirtualLimiter, replay, type TraceOptions, type TraceRow } from '../testing/replay.js';
import type { Decision, PolicyOptions } from '../types.js';
import { createLimiter, MAX_KEY_LENGTH } from './create-limiter.js';

const perMinute: PolicyOptions = { name: 'minute', algorithm: 'fixed-window', limit: 5, windowMs: 10_000 };
const perSecond: PolicyOptions = { name: 'second', algorithm: 'token-bucket', limit: 2, windowMs: 1000 };

/** The per-policy view of a decision: [name, allowed, remaining, retryAfterMs, resetMs]. */
function perPolicy(d: Decision): [string, boolean, number, number, number][] {
  return d.policies.map((p) => [p.name, p.allowed, p.remaining, p.retryAfterMs, p.resetMs]);
}

describe('several policies', () => {
  it('admit only when every policy admits; if any rejects, none is charged', () => {
    const v = createVirtualLimiter({ policies: [perMinute, perSecond] });
    expect(perPolicy(v.at(0, 1))).toEqual([
      ['minute', true, 4, 0, 10_000],
      ['second', true, 1, 0, 500],
    ]);
    expect(perPolicy(v.at(0, 1))).toEqual([
      ['minute', true, 3, 0, 10_000],
      ['second', true, 0, 0, 1000],
    ]);
    // 'second' is empty: 'minute' would admit, but is not charged (still 3 left).
    const rejected = v.at(0, 1);
    expect(rejected).toMatchObject({ allowed: false, limited: true, reason: 'limited', policy: 'second', retryAfterMs: 500 });
    expect(perPolicy(rejected)).toEqual([
      ['minute', true, 3, 0, 10_000],
      ['second', false, 0, 500, 1000],
    ]);
    expect(perPolicy(v.at(500, 1))).toEqual([
      ['minute', true, 2, 0, 9500],
      ['second', true, 0, 0, 1000],
    ]);
  });

  it('the binding policy: least remaining when admitted (ties: the later reset), longest wait when rejected', () => {
    const rows: TraceRow[] = [
      // minute 4 left, second 1 left: 'second' binds.
      { at: 0, cost: 1, allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 500, delayMs: 0 },
      // 3 and 0.
      { at: 0, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      // second refilled to 2: 1 and 0.
      { at: 1000, cost: 2, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
      // Both 0 left: minute resets later (8500 vs 1000), so it binds.
      { at: 1500, cost: 1, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 8500, delayMs: 0 },
      // Both reject: minute's wait (8000) is longer than second's (500).
      { at: 2000, cost: 2, allowed: false, remaining: 0, retryAfterMs: 8000, resetMs: 8000, delayMs: 0 },
      // Only minute rejects; second would admit (2 left, not charged).
      { at: 2500, cost: 1, allowed: false, remaining: 0, retryAfterMs: 7500, resetMs: 7500, delayMs: 0 },
      // A new minute window: 3 and 0.
      { at: 10_000, cost: 2, allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 },
    ];
    expect(replay({ policies: [perMinute, perSecond] }, rows)).toEqual(rows);
  });

  it('names the binding policy', () => {
    const v = createVirtualLimiter({ policies: [perMinute, perSecond] });
    expect(v.at(0, 2).policy).toBe('second');
    expect(v.at(0, 1)).toMatchObject({ allowed: false, policy: 'second' });
    expect(v.at(3000, 1).policy).toBe('second');
    expect(v.at(3000, 1).policy).toBe('second');
    expect(v.at(6000, 1)).toMatchObject({ allowed: true, policy: 'minute', remaining: 0 });
    expect(v.at(7000, 1)).toMatchObject({ allowed: false, policy: 'minute', retryAfterMs: 3000 });
  });

  it('the combined retryAfterMs is exact: the longest wait admits, one ms less does not', () => {
    const options: TraceOptions = { policies: [perMinute, perSecond] };
    const v = createVirtualLimiter(options);
    v.at(0, 2);
    v.at(1000, 2);
    const d = v.at(1000, 1);
    expect(d).toMatchObject({ allowed: false, policy: 'second', retryAfterMs: 500 });
    // minute has 1 left: after 499 ms 'second' still rejects, after 500 both admit.
    expect(createVirtualLimiterAfter(options, [0, 1000], 1499).allowed).toBe(false);
    expect(createVirtualLimiterAfter(options, [0, 1000], 1500).allowed).toBe(true);
  });

  it('a cost above one policy’s capacity is its own outcome, names that policy and charges nothing', () => {
    const v = createVirtualLimiter({ policies: [perMinute, perSecond] });
    const d = v.at(0, 3);
    expect(d).toMatchObject({ allowed: false, limited: true, reason: 'cost-exceeds-capacity', policy: 'second', retryAfterMs: 0 });
    expect(d.policies.map((p) => p.reason)).toEqual([undefined, 'cost-exceeds-capacity']);
    expect(perPolicy(v.at(0, 2))).toEqual([
      ['minute', true, 3, 0, 10_000],
      ['second', true, 0, 0, 1000],
    ]);
  });

  it('results come in the configured order and describe their policy', () => {
    const v = createVirtualLimiter({ policies: [perSecond, { ...perMinute, unit: 'content-bytes' }] });
    const d = v.at(0, 1);
    expect(d.policies).toEqual([
      expect.objectContaining({
        name: 'second',
        algorithm: 'token-bucket',
        shadow: false,
        limit: 2,
        windowMs: 1000,
        capacity: 2,
        delayMs: 0,
      }),
      expect.objectContaining({ name: 'minute', algorithm: 'fixed-window', shadow: false, limit: 5, windowMs: 10_000, capacity: 5 }),
    ]);
    expect(v.limiter.policies).toEqual([
      { name: 'second', algorithm: 'token-bucket', limit: 2, windowMs: 1000, capacity: 2, unit: 'requests', shadow: false },
      { name: 'minute', algorithm: 'fixed-window', limit: 5, windowMs: 10_000, capacity: 5, unit: 'content-bytes', shadow: false },
    ]);
    expect(Object.isFrozen(v.limiter.policies)).toBe(true);
    expect(d.shadow).toBeUndefined();
    expect(d.degraded).toBe(false);
    expect(d.mode).toBe('enforce');
  });

  it('the largest leaky-bucket delay among the policies is the decision’s delay', () => {
    const v = createVirtualLimiter({
      policies: [
        { name: 'fast', algorithm: 'leaky-bucket', limit: 10, windowMs: 1000 },
        { name: 'slow', algorithm: 'leaky-bucket', limit: 4, windowMs: 1000 },
        perMinute,
      ],
    });
    expect(v.at(0, 1).delayMs).toBe(0);
    const d = v.at(0, 1);
    expect(d.policies.map((p) => p.delayMs)).toEqual([100, 250, 0]);
    expect(d.delayMs).toBe(250);
  });
});

/** A fresh limiter that admitted cost 2 at each of `times`, then decides cost 1 at `at`. */
function createVirtualLimiterAfter(options: TraceOptions, times: number[], at: number): Decision {
  const v = createVirtualLimiter(options);
  for (const t of times) v.at(t, 2);
  return v.at(at, 1);
}

describe('shadow policies', () => {
  const enforced: PolicyOptions = { algorithm: 'gcra', limit: 5, windowMs: 1000 };
  const candidate: PolicyOptions = { algorithm: 'fixed-window', limit: 2, windowMs: 1000 };

  it('keep their own state (even under the same name) and never consume the enforced budget', () => {
    const v = createVirtualLimiter({ policies: enforced, shadow: { policies: candidate } });
    const ds = [v.at(0, 1), v.at(0, 1), v.at(0, 1)];
    expect(ds.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 4],
      [true, 3],
      [true, 2],
    ]);
    expect(ds.map((d) => [d.shadow?.allowed, d.shadow?.remaining, d.shadow?.retryAfterMs])).toEqual([
      [true, 1, 0],
      [true, 0, 0],
      [false, 0, 1000],
    ]);
    expect(ds[2]?.shadow).toMatchObject({ reason: 'limited', policy: 'default' });
    expect(ds[2]?.shadow?.policies).toEqual([expect.objectContaining({ name: 'default', algorithm: 'fixed-window', shadow: true })]);
    expect(v.limiter.shadowPolicies).toEqual([expect.objectContaining({ name: 'default', algorithm: 'fixed-window', shadow: true })]);
  });

  it('are charged on their own when the enforced policies reject (they see the real arrivals)', () => {
    const v = createVirtualLimiter({
      policies: { algorithm: 'fixed-window', limit: 1, windowMs: 1000 },
      shadow: { policies: { algorithm: 'gcra', limit: 10, windowMs: 1000 } },
    });
    expect(v.at(0, 1).shadow?.remaining).toBe(9);
    const d = v.at(0, 1);
    expect(d.allowed).toBe(false);
    expect(d.shadow).toMatchObject({ allowed: true, remaining: 8 });
  });

  it('form their own all-or-nothing group', () => {
    const v = createVirtualLimiter({
      policies: enforced,
      shadow: {
        policies: [
          { name: 'a', algorithm: 'fixed-window', limit: 3, windowMs: 1000 },
          { name: 'b', algorithm: 'fixed-window', limit: 1, windowMs: 1000 },
        ],
      },
    });
    v.at(0, 1);
    const d = v.at(0, 1);
    expect(d.shadow).toMatchObject({ allowed: false, policy: 'b' });
    // 'a' admitted but was not charged, because 'b' rejected.
    expect(d.shadow?.policies.map((p) => [p.name, p.allowed, p.remaining])).toEqual([
      ['a', true, 2],
      ['b', false, 0],
    ]);
  });

  it('stats() counts what each side would block', () => {
    const v = createVirtualLimiter({
      policies: { name: 'live', algorithm: 'fixed-window', limit: 3, windowMs: 1000 },
      shadow: { policies: { name: 'next', algorithm: 'fixed-window', limit: 2, windowMs: 1000 } },
    });
    v.at(0, 1); // both admit
    v.at(0, 1); // both admit
    v.at(0, 1); // live admits (3rd), next rejects: shadowOnly
    v.at(0, 1); // both reject
    v.at(1000, 3); // live admits 3, next: cost 3 above its capacity 2: shadow rejects (shadowOnly)
    v.at(1000, 1); // live rejects, next admits: enforcedOnly
    expect(v.limiter.stats()).toMatchObject({
      requests: 6,
      limited: 2,
      shadowLimited: 3,
      shadowOnly: 2,
      enforcedOnly: 1,
      storeErrors: 0,
      outages: 0,
      policies: [
        { name: 'live', plan: 'default', shadow: false, rejected: 2 },
        { name: 'next', plan: 'default', shadow: true, rejected: 3 },
      ],
    });
    v.limiter.resetStats();
    expect(v.limiter.stats()).toMatchObject({
      requests: 0,
      limited: 0,
      shadowLimited: 0,
      shadowOnly: 0,
      enforcedOnly: 0,
      storeErrors: 0,
      outages: 0,
      policies: [
        { name: 'live', plan: 'default', shadow: false, rejected: 0 },
        { name: 'next', plan: 'default', shadow: true, rejected: 0 },
      ],
    });
  });

  it('stats() counts a policy as rejecting only when it rejects, not when another policy did', () => {
    const v = createVirtualLimiter({ policies: [perMinute, perSecond] });
    v.at(0, 2);
    v.at(0, 1);
    expect(v.limiter.stats()).toMatchObject({
      requests: 2,
      limited: 1,
      shadowLimited: 0,
      policies: [
        { name: 'minute', rejected: 0 },
        { name: 'second', rejected: 1 },
      ],
    });
  });
});

describe("mode: 'shadow'", () => {
  it('never blocks: allowed is always true, limited carries the verdict, state is charged as enforcing would', () => {
    const options: TraceOptions = { policies: { algorithm: 'fixed-window', limit: 2, windowMs: 1000 }, mode: 'shadow' };
    const v = createVirtualLimiter(options);
    const ds = [v.at(0, 1), v.at(0, 1), v.at(0, 1), v.at(500, 1), v.at(1000, 1)];
    expect(ds.map((d) => [d.allowed, d.limited, d.reason, d.remaining, d.retryAfterMs])).toEqual([
      [true, false, 'allowed', 1, 0],
      [true, false, 'allowed', 0, 0],
      [true, true, 'limited', 0, 1000],
      [true, true, 'limited', 0, 500],
      [true, false, 'allowed', 1, 0],
    ]);
    expect(ds.every((d) => d.mode === 'shadow')).toBe(true);
    expect(v.limiter.mode).toBe('shadow');
    expect(v.limiter.stats()).toMatchObject({ requests: 5, limited: 2 });
  });
});

describe('keys', () => {
  it('a non-string key is a TypeError (check rejects, decide throws), and changes nothing', async () => {
    const v = createVirtualLimiter({ policies: { limit: 1, windowMs: 1000 } });
    await expect(v.limiter.check(42 as unknown as string)).rejects.toThrow(TypeError);
    await expect(v.limiter.check(undefined as unknown as string)).rejects.toThrow(
      /ERR_RL_INVALID_KEY: the key must be a string; received undefined/,
    );
    expect(() => v.limiter.decide({} as unknown as string)).toThrow(/ERR_RL_INVALID_KEY.*received an object/);
    expect(v.limiter.stats().requests).toBe(0);
  });

  it(`keys up to ${MAX_KEY_LENGTH} characters are kept; longer ones are replaced by their SHA-256`, () => {
    const v = createVirtualLimiter({ policies: { algorithm: 'fixed-window', limit: 1, windowMs: 1000 } });
    const exact = 'a'.repeat(MAX_KEY_LENGTH);
    expect(v.at(0, 1, exact).key).toBe(exact);
    const long1 = `${'b'.repeat(300)}1`;
    const long2 = `${'b'.repeat(300)}2`;
    const d1 = v.at(0, 1, long1);
    expect(d1.key).toMatch(/^sha256:[A-Za-z0-9_-]{43}$/);
    expect(d1.allowed).toBe(true);
    // The same long key shares state; one differing only past the 300th character does not.
    expect(v.at(0, 1, long1)).toMatchObject({ allowed: false, key: d1.key });
    expect(v.at(0, 1, long2).allowed).toBe(true);
    expect(v.at(0, 1, long2).key).not.toBe(d1.key);
  });

  it('a key that spells a digest, or has an unpaired surrogate, is hashed too: no two keys share a bucket', () => {
    const v = createVirtualLimiter({ policies: { algorithm: 'fixed-window', limit: 1, windowMs: 1000 } });
    const long = 'b'.repeat(300);
    const digest = v.at(0, 1, long).key;
    // The literal digest is another key: its own digest, its own bucket.
    const literal = v.at(0, 1, digest);
    expect(literal).toMatchObject({ allowed: true });
    expect(literal.key).toMatch(/^sha256:[A-Za-z0-9_-]{43}$/);
    expect(literal.key).not.toBe(digest);
    expect(v.at(0, 1, 'sha256:').allowed).toBe(true);
    expect(v.at(0, 1, 'sha256:').allowed).toBe(false);
    // Unpaired surrogates have no UTF-8 form (an encoder writes U+FFFD): each is hashed by its code units.
    const lone = ['\uD800', '\uD801', 'a\uDC00', 'a\uDC01', '\uFFFD', 'a\uFFFD'];
    const texts = lone.map((k) => v.at(0, 1, k));
    expect(texts.map((d) => d.allowed)).toEqual([true, true, true, true, true, true]);
    expect(texts.slice(0, 4).every((d) => d.key.startsWith('sha256:'))).toBe(true);
    expect(texts.slice(4).map((d) => d.key)).toEqual(['\uFFFD', 'a\uFFFD']);
    expect(new Set(texts.map((d) => d.key)).size).toBe(lone.length);
    // Several keys: each policy's key is hashed alike, and the decision's text can be encoded.
    const two = createVirtualLimiter({
      policies: [
        { name: 'a', algorithm: 'fixed-window', limit: 1, windowMs: 1000 },
        { name: 'b', algorithm: 'fixed-window', limit: 1, windowMs: 1000 },
      ],
    });
    const decide = (keys: Record<string, string>) => two.limiter.decide(keys) as Decision;
    expect(decide({ a: '\uD800', b: 'x' }).allowed).toBe(true);
    expect(decide({ a: '\uD801', b: 'y' }).allowed).toBe(true);
    expect(decide({ a: '\uD800', b: 'z' })).toMatchObject({ allowed: false, policy: 'a' });
  });

  it('reset(key) forgets the key in every policy, enforced and shadow, also for hashed keys', async () => {
    const v = createVirtualLimiter({
      policies: { algorithm: 'fixed-window', limit: 1, windowMs: 1000 },
      shadow: { policies: { algorithm: 'sliding-log', limit: 1, windowMs: 1000 } },
    });
    const long = 'x'.repeat(1000);
    for (const key of ['k', long]) {
      v.at(0, 1, key);
      expect(v.at(0, 1, key)).toMatchObject({ allowed: false, shadow: { allowed: false } });
      await v.limiter.reset(key);
      expect(v.at(0, 1, key)).toMatchObject({ allowed: true, shadow: { allowed: true } });
    }
    expect(v.store.size).toBe(4);
  });
});

describe('cost at check time', () => {
  it.each([0, -1, Number.NaN, Number.NEGATIVE_INFINITY, 0.0001, 1.0005, '1', null])(
    'cost %o is a RangeError that says what a cost must be, and charges nothing',
    async (cost) => {
      const v = createVirtualLimiter({ policies: { limit: 1, windowMs: 1000 } });
      const bad = { cost: cost as number };
      await expect(v.limiter.check('k', bad)).rejects.toThrow(RangeError);
      expect(() => v.limiter.decide('k', bad)).toThrow(
        /ERR_RL_INVALID_COST: cost must be a positive finite multiple of 1\/1000 \(e\.g\. 1, 2\.5, 0\.001\)/,
      );
      expect(v.limiter.stats().requests).toBe(0);
      expect(v.at(0, 1).remaining).toBe(0);
    },
  );

  it.each([Number.POSITIVE_INFINITY, 1e13, 2 ** 53 + 2, Number.MAX_VALUE])(
    'cost %d, past exact arithmetic, exceeds the capacity (413), and charges nothing',
    (cost) => {
      const v = createVirtualLimiter({ policies: { limit: 1, windowMs: 1000 } });
      expect(v.at(0, cost)).toMatchObject({ allowed: false, reason: 'cost-exceeds-capacity', retryAfterMs: 0 });
      expect(v.at(0, 1)).toMatchObject({ allowed: true, remaining: 0 });
    },
  );

  it('accepts binary approximations of decimal costs (0.1, 0.3, 2.675)', () => {
    const v = createVirtualLimiter({ policies: { algorithm: 'fixed-window', limit: 3, windowMs: 1000 } });
    expect(v.at(0, 0.1).remaining).toBe(2.9);
    expect(v.at(0, 0.3).remaining).toBe(2.6);
    expect(v.at(0, 2.6).remaining).toBe(0);
    expect(v.at(1000, 2.675)).toMatchObject({ cost: 2.675, remaining: 0.325 });
  });

  it('the limiter’s cost option is the default cost of a check', async () => {
    let now = 0;
    const limiter = createLimiter({ policies: { algorithm: 'fixed-window', limit: 5, windowMs: 1000 }, cost: 2, clock: () => now });
    expect(await limiter.check('k')).toMatchObject({ cost: 2, remaining: 3 });
    expect(await limiter.check('k', {})).toMatchObject({ cost: 2, remaining: 1 });
    expect(await limiter.check('k', { cost: 1 })).toMatchObject({ cost: 1, remaining: 0 });
    now = 1000;
    expect(await limiter.check('k', { cost: undefined })).toMatchObject({ cost: 2, remaining: 3 });
  });
});

describe('clock', () => {
  it('a clock returning something other than finite ms is a TypeError at check time', async () => {
    let now: unknown = Number.NaN;
    const limiter = createLimiter({ policies: { limit: 1, windowMs: 1000 }, clock: () => now as number });
    await expect(limiter.check('k')).rejects.toThrow(/ERR_RL_INVALID_CLOCK: the clock returned NaN/);
    now = '5';
    expect(() => limiter.decide('k')).toThrow(TypeError);
    // Past ±2^43 ms (a nanosecond clock, 1e300): refused, not answered with waits off by orders of magnitude.
    for (const reading of [1.7e18, 1e300, -(2 ** 44)]) {
      now = reading;
      expect(() => limiter.decide('k')).toThrow(/ERR_RL_INVALID_CLOCK: the clock returned .*within ±2\^43/);
    }
    now = Date.now();
    expect(limiter.decide('k')).toMatchObject({ allowed: true });
  });

  it('fractional clock readings are floored to the ms', () => {
    let now = 999.9;
    const limiter = createLimiter({ policies: { algorithm: 'fixed-window', limit: 1, windowMs: 1000 }, clock: () => now });
    expect((limiter.decide('k') as Decision).resetMs).toBe(1);
    now = 1000.2;
    expect(limiter.decide('k') as Decision).toMatchObject({ allowed: true, resetMs: 1000 });
  });
});

describe('stores', () => {
  /** The MemoryStore behind a Promise, as a networked store answers. */
  class AsyncStore implements Store {
    readonly kind = 'async-memory';
    readonly inner = new MemoryStore({ sweepIntervalMs: 0 });
    closed = 0;
    apply(key: string, plan: StorePlan, cost: number, now: number): Promise<StoreResult> {
      const r = Array.from(this.inner.apply(key, plan, cost, now));
      return Promise.resolve(r);
    }
    reset(key: string, plan: StorePlan): Promise<void> {
      this.inner.reset(key, plan);
      return Promise.resolve();
    }
    close(): void {
      this.closed += 1;
    }
  }

  it('decide() answers synchronously with the MemoryStore and with a Promise for an async store; the same decisions', async () => {
    let now = 0;
    const policies: PolicyOptions[] = [perMinute, perSecond];
    const sync = createLimiter({ policies, clock: () => now, store: new MemoryStore({ sweepIntervalMs: 0 }) });
    const store = new AsyncStore();
    const async = createLimiter({ policies, clock: () => now, store });
    for (const at of [0, 0, 0, 400, 500, 2000, 2000]) {
      now = at;
      const a = sync.decide('k');
      const b = async.decide('k');
      expect(a).not.toBeInstanceOf(Promise);
      expect(b).toBeInstanceOf(Promise);
      expect(await b).toEqual(a);
      expect(await sync.check('other')).toEqual(await async.check('other'));
    }
    await async.reset('k');
    expect(await async.check('k')).toMatchObject({ allowed: true, remaining: 1 });
    await async.close();
    expect(store.closed).toBe(0);
  });

  it('close() leaves a store it did not create open', async () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const limiter = createLimiter({ policies: { limit: 2, windowMs: 1000 }, store, clock: () => 0 });
    await limiter.check('k');
    await limiter.close();
    expect(await limiter.check('k')).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('two limiters of one name sharing a store and a policy share its budget; other names or windows do not', async () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const clock = () => 0;
    const policy: PolicyOptions = { name: 'api', algorithm: 'fixed-window', limit: 2, windowMs: 1000 };
    // The same limiter twice (two processes, or a deploy): one name, one budget.
    const a = createLimiter({ name: 'api', policies: policy, store, clock });
    const b = createLimiter({ name: 'api', policies: policy, store, clock });
    const c = createLimiter({ name: 'api', policies: { ...policy, name: 'other' }, store, clock });
    const d = createLimiter({ name: 'api', policies: { ...policy, limit: 3 }, store, clock });
    const e = createLimiter({ name: 'api', policies: { ...policy, windowMs: 2000 }, store, clock });
    // Another limiter, same policy: its own budget.
    const f = createLimiter({ name: 'login', policies: policy, store, clock });
    const unnamed = createLimiter({ policies: policy, store, clock });
    await a.check('k');
    expect(await b.check('k')).toMatchObject({ remaining: 0 });
    expect(await c.check('k')).toMatchObject({ remaining: 1 });
    // A window's count carries over a change of limit: 2 used, limit 3, one more fits.
    expect(await d.check('k')).toMatchObject({ allowed: true, remaining: 0 });
    expect(await e.check('k')).toMatchObject({ remaining: 1 });
    expect(await f.check('k')).toMatchObject({ remaining: 1 });
    expect(await unnamed.check('k')).toMatchObject({ remaining: 1 });
    // A gcra debt carries over too, converted: 1 used under limit 2, so 1 more leaves 1 of 3.
    const g1 = createLimiter({ name: 'g', policies: { name: 'b', limit: 2, windowMs: 1000 }, store, clock });
    const g2 = createLimiter({ name: 'g', policies: { name: 'b', limit: 3, windowMs: 1000 }, store, clock });
    await g1.check('k');
    expect(await g2.check('k')).toMatchObject({ remaining: 1 });
    // And a token bucket's level: 1 taken under limit 2, so 1 more leaves 1 of 3.
    const t1 = createLimiter({ name: 't', policies: { name: 't', algorithm: 'token-bucket', limit: 2, windowMs: 1000 }, store, clock });
    const t2 = createLimiter({ name: 't', policies: { name: 't', algorithm: 'token-bucket', limit: 3, windowMs: 1000 }, store, clock });
    await t1.check('k');
    expect(await t2.check('k')).toMatchObject({ remaining: 1 });
  });

  it('refuses a second limiter without a name that would share state on the same store (issue 25)', async () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const login = createLimiter({ policies: { algorithm: 'fixed-window', limit: 5, windowMs: 60_000 }, store });
    const api = () => createLimiter({ policies: { algorithm: 'fixed-window', limit: 100, windowMs: 60_000 }, store });
    expect(api).toThrow(expect.objectContaining({ code: 'ERR_RL_SHARED_STATE', option: 'name' }));
    expect(api).toThrow(/Give each limiter its own name/);
    expect(api).toThrow(/keeps its state in this memory store/);
    // A custom store written in JavaScript without a `kind`: the message does not say 'undefined store'.
    const custom = { apply: store.apply.bind(store), reset: store.reset.bind(store) } as unknown as MemoryStore;
    createLimiter({ policies: { limit: 5, windowMs: 60_000 }, store: custom });
    expect(() => createLimiter({ policies: { limit: 5, windowMs: 60_000 }, store: custom })).toThrow(/keeps its state in this store under/);
    // A shadow policy of the same identity as another limiter's enforced one is a different state: fine.
    createLimiter({ policies: { name: 'x', limit: 1, windowMs: 1000 }, shadow: { policies: { limit: 100, windowMs: 60_000 } }, store });
    // Other stores, other windows and names do not collide.
    createLimiter({ policies: { algorithm: 'fixed-window', limit: 100, windowMs: 60_000 } });
    createLimiter({ policies: { algorithm: 'fixed-window', limit: 100, windowMs: 30_000 }, store });
    createLimiter({ name: 'api', policies: { algorithm: 'fixed-window', limit: 100, windowMs: 60_000 }, store });
    // Closing the first gives its key names back: a replacement (a reload) takes them, state and all.
    await login.check('k');
    await login.close();
    const again = api();
    expect(await again.check('k')).toMatchObject({ remaining: 98 });
  });

  it('leaves no claim behind when a limiter fails after its options were read', () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const noLeases = { kind: 'plain', apply: store.apply.bind(store), reset: store.reset.bind(store) };
    const leased = () => createLimiter({ policies: { algorithm: 'concurrency', limit: 1 }, store: noLeases });
    expect(leased).toThrow(expect.objectContaining({ code: 'ERR_RL_STORE_UNSUPPORTED' }));
    expect(leased).toThrow(expect.objectContaining({ code: 'ERR_RL_STORE_UNSUPPORTED' }));
  });

  it('takes a limiter name of printable ASCII without spaces, colons or braces', () => {
    for (const name of ['', 'a b', 'a:b', 'a{b', 'x'.repeat(65), 42]) {
      expect(() => createLimiter({ name: name as string, policies: { limit: 1, windowMs: 1000 } })).toThrow(
        expect.objectContaining({ code: 'ERR_RL_INVALID_LIMITER_NAME', option: 'name' }),
      );
    }
    expect(createLimiter({ name: 'login/v2.a-b_c@x', policies: { limit: 1, windowMs: 1000 } })).toBeDefined();
  });
});

describe('createLimiter, results read back', () => {
  it('reports the uncharged remaining of a policy that admitted when another rejected', async () => {
    const limiter = createLimiter({
      policies: [
        { name: 'wide', algorithm: 'gcra', limit: 10, windowMs: 1_000 },
        { name: 'narrow', algorithm: 'fixed-window', limit: 1, windowMs: 1_000 },
      ],
      clock: () => 5_000,
    });
    const first = await limiter.check('k');
    expect(first.allowed).toBe(true);
    expect(first.policies.map((p) => p.remaining)).toEqual([9, 0]);
    const second = await limiter.check('k');
    expect(second).toMatchObject({ allowed: false, reason: 'limited', policy: 'narrow', retryAfterMs: 1_000 });
    expect(second.policies.map((p) => [p.allowed, p.remaining])).toEqual([
      [true, 9],
      [false, 0],
    ]);
  });

  it('serializes policies of a single-policy decision (built lazily) with JSON.stringify', async () => {
    const limiter = createLimiter({ policies: { limit: 2, windowMs: 1_000 }, clock: () => 0 });
    const d = await limiter.check('k');
    const json = JSON.parse(JSON.stringify(d));
    expect(json.policies).toEqual([expect.objectContaining({ name: 'default', allowed: true, remaining: 1 })]);
    expect(d.policies).toBe(d.policies);
  });
});
