import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLimiter } from '../../limiter/create-limiter.js';
import { StoreTimer } from '../../observability/store-timer.js';
import { compilePolicy } from '../../policy.js';
import type { StorePlan } from '../../stores/store.js';
import { ProcessStore, Shared } from '../../testing/shared-store.js';
import { StoreGuard } from '../store-guard.js';
import { countsFor, SureCharges } from './sure-charges.js';

/** Timers, `Date` and `performance.now()` in virtual time: the limiter's clock is `Date.now`. */
const FAKE: NonNullable<Parameters<typeof vi.useFakeTimers>[0]>['toFake'] = ['setTimeout', 'clearTimeout', 'Date', 'performance'];

describe("a carry's charge of one policy on its own, sent until it lands", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a plan of a short and a long window: the long one is charged every local admission even when its own charge fails at first', async () => {
    // A ten-minute window starts at 1,200,000.
    vi.useFakeTimers({ toFake: FAKE, now: 1_200_000 });
    const store = new ProcessStore(new Shared());
    const limiter = createLimiter({
      name: 'carry-rest',
      policies: [
        { name: 'second', algorithm: 'fixed-window', limit: 5, windowMs: 1_000 },
        { name: 'ten-minutes', algorithm: 'fixed-window', limit: 100, windowMs: 600_000 },
      ],
      store,
      clock: () => Date.now(),
      localShare: 1,
      storeTimeoutMs: 100,
      logger: { warn() {}, error() {} },
    });
    let admitted = 0;
    const check = async (): Promise<boolean> => {
      const d = await limiter.check('k');
      if (d.allowed) admitted += 1;
      return d.degraded;
    };
    expect(await check()).toBe(false);
    // Three seconds of outage: the failure mode admits 5 in each new second.
    store.failing = true;
    for (let t = 0; t < 3_000; t += 20) {
      expect(await check()).toBe(true);
      await vi.advanceTimersByTimeAsync(20);
    }
    expect(admitted).toBeGreaterThan(6);
    // Back, but a charge of one policy alone (the long window's rest) fails for a while.
    store.failing = false;
    store.failsFor = (plan) => plan.policies.length === 1;
    for (let i = 0; i < 50 && (await check()); i++) await vi.advanceTimersByTimeAsync(200);
    await vi.advanceTimersByTimeAsync(300);
    store.failsFor = undefined;
    await vi.advanceTimersByTimeAsync(2_000);
    const long = (await limiter.peek('k')).policies.find((p) => p.name === 'ten-minutes');
    expect(long?.remaining).toBe(100 - admitted);
    await limiter.close();
  });
});

const window10 = compilePolicy({ algorithm: 'fixed-window', limit: 10, windowMs: 60_000 }, 'w', false);
const bucket10 = compilePolicy({ algorithm: 'token-bucket', limit: 10, windowMs: 10_000 }, 'b', false);
const plan: StorePlan = { policies: [window10], enforcedCount: 1 };

/** SureCharges over one process's store, its guard's breaker opening at the first failure. */
function sureOn(store: ProcessStore) {
  const guard = new StoreGuard({
    store,
    plan,
    storeTimeoutMs: 100,
    breaker: { failureThreshold: 1, cooldownMs: 1_000 },
    logger: { warn() {}, error() {} },
    onStoreError: 'local',
    now: () => Date.now(),
    onBreaker() {},
  });
  const applied = vi.spyOn(store, 'apply');
  return { sure: new SureCharges(guard, new StoreTimer(store), () => Date.now()), applied, guard };
}

describe('SureCharges', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('countsFor: a window until its reset, or the window a charge opens; a bucket its shortfall and the charge refilled', () => {
    expect(countsFor(window10, 300, 5_000)).toBe(300);
    expect(countsFor(window10, 0, 5_000)).toBe(60_000);
    // One token a second: a shortfall refilled in 2 s, and 5 more in 5 s.
    expect(countsFor(bucket10, 2_000, 5_000)).toBe(7_000);
  });

  it('a first try goes whatever its state says of it (a reset of 0: no state yet); sent again, only while the state counts it', async () => {
    vi.useFakeTimers({ toFake: FAKE, now: 1_200_000 });
    const store = new ProcessStore(new Shared());
    const { sure, applied } = sureOn(store);
    sure.send({ key: 'k', plan, cost: 3_000, forMs: 0, restore: false });
    await vi.advanceTimersByTimeAsync(0);
    expect(applied).toHaveBeenCalledTimes(1);
    store.failing = true;
    sure.send({ key: 'j', plan, cost: 3_000, forMs: 500, restore: false });
    await vi.advanceTimersByTimeAsync(5_000);
    // Tries at 0, 0.2 s and 0.6 s: past 0.5 s, its state would not count it any more.
    expect(applied).toHaveBeenCalledTimes(3);
    sure.close();
  });

  it('sent again to a node whose breaker is open: one probe goes, not every waiting charge', async () => {
    vi.useFakeTimers({ toFake: FAKE, now: 1_200_000 });
    const store = new ProcessStore(new Shared());
    const { sure, applied } = sureOn(store);
    store.failing = true;
    for (let i = 0; i < 50; i++) sure.send({ key: `k${i}`, plan, cost: 1_000, forMs: 60_000, restore: false });
    await vi.advanceTimersByTimeAsync(0);
    expect(applied).toHaveBeenCalledTimes(50);
    await vi.advanceTimersByTimeAsync(250);
    expect(applied).toHaveBeenCalledTimes(51);
    // Back: the next probe answers, the breaker closes, and the turn after it sends the rest.
    store.failing = false;
    await vi.advanceTimersByTimeAsync(30_000);
    expect(applied.mock.calls.length).toBeGreaterThanOrEqual(100);
    const left = await Promise.all(Array.from({ length: 50 }, (_, i) => store.peek(`k${i}`, plan, 0, Date.now())));
    expect(left.map((r) => r[1])).toEqual(new Array(50).fill(9_000));
    sure.close();
  });

  it('close stops what waits: nothing sent after, no timer left', async () => {
    vi.useFakeTimers({ toFake: FAKE, now: 1_200_000 });
    const store = new ProcessStore(new Shared());
    const { sure, applied } = sureOn(store);
    store.failing = true;
    sure.send({ key: 'k', plan, cost: 1_000, forMs: 60_000, restore: false });
    await vi.advanceTimersByTimeAsync(0);
    sure.close();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(applied).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('an ask in flight when a loss drops its charge is charged once it answers (its raise may be on the new ledger)', async () => {
    vi.useFakeTimers({ toFake: FAKE, now: 1_200_000 });
    const store = new ProcessStore(new Shared());
    const { sure, applied } = sureOn(store);
    let answer: (cost: number) => void = () => {};
    sure.send({ key: 'k', plan, cost: 0, forMs: 60_000, restore: true, ask: () => new Promise((r) => (answer = r)) });
    sure.lost();
    answer(4_000);
    await vi.advanceTimersByTimeAsync(0);
    expect(applied).toHaveBeenCalledTimes(1);
    expect((await store.peek('k', plan, 0, Date.now()))[1]).toBe(6_000);
    sure.close();
  });

  it("an ask sent again to a node whose breaker is open takes no probe: the node's own probe still goes (not stuck half-open)", async () => {
    vi.useFakeTimers({ toFake: FAKE, now: 1_200_000 });
    const store = new ProcessStore(new Shared());
    const { sure, guard } = sureOn(store);
    // The breaker opens at a failed charge (not sent again: its state ends before the next turn); the ask fails at first too.
    store.failing = true;
    sure.send({ key: 'j', plan, cost: 1_000, forMs: 100, restore: false });
    let asks = 0;
    sure.send({
      key: 'k',
      plan,
      cost: 0,
      forMs: 60_000,
      restore: true,
      ask: () => (++asks === 1 ? Promise.reject(new Error('lost')) : Promise.resolve(0)),
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(asks).toBe(1);
    // At the next turn the ask goes (a probe may), and the probe is still there for the checks.
    await vi.advanceTimersByTimeAsync(5_000);
    expect(asks).toBe(2);
    const node = guard.nodeOfKey('k');
    expect(guard.refuses(node, Date.now())).toBe(false);
    expect(guard.allow(node, Date.now())).toBe(true);
    sure.close();
  });

  it('a charge sent again as the probe whose store call throws at once tells the breaker: the next probe may go', async () => {
    vi.useFakeTimers({ toFake: FAKE, now: 1_200_000 });
    const store = new ProcessStore(new Shared());
    const { sure, guard, applied } = sureOn(store);
    store.failing = true;
    sure.send({ key: 'k', plan, cost: 1_000, forMs: 600, restore: false });
    await vi.advanceTimersByTimeAsync(0);
    applied.mockImplementation(() => {
      throw new Error('the client is closed');
    });
    // The turn at 200 ms takes the probe and throws; the charge ends before the next turn.
    await vi.advanceTimersByTimeAsync(5_000);
    expect(applied).toHaveBeenCalledTimes(2);
    expect(guard.allow(guard.nodeOfKey('k'), Date.now())).toBe(true);
    sure.close();
  });
});
