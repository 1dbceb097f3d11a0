import { describe, expect, it } from 'vitest';
import { isPromiseLike } from '../../../internal/promise.js';
import { compilePolicy } from '../../../policy.js';
import { MemoryStore } from '../../memory-store.js';
import { F_ALLOWED, R_FLAGS, R_REMAINING, RESULT_STRIDE, type StorePlan, type StoreResult } from '../../store.js';
import { LocalBatcher } from './local-batcher.js';
import { type LocalBatchOptions, parseLocalBatch } from './options.js';

const plan: StorePlan = {
  policies: [compilePolicy({ algorithm: 'fixed-window', limit: 1_000, windowMs: 60_000 }, 'p', false)],
  enforcedCount: 1,
};

/**
 * A batcher over a MemoryStore whose replies wait until `release` (each call charged at once, as Redis would
 * have), with the script's time in each reply when `stamped`; `settle` releases until no call waits.
 */
function batcher({
  localBatch = { minRate: 1, holdMs: 60_000, maxShare: 0.5 },
  stamped = false,
}: {
  localBatch?: LocalBatchOptions;
  stamped?: boolean;
} = {}) {
  const inner = new MemoryStore({ sweepIntervalMs: 0 });
  const waiting: (() => void)[] = [];
  const charged: number[] = [];
  const calls = {
    charge(key: string, p: StorePlan, cost: number, now: number): Promise<StoreResult> {
      charged.push(cost);
      const r = Array.from(inner.apply(key, p, cost, now));
      if (stamped) r[p.policies.length * RESULT_STRIDE] = now;
      return new Promise((resolve) => waiting.push(() => resolve(r)));
    },
    giveBack: () => Promise.resolve([1]),
  };
  const config = parseLocalBatch(localBatch);
  if (config === false) throw new Error('localBatch off');
  const release = async () => {
    for (const w of waiting.splice(0)) w();
    await new Promise((r) => setTimeout(r, 0));
  };
  const settle = async () => {
    while (waiting.length > 0) await release();
  };
  return { b: new LocalBatcher(config, calls, true), charged, release, settle };
}

describe('LocalBatcher.chargedBeside', () => {
  it('a batch a call sent before two charges beside the key brings counts both, not only the last', async () => {
    const { b, charged, release } = batcher();
    let now = 1_200_000;
    // Decisions 5 ms apart until the key is hot and a batch is asked for.
    let asked: StoreResult | Promise<StoreResult> | undefined;
    for (let i = 0; i < 200 && !charged.some((c) => c > 1_000); i++, now += 5) {
      asked = b.apply('k', plan, 1_000, now);
      if (isPromiseLike(asked) && !charged.some((c) => c > 1_000)) {
        await release();
        await asked;
      }
    }
    const batch = charged.at(-1) as number;
    expect(batch).toBeGreaterThan(1_000);
    // While the batch's call is in flight, two restores charge the key beside it: 100 and 200 units.
    b.chargedBeside('k', plan, [100_000]);
    b.chargedBeside('k', plan, [200_000]);
    await release();
    const first = (await asked) as StoreResult;
    const singles = charged.length - 1;
    // The batch's units are this process's to spend: left are the limit less the checks answered one by
    // one, this one, and both charges made beside (300 units; before, only the last: 200).
    expect(first[R_REMAINING]).toBe(1_000_000 - (singles + 1) * 1_000 - 300_000);
  });
});

describe('LocalBatcher doorway', () => {
  const planOf = (limit: number): StorePlan => ({
    policies: [compilePolicy({ algorithm: 'fixed-window', limit, windowMs: 60_000 }, 'p', false)],
    enforcedCount: 1,
  });

  it('costs a few KiB per plan until its cold traffic needs more: 500 plans of 20 cold keys (before: 128 KiB each, 64 MB)', () => {
    const { b } = batcher();
    const plans = Array.from({ length: 500 }, (_, i) => planOf(1_000 + i));
    const before = process.memoryUsage().arrayBuffers;
    for (const p of plans) for (let k = 0; k < 20; k++) b.apply(`key-${k}`, p, 1_000, 1_000);
    const grew = process.memoryUsage().arrayBuffers - before;
    expect(grew).toBeLessThan(8 * 1024 * 1024);
  });

  it('grows with the cold traffic, so a key at minRate still stands out among 100,000 cold keys a second', () => {
    const { b } = batcher();
    const p = planOf(1_000_000);
    let tracked = false;
    for (let second = 0; second < 4 && !tracked; second++) {
      const now = 1_000 + second * 1_000;
      for (let k = 0; k < 100_000; k++) {
        b.apply(`cold-${second}-${k}`, p, 1_000, now);
        // The hot key: 5 decisions in every 10,000 cold ones, 50 a second.
        if (k % 2_000 === 0 && b.apply('hot', p, 1_000, now) !== undefined) tracked = true;
      }
    }
    expect(tracked).toBe(true);
  });
});

/** A batcher whose calls answer at once with the script's time after the policy's numbers, as Redis does. */
function timed(localBatch: LocalBatchOptions = { minRate: 1, holdMs: 60_000, maxShare: 0.5 }) {
  const inner = new MemoryStore({ sweepIntervalMs: 0 });
  const calls = {
    charge(key: string, p: StorePlan, cost: number, now: number): Promise<StoreResult> {
      const r = [...inner.apply(key, p, cost, now)];
      r[p.policies.length * RESULT_STRIDE] = now;
      return Promise.resolve(r);
    },
    giveBack: (_key: string, p: StorePlan) => Promise.resolve(p.policies.map(() => 1)),
  };
  const config = parseLocalBatch(localBatch);
  if (config === false) throw new Error('localBatch off');
  return new LocalBatcher(config, calls, true);
}

describe('LocalBatcher rejections', () => {
  const small: StorePlan = {
    policies: [compilePolicy({ algorithm: 'fixed-window', limit: 3, windowMs: 3_600_000 }, 'p', false)],
    enforcedCount: 1,
  };

  it('answers a rejection in memory for a second at most, then asks the store again; while the store is away (held), for its whole wait', async () => {
    const b = timed();
    let now = 1_200_000;
    // Decisions 5 ms apart until the key is exhausted and its rejection held: one answered in memory.
    while (b.stats.blocked === 0 && now < 1_210_000) {
      const r = b.apply('k', small, 1_000, now);
      if (isPromiseLike(r)) await r;
      now += 5;
    }
    const at = now;
    const inMemory = async (ms: number) => {
      const r = b.apply('k', small, 1_000, at + ms);
      if (isPromiseLike(r)) await r;
      return r !== undefined && !isPromiseLike(r);
    };
    expect(await inMemory(500)).toBe(true);
    // Past a second since the rejection came: the store is asked (before: answered in memory to the window's end).
    expect(await inMemory(1_100)).toBe(false);
    // The store away (its breaker open): the rejection still answers, for the rest of its wait.
    expect(b.held('k', small, 1_000, at + 600_000)?.[R_REMAINING]).toBe(0);
  });
});

describe('LocalBatcher.countAtLoss', () => {
  /** A batcher whose calls charge a MemoryStore at once, as Redis would, and another process taking from the same key. */
  function shared() {
    const inner = new MemoryStore({ sweepIntervalMs: 0 });
    const calls = {
      charge: (key: string, p: StorePlan, cost: number, now: number) => Promise.resolve(Float64Array.from(inner.apply(key, p, cost, now))),
      giveBack: () => Promise.resolve([1]),
    };
    const config = parseLocalBatch({ minRate: 1, holdMs: 50, maxShare: 0.1 });
    if (config === false) throw new Error('localBatch off');
    return { b: new LocalBatcher(config, calls, true), inner };
  }

  /** Checks `key` on `b` at `now` (one unit), awaiting a call; whether it was admitted. */
  async function check(b: LocalBatcher, now: number): Promise<void> {
    const r = b.apply('k', plan, 1_000, now);
    if (isPromiseLike(r)) await r;
  }

  it('a key another process went on taking from while this one spent its batch, then emptied (a FLUSHALL): the count at the loss is what both had taken, not what this one last saw', async () => {
    const { b, inner } = shared();
    let now = 1_200_000;
    const left = () => inner.apply('k', plan, 0, now)[R_REMAINING] as number;
    // This process checks every 10 ms (a batch call about every 50), the other takes 3 units a ms, until
    // the key is exhausted.
    let answered = 0;
    for (; left() >= 3_000; now += 1) {
      if (now % 10 === 0) {
        const r = b.apply('k', plan, 1_000, now);
        if (r !== undefined) answered = (isPromiseLike(r) ? await r : r)[R_REMAINING] as number;
      }
      inner.apply('k', plan, 3_000, now);
    }
    const truth = 1_000_000 - b.heldMilli();
    inner.reset('k', plan);
    const seen = b.countAtLoss('k', plan, now)?.[0] ?? 0;
    // This process's last answer said far less was used (a restore had only that before).
    expect(1_000_000 - answered).toBeLessThan(truth - 50_000);
    // The others' take since the last reply is a guess at their pace: within a unit or two.
    expect(seen).toBeGreaterThanOrEqual(truth - 2_000);
    expect(seen).toBeLessThanOrEqual(1_000_000);
    // The next batch call finds the key emptied, and keeps that count for the restore.
    for (let i = 0; i < 100 && b.countAtLoss('k', plan, now)?.[0] === seen; i++) {
      now += 10;
      await check(b, now);
    }
    expect(b.countAtLoss('k', plan, now)?.[0]).toBeGreaterThanOrEqual(truth - 2_000);
    // Gone with the window it counted.
    expect(b.countAtLoss('k', plan, now + 60_000)?.[0] ?? 0).toBe(0);
  });

  it("a lull before the loss is no pace: the count is what the last reply said was charged, not the others' pace over the lull (before: the limit)", async () => {
    const { b, inner } = shared();
    let now = 1_200_000;
    for (let i = 0; i < 300; i++, now += 1) {
      if (now % 10 === 0) await check(b, now);
      inner.apply('k', plan, 1_000, now);
    }
    const charged = 1_000_000 - (inner.apply('k', plan, 0, now)[R_REMAINING] as number);
    // A second of nothing, then the loss.
    now += 1_000;
    inner.reset('k', plan);
    const seen = b.countAtLoss('k', plan, now)?.[0] ?? 0;
    // At most the others' take over one span of their pace (about a batch call's interval) beyond what was
    // charged; before, their pace over the whole second: the limit.
    expect(seen).toBeLessThan(charged + 60_000);
    expect(seen).toBeGreaterThanOrEqual(charged - 20_000);
  });

  it('a key this process alone took from: the count at the loss is what it spent, no more', async () => {
    const { b, inner } = shared();
    let now = 1_200_000;
    let spent = 0;
    for (; spent < 500; spent++, now += 1) await check(b, now);
    // What it holds is spent too: then the key counts every unit it was charged as an admission.
    while (b.held('k', plan, 1_000, now) !== undefined) spent += 1;
    expect(b.heldMilli()).toBe(0);
    const truth = 1_000_000 - (inner.apply('k', plan, 0, now)[R_REMAINING] as number);
    expect(truth).toBe(spent * 1_000);
    inner.reset('k', plan);
    while (b.countAtLoss('k', plan, now) === undefined) {
      await check(b, now);
      now += 1;
    }
    expect(b.countAtLoss('k', plan, now)?.[0]).toBe(truth);
  });

  it('a reply with a remaining that is no number (a garbled state) tells nothing: the count stays what the replies before told', async () => {
    const { b } = shared();
    let now = 1_200_000;
    for (let i = 0; i < 200; i++, now += 1) await check(b, now);
    const before = b.countAtLoss('k', plan, now)?.[0];
    expect(before).toBeGreaterThan(0);
    const garbled = (b as unknown as { calls: { charge: (...a: unknown[]) => Promise<StoreResult> } }).calls;
    garbled.charge = () => Promise.resolve(Float64Array.from([1, Number.NaN, 0, 30_000, 0, now]));
    for (let i = 0; i < 200; i++, now += 1) {
      const r = b.apply('k', plan, 1_000, now);
      if (isPromiseLike(r)) await r.catch(() => undefined);
    }
    expect(Number.isFinite(b.countAtLoss('k', plan, now)?.[0])).toBe(true);
  });
});

describe('LocalBatcher on a bucket that stays near full', () => {
  // 40 units a ms: a bucket drained slower than that stays near full, owing a fraction of a ms.
  const fast: StorePlan = {
    policies: [compilePolicy({ algorithm: 'gcra', limit: 2_400_000, windowMs: 60_000 }, 'p', false)],
    enforcedCount: 1,
  };

  it('sends each check alone, side by side, and charges only what its checks spend (before: calls of 16 to 32 units, one at a time, 1.8 units charged an admission)', async () => {
    // The default holdMs and maxShare.
    const { b, charged, settle } = batcher({ localBatch: { minRate: 1 }, stamped: true });
    let admitted = 0;
    /** 8 checks at `now` at once; how many calls went out before any reply came. */
    const wave = async (now: number) => {
      const sent = charged.length;
      const answers = Array.from({ length: 8 }, () => b.apply('k', fast, 1_000, now));
      const before = charged.length - sent;
      await settle();
      for (const a of answers) {
        const r = isPromiseLike(a) ? await a : a;
        if (r !== undefined && ((r[R_FLAGS] as number) & F_ALLOWED) !== 0) admitted += 1;
      }
      return before;
    };
    let now = 1_200_000;
    // 16 checks a ms, in two waves, the second right after the first's replies: the bucket owes a
    // fraction of a ms, reported as 1 ms.
    for (let ms = 0; ms < 100; ms++, now += 1) {
      await wave(now);
      await wave(now);
    }
    const sideBySide = await wave(now);
    expect(admitted).toBe(201 * 8);
    // Each check is the round trip, sent at once (before: one call, the other 7 waiting on it).
    expect(sideBySide).toBe(8);
    // Every unit charged was an admission: no unit charged that passed unspent (before: 2,856 units for 1,608).
    expect(b.stats.chargedMilli).toBe(1_000 * admitted);
    expect(charged.every((c) => c === 1_000)).toBe(true);
  });
});

describe('LocalBatcher: plans that reach the same Redis keys', () => {
  // Two plans with the policy `b` in common (a plan table's plans, limiters of one name): its keys are one.
  const a = compilePolicy({ name: 'a', algorithm: 'fixed-window', limit: 1_000, windowMs: 60_000 }, 'a', false);
  const b = compilePolicy({ name: 'b', algorithm: 'fixed-window', limit: 5_000, windowMs: 60_000 }, 'b', false);
  const both: StorePlan = { policies: [a, b], enforcedCount: 2 };
  const onlyB: StorePlan = { policies: [b], enforcedCount: 1 };

  it('a peek, a restore charge and a reset under one plan reach the batches the other holds, in the policy they share only', async () => {
    const batcher = timed({ minRate: 1, holdMs: 1_000, maxShare: 0.1 });
    let now = 1_200_000;
    const check = async () => {
      now += 1;
      const r = batcher.apply('k', both, 1_000, now);
      return Array.from((isPromiseLike(r) ? await r : r) ?? []);
    };
    for (let i = 0; i < 200; i++) await check();
    const held = batcher.heldMilli();
    expect(held).toBeGreaterThan(1_000);
    // A peek under `onlyB` counts them as not spent; they pay no check of its own.
    const peeked = batcher.unspent('k', onlyB, now)?.addTo([0, 0, 0, 0, 0, now], 1_000);
    expect(peeked?.[R_REMAINING]).toBe(held);
    expect((peeked?.[R_FLAGS] ?? 0) & F_ALLOWED).toBe(0);
    // A restore's charge of `b` beside them: the batch's answers count it in `b`, not in `a`.
    const before = await check();
    batcher.chargedBeside('k', onlyB, [7_000]);
    const after = await check();
    expect(after[R_REMAINING]).toBe((before[R_REMAINING] as number) - 1_000);
    expect(after[RESULT_STRIDE + R_REMAINING]).toBe((before[RESULT_STRIDE + R_REMAINING] as number) - 8_000);
    // A reset under `onlyB` deleted `b`'s key: the batches charged into it are dropped.
    batcher.forget('k', onlyB);
    expect(batcher.heldMilli()).toBe(0);
  });
});
