import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLimiter } from '../../limiter/create-limiter.js';
import type { Limiter } from '../../limiter/limiter.js';
import { type StoreKey, type StorePlan, type StoreResult, subPlan } from '../../stores/store.js';
import { ProcessStore, Shared } from '../../testing/shared-store.js';

/** Timers, `Date` and `performance.now()` in virtual time: the limiter's clock is `Date.now`. */
const FAKE: NonNullable<Parameters<typeof vi.useFakeTimers>[0]>['toFake'] = ['setTimeout', 'clearTimeout', 'Date', 'performance'];

/** Lets every promise and zero-time timer run, without moving the clock. */
const settle = () => vi.advanceTimersByTimeAsync(0);

/**
 * A Redis Cluster of two masters, as RedisStore sees one: a key whose name holds `c-` lives on master C,
 * every other on A. Each master keeps its mark (`markNodeAlive`) and names its server (`servers`: INFO to
 * every master at once, or one master's). `kill`ed, C fails every call that needs it, and a reading of its
 * server never comes back (node-redis: a dead master's INFO hangs until the client finds its replica).
 */
class TwoMasters extends ProcessStore {
  readonly state: Shared;
  private dead = false;
  /** The mark questions asked, per master (an answer that could not follow asks one). */
  readonly asked = new Map<string, number>();
  /** The key and plan of the last decision of several keys: `giveBack` writes its state with them. */
  last: { key: readonly string[]; plan: StorePlan } | undefined;

  constructor() {
    const shared = new Shared();
    super(shared);
    this.state = shared;
  }

  nodeOf(key: string): string {
    return key.includes('c-') ? 'C' : 'A';
  }

  override apply(key: StoreKey, plan: StorePlan, cost: number, now: number): Promise<StoreResult> {
    const keys = typeof key === 'string' ? [key] : key;
    if (this.dead && keys.some((k) => this.nodeOf(k) === 'C')) return Promise.reject(new Error('connection lost'));
    if (typeof key !== 'string') this.last = { key, plan };
    return super.apply(key, plan, cost, now);
  }

  markNodeAlive(_plan: StorePlan, node: string): Promise<boolean> {
    this.asked.set(node, (this.asked.get(node) ?? 0) + 1);
    return Promise.resolve(false);
  }

  servers(node?: string): Promise<ReadonlyMap<string, string>> {
    // Asked of every master, or of C alone, a dead C keeps the reading out.
    if (this.dead && node !== 'A') return new Promise(() => {});
    const all = new Map([
      ['A', 'a1'],
      ['C', 'c1'],
    ]);
    return Promise.resolve(node === undefined ? all : new Map([...all].filter(([n]) => n === node)));
  }

  kill(): void {
    this.dead = true;
  }

  /**
   * `n` units of the first policy (a fixed window) of the last decision of several keys come back on its key
   * (as a give-back of cluster-split.ts lands: a decision over A and C reserved on A, and its call to C
   * failed): its count less `n`.
   */
  giveBack(n: number, now: number): void {
    const { key: keys, plan } = this.last as NonNullable<TwoMasters['last']>;
    const key = keys[0] as string;
    const one = subPlan(plan, [0]);
    const cap = (one.policies[0]?.capMilli as number) / 1_000;
    const used = cap - (this.state.inner.peek(key, one, 1_000, now)[1] as number) / 1_000;
    this.state.inner.reset(key, one);
    if (used - n > 0) this.state.inner.apply(key, one, (used - n) * 1_000, now);
  }
}

/** Checks `key` once, and how long it took in virtual time (ms), moving the clock 1 ms at a time until it settles. */
async function timed(limiter: Limiter, key: Record<string, string>): Promise<number> {
  const start = Date.now();
  let done = false;
  const check = limiter.check(key).then(() => {
    done = true;
  });
  await settle();
  while (!done && Date.now() - start < 1_000) await vi.advanceTimersByTimeAsync(1);
  await check;
  return Date.now() - start;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('a master down on a Cluster, with several keys per decision', () => {
  it('checks whose keys all live on a master that answers are not held while a reading of the dead one is out', async () => {
    vi.useFakeTimers({ toFake: FAKE, now: 1_800_000_030_000 });
    const store = new TwoMasters();
    const limiter = createLimiter({
      name: 'pairs',
      policies: [
        { name: 'ip', algorithm: 'fixed-window', limit: 800, windowMs: 600_000 },
        { name: 'acct', algorithm: 'gcra', limit: 400, windowMs: 600_000 },
      ],
      store,
      localShare: 1,
      clock: () => Date.now(),
      logger: { warn() {}, error() {} },
    });
    await settle();
    const healthy = { ip: 'ip-1', acct: 'acct-1' };
    const split = { ip: 'ip-1', acct: 'c-acct-2' };
    for (let i = 0; i < 5; i++) {
      await limiter.check(healthy);
      await limiter.check(split);
    }
    await vi.advanceTimersByTimeAsync(1_000);

    // C is killed: the decisions that need it fail, and the local failure mode answers (and admits) them.
    store.kill();
    let degraded = 0;
    for (let i = 0; i < 5; i++) {
      const d = await limiter.check(split);
      if (d.degraded === true && d.allowed) degraded += 1;
      await vi.advanceTimersByTimeAsync(20);
    }
    expect(degraded).toBeGreaterThan(0);
    await vi.advanceTimersByTimeAsync(1_100);

    // Budget comes back on A's key before each check of the healthy pair (give-backs of reservations whose
    // calls to C failed): its answers could not follow, and A's mark is asked once a second.
    const waits: number[] = [];
    const asked = store.asked.get('A') ?? 0;
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 10; i++) {
        store.giveBack(3, Date.now());
        waits.push(await timed(limiter, healthy));
      }
      await vi.advanceTimersByTimeAsync(1_100);
    }
    // The answers could not follow: the mark of A was asked (the scenario happened).
    expect(store.asked.get('A') ?? 0).toBeGreaterThan(asked);
    // Not one check on A waited for the reading of servers C keeps out (before: ~100 ms each, the hold's bound).
    expect(waits.filter((w) => w >= 50)).toEqual([]);
    await limiter.close();
  });
});
