import { once } from 'node:events';
import { type AddressInfo, connect, createServer } from 'node:net';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createLimiter } from '../limiter/create-limiter.js';
import { MemoryStore } from '../stores/memory-store.js';
import type { Store, StoreKey, StorePlan, StoreResult } from '../stores/store.js';
import { exporters, histogramCells } from './metric-store.js';
import { registerPrometheusMetrics } from './prometheus.js';

/** A MemoryStore under a kind of its own (so its duration series are its own), which throws while `throwing` is set. */
class SyncStore implements Store {
  throwing = false;
  private readonly inner = new MemoryStore();
  constructor(readonly kind: string) {}
  apply(key: StoreKey, plan: StorePlan, cost: number, now: number): StoreResult | Promise<StoreResult> {
    if (this.throwing) throw new Error('store bug');
    return this.inner.apply(key, plan, cost, now);
  }
  reset(key: string, plan: StorePlan): void {
    this.inner.reset(key, plan);
  }
}

/** How many store calls of `kind` ended with `outcome` in `tollgate.store.duration`. */
function timed(kind: string, outcome: string): number {
  let n = 0;
  for (const cell of histogramCells('storeDuration')) {
    if (cell.labels.storeKind === kind && cell.labels.storeOutcome === outcome) n += cell.count;
  }
  return n;
}

/**
 * A store that answers both ways, as a RedisStore with `localBatch` does: calls in `syncAt` (by their
 * number, from 0) synchronously, as from a batch held in memory; every other call with a promise, as a
 * round trip. `asyncAnswers` counts the promises.
 */
function mixedStore(kind: string, syncAt: (n: number) => boolean, batches: boolean): Store & { asyncAnswers: number } {
  const inner = new MemoryStore();
  let n = 0;
  const store = {
    kind,
    batches,
    asyncAnswers: 0,
    apply: (key: StoreKey, plan: StorePlan, cost: number, now: number): StoreResult | Promise<StoreResult> => {
      const r = inner.apply(key, plan, cost, now);
      if (syncAt(n++)) return r;
      store.asyncAnswers++;
      return Promise.resolve(r);
    },
    reset: (key: string, plan: StorePlan) => inner.reset(key, plan),
  };
  return store;
}

describe('store timer', () => {
  it('times nothing while no exporter is attached, and follows one that attaches and detaches later', async () => {
    expect(exporters.attached).toBe(false);
    const store = new SyncStore('sync-follow');
    // Made before any exporter: the limiter calls the store straight.
    const limiter = createLimiter({ policies: [{ limit: 1_000_000, windowMs: 60_000 }], store, onStoreError: 'closed' });
    for (let i = 0; i < 10; i++) await limiter.check('a');
    expect(timed('sync-follow', 'ok')).toBe(0);

    const unregister = registerPrometheusMetrics({ registry: new Registry() });
    try {
      // The first call is timed (the timer learns that the store is synchronous), then 1 in 1024.
      for (let i = 0; i < 2049; i++) await limiter.check('a');
      expect(timed('sync-follow', 'ok')).toBe(3);
    } finally {
      unregister();
    }
    expect(exporters.attached).toBe(false);
    for (let i = 0; i < 3000; i++) await limiter.check('a');
    expect(timed('sync-follow', 'ok')).toBe(3);
  });

  it('records a timed call that throws as an error; an untimed one leaves nothing for the next call', async () => {
    const unregister = registerPrometheusMetrics({ registry: new Registry() });
    try {
      const store = new SyncStore('sync-throw');
      const limiter = createLimiter({
        policies: [{ limit: 1_000_000, windowMs: 60_000 }],
        store,
        onStoreError: 'open',
        // Every call reaches the store: the default breaker would skip the calls after a failure.
        breaker: false,
        logger: { warn() {}, error() {} },
      });
      // Until the store has answered once, every call is timed.
      store.throwing = true;
      const failed = await limiter.check('a');
      expect(failed.degraded).toBe(true);
      expect(timed('sync-throw', 'error')).toBe(1);
      expect(timed('sync-throw', 'ok')).toBe(0);
      store.throwing = false;
      await limiter.check('a');
      expect(timed('sync-throw', 'ok')).toBe(1);
      // Not timed (1 in 1024 now): the throw is not recorded, and leaves nothing behind for the next timed call.
      store.throwing = true;
      await limiter.check('a');
      store.throwing = false;
      expect(timed('sync-throw', 'error')).toBe(1);
      for (let i = 0; i < 1022; i++) await limiter.check('a');
      expect(timed('sync-throw', 'ok')).toBe(2);
    } finally {
      unregister();
    }
  });

  it.each([
    // A round trip first (nothing held yet), then every other answer from memory.
    { kind: 'mixed-alternate', syncAt: (n: number) => n % 2 === 1, batches: false },
    // A store that says it batches, attached late: its first answers come from memory.
    { kind: 'mixed-batches', syncAt: (n: number) => n < 3 || n % 3 === 0, batches: true },
  ])(
    'times every call of $kind that goes to the network, and records none of its answers from memory',
    async ({ kind, syncAt, batches }) => {
      const unregister = registerPrometheusMetrics({ registry: new Registry() });
      try {
        const store = mixedStore(kind, syncAt, batches);
        const limiter = createLimiter({ policies: [{ limit: 1e9, windowMs: 60_000 }], store, breaker: false });
        for (let i = 0; i < 3_000; i++) await limiter.check('hot');
        expect(store.asyncAnswers).toBeGreaterThan(1_000);
        // Before: an answer from memory set the 1-in-1024 sampling, and was recorded as a store call: 4 and 5
        // calls recorded (answers from memory among them), for 1500 and 1998 round trips.
        expect(timed(kind, 'ok')).toBe(store.asyncAnswers);
      } finally {
        unregister();
      }
    },
  );

  it('records a call still unanswered at storeTimeoutMs as a timeout then, while the store hangs; its late reply adds nothing', async () => {
    const unregister = registerPrometheusMetrics({ registry: new Registry() });
    try {
      const inner = new MemoryStore();
      let answer: (() => void) | undefined;
      const store: Store = {
        kind: 'async-hang',
        apply: (key, plan, cost, now) => {
          const r = inner.apply(key, plan, cost, now);
          return new Promise<StoreResult>((resolve) => {
            answer = () => resolve(r);
          });
        },
        reset: (key, plan) => inner.reset(key, plan),
      };
      const limiter = createLimiter({
        policies: [{ limit: 10, windowMs: 60_000 }],
        store,
        storeTimeoutMs: 20,
        breaker: false,
        logger: { warn() {}, error() {} },
      });
      expect((await limiter.check('a')).degraded).toBe(true);
      await new Promise((r) => setTimeout(r, 10));
      // The store still hangs: the timeout is in the histogram already.
      expect([timed('async-hang', 'timeout'), timed('async-hang', 'ok')]).toEqual([1, 0]);
      answer?.();
      await new Promise((r) => setTimeout(r, 10));
      expect([timed('async-hang', 'timeout'), timed('async-hang', 'ok')]).toEqual([1, 0]);
    } finally {
      unregister();
    }
  });

  it('counts as timeouts the calls the limiter answered without the store, and no others: a burst the store works through in time is all ok', async () => {
    const unregister = registerPrometheusMetrics({ registry: new Registry() });
    try {
      const inner = new MemoryStore();
      const queue: (() => void)[] = [];
      const store: Store = {
        kind: 'async-trickle',
        apply: (key, plan, cost, now) => {
          const r = inner.apply(key, plan, cost, now);
          return new Promise<StoreResult>((resolve) => queue.push(() => resolve(r)));
        },
        reset: (key, plan) => inner.reset(key, plan),
      };
      const limiter = createLimiter({ policies: [{ limit: 1e9, windowMs: 60_000 }], store, storeTimeoutMs: 50, breaker: false });
      const decided = Array.from({ length: 2_000 }, (_, i) => limiter.check(`k${i % 50}`));
      // The store answers in order, 20 replies a millisecond: the last after about 100 ms, more than
      // storeTimeoutMs, but the limiter gives each call time for the calls queued ahead of it.
      const answering = setInterval(() => {
        for (const answer of queue.splice(0, 20)) answer();
      }, 1);
      const decisions = await Promise.all(decided);
      clearInterval(answering);
      const degraded = decisions.filter((d) => d.degraded).length;
      // Before: about 600 timeouts on the metric's own wall-clock timer, for calls the limiter waited for.
      expect([timed('async-trickle', 'timeout'), timed('async-trickle', 'ok')]).toEqual([degraded, 2_000 - degraded]);
      await limiter.close();
    } finally {
      unregister();
    }
  });

  it('a reply that sat in the socket while the loop was blocked is no timeout: the limiter used it', async () => {
    const unregister = registerPrometheusMetrics({ registry: new Registry() });
    // An echo server on loopback: the store's reply comes through the poll phase, as Redis's does.
    const server = createServer((s) => s.on('data', (d) => s.write(d)));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    await once(socket, 'connect');
    try {
      const inner = new MemoryStore();
      const store: Store = {
        kind: 'async-socket',
        apply: (key, plan, cost, now) => {
          const r = inner.apply(key, plan, cost, now);
          return new Promise<StoreResult>((resolve) => {
            socket.once('data', () => resolve(r));
            socket.write('x');
          });
        },
        reset: (key, plan) => inner.reset(key, plan),
      };
      const limiter = createLimiter({ policies: [{ limit: 10, windowMs: 60_000 }], store, storeTimeoutMs: 50, breaker: false });
      const decided = limiter.check('a');
      // 200 ms of synchronous work right after the call: the reply waits in the socket meanwhile.
      const end = performance.now() + 200;
      while (performance.now() < end) {}
      expect((await decided).degraded).toBe(false);
      await new Promise((r) => setTimeout(r, 20));
      // Before: a wall-clock timer fired before the poll phase read the reply, and recorded a timeout.
      expect([timed('async-socket', 'timeout'), timed('async-socket', 'ok')]).toEqual([0, 1]);
      await limiter.close();
    } finally {
      unregister();
      socket.destroy();
      server.close();
    }
  });
});
