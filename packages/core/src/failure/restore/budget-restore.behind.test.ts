import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLimiter } from '../../limiter/create-limiter.js';
import type { Limiter } from '../../limiter/limiter.js';
import { type ConnectionEvent, R_REMAINING, type StoreKey, type StorePlan, type StoreResult } from '../../stores/store.js';
import { ProcessStore, Shared } from '../../testing/shared-store.js';
import { WHOLE_STORE } from '../store-guard.js';

/** Timers, `Date` and `performance.now()` in virtual time: the limiter's clock is `Date.now`. */
const FAKE: NonNullable<Parameters<typeof vi.useFakeTimers>[0]>['toFake'] = ['setTimeout', 'clearTimeout', 'Date', 'performance'];

/** Lets every promise and zero-time timer run, without moving the clock. */
const settle = () => vi.advanceTimersByTimeAsync(0);

/**
 * A Redis, as RedisStore sees one (asynchronous, a token mark, a ledger of restores), that names its
 * server (`Store.servers`: a run_id), goes down (`kill`) and comes back from an older snapshot (`restart`):
 * its mark kept, the keys at the counts they had when the snapshot was taken (`save`).
 */
class SnapshotStore extends ProcessStore {
  readonly state: Shared;
  private server = 's1';
  private readonly watchers = new Set<(event: ConnectionEvent) => void>();
  /** The plan of the last call: what `save` and `restart` read and write the keys with. */
  private plan: StorePlan | undefined;
  private snapshot = new Map<string, number>();

  constructor() {
    const shared = new Shared();
    super(shared);
    this.state = shared;
  }

  override apply(key: StoreKey, plan: StorePlan, cost: number, now: number): Promise<StoreResult> {
    this.plan = plan;
    return super.apply(key, plan, cost, now);
  }

  override watchConnection(listener: (event: ConnectionEvent) => void): () => void {
    this.watchers.add(listener);
    return () => this.watchers.delete(listener);
  }

  servers(): Promise<ReadonlyMap<string, string>> {
    return Promise.resolve(new Map([[WHOLE_STORE, this.server]]));
  }

  /** What the store has counted of `key` at `now`, units. */
  used(key: string, now: number): number {
    const plan = this.plan as StorePlan;
    const cap = (plan.policies[0]?.capMilli as number) / 1_000;
    return cap - (this.state.inner.peek(key, plan, 1_000, now)[R_REMAINING] as number) / 1_000;
  }

  /** An RDB `SAVE`: the counts of `keys` now. */
  save(keys: readonly string[], now: number): void {
    this.snapshot = new Map(keys.map((k) => [k, this.used(k, now)]));
  }

  /** `SIGKILL`: the connection drops, and every call fails until `restart`. */
  kill(): void {
    this.failing = true;
    for (const l of this.watchers) l('lost');
  }

  /** Back from the snapshot, as another server (a new run_id), the mark kept. */
  restart(now: number): void {
    const plan = this.plan as StorePlan;
    for (const [key, used] of this.snapshot) {
      this.state.inner.reset(key, plan);
      if (used > 0) this.state.inner.apply(key, plan, used * 1_000, now);
    }
    this.server = 's2';
    this.failing = false;
    for (const l of this.watchers) l('ready');
  }
}

const KEYS = ['k0', 'k1', 'k2', 'k3'] as const;

/** Checks `key` `n` times one after the other; how many were admitted. */
async function admitted(limiter: Limiter, key: string, n: number): Promise<number> {
  let yes = 0;
  for (let i = 0; i < n; i++) if ((await limiter.check(key)).allowed) yes += 1;
  return yes;
}

/**
 * Four keys of a limiter of `limit` per 10 minutes: `saved[k]` checks each before an RDB SAVE, `after[k]`
 * after it, then Redis killed, `outage[k]` checks each while it is down (the failure mode admits them),
 * and Redis restarted from the snapshot. `first` is the key whose check closes the breaker (or, with
 * `breaker: false`, nothing closes: each key's first answer carries), with `burst` checks of each key
 * sent at once beside it. Then each key is checked until refused, in the order `order` gives. Returns what each key admitted in all, and the warnings.
 */
async function behindAfterOutage(o: {
  limit: number;
  saved: readonly number[];
  after: readonly number[];
  outage: readonly number[];
  breaker: boolean;
  first: number;
  order: readonly number[];
  burst?: number;
}) {
  vi.useFakeTimers({ toFake: FAKE, now: 1_800_000_030_000 });
  const store = new SnapshotStore();
  const warnings: Record<string, unknown>[] = [];
  const limiter = createLimiter({
    name: 'behind',
    policies: { algorithm: 'fixed-window', limit: o.limit, windowMs: 600_000 },
    store,
    localShare: 1,
    breaker: o.breaker ? undefined : false,
    clock: () => Date.now(),
    logger: { warn: (w: Record<string, unknown>) => warnings.push(w), error() {} },
  });
  await settle();
  const total = new Map<string, number>(KEYS.map((k) => [k, 0]));
  const add = (k: string, n: number) => total.set(k, (total.get(k) as number) + n);
  for (const [i, k] of KEYS.entries()) add(k, await admitted(limiter, k, o.saved[i] as number));
  store.save(KEYS, Date.now());
  await vi.advanceTimersByTimeAsync(1_000);
  for (const [i, k] of KEYS.entries()) add(k, await admitted(limiter, k, o.after[i] as number));
  store.kill();
  const outage = new Map<string, number>();
  for (const [i, k] of KEYS.entries()) {
    const n = await admitted(limiter, k, o.outage[i] as number);
    outage.set(k, n);
    add(k, n);
  }
  await vi.advanceTimersByTimeAsync(500);
  store.restart(Date.now());
  await settle();
  await vi.advanceTimersByTimeAsync(20);
  // The check that ends the outage (the breaker's probe, or the first answer without one).
  const first = KEYS[o.first] as string;
  const firstCheck = limiter.check(first);
  // And the checks in flight with it: `burst` on each key, sent at once.
  const burst = KEYS.flatMap((k) => Array.from({ length: o.burst ?? 0 }, () => limiter.check(k).then((d) => [k, d] as const)));
  add(first, (await firstCheck).allowed ? 1 : 0);
  for (const [k, d] of await Promise.all(burst)) add(k, d.allowed ? 1 : 0);
  await settle();
  for (const i of o.order) {
    const k = KEYS[i] as string;
    // Until refused a few times in a row.
    let refusals = 0;
    while (refusals < 3) {
      const d = await limiter.check(k);
      if (d.allowed) {
        add(k, 1);
        refusals = 0;
      } else refusals += 1;
      await settle();
    }
  }
  await limiter.close();
  return { total, outage, warnings };
}

describe('a Redis that comes back behind after an outage the failure mode admitted in', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const cases = [
    {
      // Before: k0 150, k1-k3 170 (over by the 20 the server lost: the carry's answer hid it).
      name: 'every key ends at its limit, the outage admissions counted, not only the key whose check closed the breaker (before: 170 on the three others)',
      saved: [40, 40, 40, 40],
      after: [20, 20, 20, 20],
      outage: [24, 24, 24, 24],
      first: 0,
      order: [0, 1, 2, 3],
    },
    {
      // Before: k0 170, k1 155, k2 152 (each over by what the server lost), k3 150.
      name: 'a key that lost less than the outage admitted is charged the loss too (before: the carry hid it, and the key admitted it again)',
      saved: [40, 55, 58, 40],
      after: [20, 5, 2, 20],
      outage: [24, 24, 24, 4],
      first: 3,
      order: [3, 2, 1, 0],
    },
  ];
  for (const { name, ...c } of cases) {
    it(name, async () => {
      const { total, outage, warnings } = await behindAfterOutage({ limit: 150, breaker: true, ...c });
      expect([...outage.values()]).toEqual(c.outage);
      expect(Object.fromEntries(total)).toEqual({ k0: 150, k1: 150, k2: 150, k3: 150 });
      expect(warnings).toContainEqual(expect.objectContaining({ code: 'WRN_RL_BUDGETS_RESTORED', behind: true }));
    });
  }

  it('whatever was lost and admitted, whichever key ends the outage, with a breaker or without, with checks in flight beside it, and in whatever order the keys come back, each ends at its limit (property)', async () => {
    const counts = (min: number) => fc.array(fc.integer({ min, max: 30 }), { minLength: 4, maxLength: 4 });
    await fc.assert(
      fc.asyncProperty(
        counts(1),
        counts(0),
        fc.array(fc.integer({ min: 0, max: 12 }), { minLength: 4, maxLength: 4 }),
        fc.boolean(),
        fc.nat(3),
        fc.shuffledSubarray([0, 1, 2, 3], { minLength: 4, maxLength: 4 }),
        fc.nat(4),
        async (saved, after, outage, breaker, first, order, burst) => {
          const limit = 80;
          const { total } = await behindAfterOutage({ limit, saved, after, outage, breaker, first, order, burst });
          expect(Object.fromEntries(total)).toEqual(Object.fromEntries(KEYS.map((k) => [k, limit])));
          vi.useRealTimers();
        },
      ),
      { numRuns: Number(process.env.RUNS ?? 40) },
    );
  });
});
