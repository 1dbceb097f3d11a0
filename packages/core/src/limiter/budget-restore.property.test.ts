import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../stores/memory-store.js';
import type { ConnectionEvent, Store, StoreKey, StorePlan, StoreResult } from '../stores/store.js';
import { createLimiter } from './create-limiter.js';
import type { Limiter } from './limiter.js';

/** What several processes share: one store's state, its mark (a token) and its ledger of restores. */
class Shared {
  readonly inner = new MemoryStore({ sweepIntervalMs: 0 });
  mark: string | undefined = undefined;
  readonly ledger = new Map<string, number>();
  private tokens = 0;

  newToken(): string {
    this.tokens += 1;
    return `t${this.tokens}`;
  }

  /** Everything gone: a restart without persistence. */
  wipe(): void {
    this.inner.clear();
    this.mark = undefined;
    this.ledger.clear();
  }
}

/** One process's connection to the shared store, as RedisStore behaves: asynchronous, a token mark, a ledger. */
class ProcessStore implements Store {
  readonly kind = 'shared';
  private seen: string | undefined = undefined;
  private readonly listeners = new Set<(event: ConnectionEvent) => void>();

  constructor(private readonly shared: Shared) {}

  apply(key: StoreKey, plan: StorePlan, cost: number, now: number): Promise<StoreResult> {
    return Promise.resolve(Float64Array.from(this.shared.inner.apply(key, plan, cost, now)));
  }

  peek(key: StoreKey, plan: StorePlan, cost: number, now: number): Promise<StoreResult> {
    return Promise.resolve(Float64Array.from(this.shared.inner.peek(key, plan, cost, now)));
  }

  reset(key: string, plan: StorePlan): void {
    this.shared.inner.reset(key, plan);
  }

  watchConnection(listener: (event: ConnectionEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  markAlive(): Promise<boolean> {
    this.shared.mark ??= this.shared.newToken();
    const before = this.seen;
    this.seen = this.shared.mark;
    return Promise.resolve(before !== undefined && before !== this.seen);
  }

  restored(key: string, plan: StorePlan, used: number): Promise<number> {
    const id = `${key}\n${plan.policies[0]?.id}`;
    const before = this.shared.ledger.get(id) ?? 0;
    if (used > before) this.shared.ledger.set(id, used);
    return Promise.resolve(before);
  }

  reconnect(): void {
    for (const l of this.listeners) l('lost');
    for (const l of this.listeners) l('ready');
  }
}

const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0));
};

describe('budgets after a loss, in every process (property)', () => {
  it('after a restart without persistence, each key holds the largest count any process had seen, whatever the processes decided and in whatever order they come back', async () => {
    const op = fc.record({ p: fc.nat(3), key: fc.nat(5), n: fc.integer({ min: 1, max: 4 }) });
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: 4 }), fc.array(op, { minLength: 1, maxLength: 25 }), fc.nat(), async (n, ops, turn) => {
        const shared = new Shared();
        const stores = Array.from({ length: n }, () => new ProcessStore(shared));
        const limiters: Limiter[] = stores.map((store) =>
          createLimiter({
            name: 'prop',
            policies: { algorithm: 'fixed-window', limit: 10, windowMs: 60_000 },
            store,
            clock: () => 1_000,
            logger: { warn() {}, error() {} },
          }),
        );
        await settle();
        // What each key had used by the view of each process (its last answer), and at most.
        const largest = new Map<string, number>();
        for (const { p, key, n: times } of ops) {
          const limiter = limiters[p % n] as Limiter;
          for (let i = 0; i < times; i++) {
            const d = await limiter.check(`k${key}`);
            largest.set(`k${key}`, Math.max(largest.get(`k${key}`) ?? 0, 10 - d.remaining));
          }
        }
        shared.wipe();
        // The processes come back in some order, one at a time.
        for (let i = 0; i < n; i++) {
          (stores[(i + turn) % n] as ProcessStore).reconnect();
          await settle();
        }
        for (const [key, used] of largest) expect([key, (await (limiters[0] as Limiter).peek(key)).remaining]).toEqual([key, 10 - used]);
        await Promise.all(limiters.map((l) => l.close()));
      }),
      { numRuns: 60 },
    );
  });
});
