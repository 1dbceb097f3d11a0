import { afterEach, describe, expect, it, vi } from 'vitest';
import { formatLine, type LogFields } from '../logging.js';
import { MemoryStore } from '../stores/memory-store.js';
import type { Store, StoreKey, StorePlan, StoreResult } from '../stores/store.js';
import { unhandledDuring } from '../testing/unhandled.js';
import type { AnyPolicyOptions, Decision, Logger } from '../types.js';
import { createLimiter, type LimiterEvents } from './create-limiter.js';

/** A store whose behaviour the test switches: healthy (a real MemoryStore), throwing, rejecting or hanging. */
class FlakyStore implements Store {
  readonly kind = 'flaky';
  mode: 'ok' | 'throw' | 'reject' | 'hang' | 'late-reject' | 'slow' | 'slow-run' | 'slow-junk' | 'junk' | 'junk-now' = 'ok';
  /** 'junk' (resolved) and 'junk-now' (returned): what a buggy custom store answers instead of a result. */
  junk: unknown = undefined;
  /** 'slow': answers this many ms after the call, from a timer. */
  delayMs = 0;
  calls = 0;
  private readonly inner = new MemoryStore({ sweepIntervalMs: 0 });
  pending: Array<(error: Error) => void> = [];

  apply(key: string, plan: StorePlan, cost: number, now: number, lease?: number): StoreResult | Promise<StoreResult> {
    this.calls += 1;
    switch (this.mode) {
      case 'ok':
        return Promise.resolve(Float64Array.from(this.inner.apply(key, plan, cost, now, lease)));
      case 'throw':
        throw new Error('connection refused');
      case 'reject':
        return Promise.reject(new Error('connection reset'));
      case 'hang':
        return new Promise<StoreResult>(() => {});
      case 'late-reject':
        return new Promise<StoreResult>((_, reject) => this.pending.push(reject));
      case 'junk':
        return Promise.resolve(this.junk as StoreResult);
      case 'junk-now':
        return this.junk as StoreResult;
      case 'slow-junk': {
        // A buggy custom store: resolves `undefined` instead of a result, after `delayMs`.
        const delay = this.delayMs;
        return new Promise<StoreResult>((resolve) => setTimeout(() => resolve(undefined as unknown as StoreResult), delay));
      }
      case 'slow-run': {
        // Runs only after `delayMs`, as a command a Cluster client sends again runs after calls sent later.
        const delay = this.delayMs;
        return new Promise<StoreResult>((resolve) =>
          setTimeout(() => resolve(Float64Array.from(this.inner.apply(key, plan, cost, now, lease))), delay),
        );
      }
      case 'slow': {
        const result = Float64Array.from(this.inner.apply(key, plan, cost, now, lease));
        const delay = this.delayMs;
        return new Promise<StoreResult>((resolve) => setTimeout(() => resolve(result), delay));
      }
    }
  }

  reset(key: string, plan: StorePlan): void | Promise<void> {
    if (this.mode === 'hang') return new Promise<void>(() => {});
    this.inner.reset(key, plan);
  }

  release(key: string, plan: StorePlan, lease: number, now: number): void {
    this.inner.release(key, plan, lease, now);
  }

  renew(key: string, plan: StorePlan, lease: number, now: number): boolean {
    return this.inner.renew(key, plan, lease, now);
  }

  refunds = 0;
  refund(key: string, plan: StorePlan, cost: number, marks: readonly number[], now: number): Promise<ArrayLike<number>> {
    this.refunds += 1;
    return Promise.resolve(this.inner.refund(key, plan, cost, marks, now));
  }
}

/** A store of two nodes (keys `a:*` on node-a, the rest on node-b) that knows whose fault an error is. */
class ScopedStore implements Store {
  readonly kind = 'scoped';
  readonly corrupt = new Set<string>();
  readonly down = new Set<string>();
  private readonly inner = new MemoryStore({ sweepIntervalMs: 0 });

  nodeOf(key: string): string {
    return key.startsWith('a:') ? 'node-a' : 'node-b';
  }

  errorScope(error: unknown): 'key' | 'node' {
    return error instanceof Error && error.message.startsWith('WRONGTYPE') ? 'key' : 'node';
  }

  apply(key: StoreKey, plan: StorePlan, cost: number, now: number): Promise<StoreResult> {
    const keys = typeof key === 'string' ? [key] : key;
    if (keys.some((k) => this.corrupt.has(k)))
      return Promise.reject(new Error('WRONGTYPE Operation against a key holding the wrong kind of value'));
    if (keys.some((k) => this.down.has(this.nodeOf(k)))) return Promise.reject(new Error('connection reset'));
    return Promise.resolve(Float64Array.from(this.inner.apply(key, plan, cost, now)));
  }

  reset(key: string, plan: StorePlan): void {
    this.inner.reset(key, plan);
  }
}

/** A store still connecting when the limiter is created; `ready()` connects it. */
class StartingStore extends FlakyStore {
  override calls = 0;
  waits = 0;
  private connected = false;
  private resolveReady: (() => void) | undefined;

  whenReady(): Promise<void> | undefined {
    if (this.connected) return undefined;
    this.waits += 1;
    return new Promise((resolve) => {
      this.resolveReady = resolve;
    });
  }

  ready(): void {
    this.connected = true;
    this.resolveReady?.();
  }

  override apply(key: string, plan: StorePlan, cost: number, now: number): StoreResult | Promise<StoreResult> {
    if (!this.connected) return Promise.reject(new Error('not connected'));
    return super.apply(key, plan, cost, now);
  }
}

/** Timers and `performance.now()` in virtual time (the watchdog measures with both). */
const FAKE: NonNullable<Parameters<typeof vi.useFakeTimers>[0]>['toFake'] = [
  'setTimeout',
  'clearTimeout',
  'setInterval',
  'clearInterval',
  'setImmediate',
  'clearImmediate',
  'performance',
];

function recordingLogger(): Logger & { warnings: string[]; errors: string[] } {
  const warnings: string[] = [];
  const errors: string[] = [];
  return {
    warnings,
    errors,
    warn: (fields: LogFields, m: string) => warnings.push(formatLine(fields, m)),
    error: (fields: LogFields, m: string) => errors.push(formatLine(fields, m)),
  };
}

const policies = [{ name: 'minute', algorithm: 'fixed-window' as const, limit: 10, windowMs: 60_000 }];

afterEach(() => {
  vi.useRealTimers();
});

describe('failure mode', () => {
  it("'open' admits, marks the decision degraded, logs once per outage and emits store-error", async () => {
    const store = new FlakyStore();
    const logger = recordingLogger();
    let t = 0;
    const limiter = createLimiter({ policies, store, logger, onStoreError: 'open', breaker: false, clock: () => t });
    const events: LimiterEvents['store-error'][] = [];
    limiter.on('store-error', (e) => events.push(e));
    store.mode = 'reject';
    for (let i = 0; i < 3; i++) {
      const d = await limiter.check('k');
      expect(d).toMatchObject({ allowed: true, limited: false, degraded: true, reason: 'store-error', policy: 'minute' });
    }
    expect(events).toHaveLength(3);
    expect(events[0]?.key).toBe('k');
    expect(logger.errors).toHaveLength(1);
    store.mode = 'ok';
    const healthy = await limiter.check('k');
    expect(healthy).toMatchObject({ allowed: true, degraded: false, reason: 'allowed', remaining: 9 });
    store.mode = 'throw';
    await limiter.check('k');
    // Failing again within a second of answering in time: the same outage going on (a store whose replies
    // trickle, some in time, is one outage), neither counted nor logged again.
    expect(limiter.stats()).toMatchObject({ storeErrors: 4, outages: 1 });
    store.mode = 'ok';
    await limiter.check('k');
    t = 1_000;
    store.mode = 'throw';
    await limiter.check('k');
    // A second outage within 10 s of the first line is counted, not logged (a flapping store writes one line per 10 s).
    expect(logger.errors).toHaveLength(1);
    expect(limiter.stats()).toMatchObject({ storeErrors: 5, outages: 2 });
  });

  it("'closed' refuses with reason store-error (not a quota verdict), and shadow mode still lets it pass", async () => {
    const store = new FlakyStore();
    store.mode = 'throw';
    const closed = createLimiter({ policies, store, onStoreError: 'closed', breaker: false, logger: recordingLogger() });
    const d = await closed.check('k');
    expect(d).toMatchObject({ allowed: false, limited: false, degraded: true, reason: 'store-error' });
    expect(d.retryAfterMs).toBeGreaterThanOrEqual(1000);
    const shadow = createLimiter({
      name: 'shadow',
      policies,
      store,
      onStoreError: 'closed',
      mode: 'shadow',
      breaker: false,
      logger: recordingLogger(),
    });
    expect(await shadow.check('k')).toMatchObject({ allowed: true, reason: 'store-error', degraded: true });
  });

  it("'local' falls back to an in-process limiter holding localShare of each limit", async () => {
    const store = new FlakyStore();
    store.mode = 'reject';
    const limiter = createLimiter({
      policies,
      store,
      onStoreError: 'local',
      localShare: 0.3,
      breaker: false,
      logger: recordingLogger(),
      clock: () => 1_000,
    });
    const seen: boolean[] = [];
    for (let i = 0; i < 5; i++) {
      const d = await limiter.check('k');
      expect(d.degraded).toBe(true);
      seen.push(d.allowed);
    }
    expect(seen).toEqual([true, true, true, false, false]);
    const last = await limiter.check('k');
    expect(last).toMatchObject({ reason: 'limited', limited: true });
    expect(last.policies[0]?.limit).toBe(3);
  });

  it('a cost above capacity stays cost-exceeds-capacity even when the store is down', async () => {
    const store = new FlakyStore();
    store.mode = 'throw';
    const limiter = createLimiter({ policies, store, onStoreError: 'open', breaker: false, logger: recordingLogger() });
    expect(await limiter.check('k', { cost: 11 })).toMatchObject({ allowed: false, reason: 'cost-exceeds-capacity', retryAfterMs: 0 });
  });

  it('fails a silent node after storeTimeoutMs of silence, answering every call in flight as one outage', async () => {
    vi.useFakeTimers({ toFake: FAKE });
    const store = new FlakyStore();
    store.mode = 'hang';
    const logger = recordingLogger();
    const limiter = createLimiter({ policies, store, storeTimeoutMs: 30, onStoreError: 'open', logger });
    const errors: LimiterEvents['store-error'][] = [];
    limiter.on('store-error', (e) => errors.push(e));
    const pending = Array.from({ length: 32 }, () => limiter.check('k'));
    await vi.advanceTimersByTimeAsync(24);
    expect(errors).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(20);
    const ds = await Promise.all(pending);
    for (const d of ds) expect(d).toMatchObject({ allowed: true, degraded: true, reason: 'store-error' });
    expect(errors).toHaveLength(32);
    expect(errors[0]).toMatchObject({ scope: 'node', node: 'store' });
    expect(String(errors[0]?.error)).toContain('ERR_RL_STORE_TIMEOUT');
    // 32 calls in flight, one outage: one log line (it says the breaker opens), one breaker opening.
    expect(limiter.stats()).toMatchObject({ storeErrors: 32, outages: 1 });
    expect(logger.errors).toHaveLength(1);
    expect(logger.warnings).toEqual([]);
  });

  it('on() refuses an event the limiter does not emit, or a listener that is no function, with ERR_RL_INVALID_EVENT', () => {
    const limiter = createLimiter({ policies, store: new FlakyStore() });
    for (const [event, listener] of [
      ['decision', () => {}],
      ['Breaker', () => {}],
      ['toString', () => {}],
      ['breaker', 'log'],
    ] as const) {
      const subscribe = () => limiter.on(event as keyof LimiterEvents, listener as () => void);
      expect(subscribe).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_RL_INVALID_EVENT' }));
    }
    expect(typeof limiter.on('breaker', () => {})).toBe('function');
  });

  it('an async event listener that rejects is logged as one that throws, never an unhandled rejection', async () => {
    const unhandled = await unhandledDuring(async () => {
      const store = new FlakyStore();
      store.mode = 'reject';
      const logger = recordingLogger();
      const limiter = createLimiter({ policies, store, onStoreError: 'open', breaker: false, logger });
      limiter.on('store-error', async () => {
        throw new Error('alerting down');
      });
      expect(await limiter.check('k')).toMatchObject({ allowed: true, degraded: true });
      await new Promise((r) => setImmediate(r));
      expect(logger.errors.filter((e) => e.startsWith('ERR_RL_LISTENER_THREW: an event listener threw or rejected'))).toHaveLength(1);
    });
    expect(unhandled).toEqual([]);
  });

  it('a check in flight when its limiter closes is still answered in time, by the failure mode', async () => {
    vi.useFakeTimers({ toFake: FAKE });
    const store = new FlakyStore();
    store.mode = 'hang';
    const limiter = createLimiter({ policies, store, storeTimeoutMs: 30, onStoreError: 'closed', logger: recordingLogger() });
    let answered: Decision | undefined;
    void limiter.check('k').then((d) => {
      answered = d;
    });
    await limiter.close();
    await vi.advanceTimersByTimeAsync(60);
    expect(answered).toMatchObject({ allowed: false, degraded: true, reason: 'store-error' });
  });

  it('limiter.reset on a silent store rejects with ERR_RL_STORE_TIMEOUT, as a check would be answered', async () => {
    vi.useFakeTimers({ toFake: FAKE });
    const store = new FlakyStore();
    store.mode = 'hang';
    const limiter = createLimiter({ policies, store, storeTimeoutMs: 30, onStoreError: 'open', logger: recordingLogger() });
    const outcome = limiter.reset('k').then(
      () => 'resolved',
      (error: unknown) => String(error),
    );
    await vi.advanceTimersByTimeAsync(60);
    expect(await Promise.race([outcome, Promise.resolve('pending')])).toContain('ERR_RL_STORE_TIMEOUT');
  });

  it('a pipeline still draining (replies keep arriving) is never a timeout, however late the last reply', async () => {
    vi.useFakeTimers({ toFake: FAKE });
    const store = new FlakyStore();
    store.mode = 'slow';
    const limiter = createLimiter({ policies: [{ limit: 100, windowMs: 60_000 }], store, storeTimeoutMs: 30, logger: recordingLogger() });
    const pending: Promise<Decision>[] = [];
    // Twenty calls answered 20 ms apart: the last one waits 400 ms, but the node is never silent for 30 ms.
    for (let i = 1; i <= 20; i++) {
      store.delayMs = i * 20;
      pending.push(limiter.check('k'));
    }
    await vi.advanceTimersByTimeAsync(450);
    const ds = await Promise.all(pending);
    expect(ds.filter((d) => d.degraded)).toHaveLength(0);
    expect(ds.at(-1)?.remaining).toBe(80);
  });

  it('time the event loop was blocked does not count as silence: the verdict waits for the poll phase', async () => {
    const store = new FlakyStore();
    store.mode = 'slow';
    store.delayMs = 5;
    const limiter = createLimiter({ policies, store, storeTimeoutMs: 20, logger: recordingLogger() });
    let degraded = 0;
    for (let round = 0; round < 5; round++) {
      const pending = limiter.check(`k${round}`);
      // Block this process for 60 ms, three times the timeout, while the reply is due after 5 ms.
      const until = performance.now() + 60;
      while (performance.now() < until) {
        // busy: no timer, no I/O can run
      }
      if ((await pending).degraded) degraded += 1;
    }
    expect(degraded).toBe(0);
  });

  it('a store that rejects after the watchdog answered leaves no unhandled rejection', async () => {
    vi.useFakeTimers({ toFake: FAKE });
    const store = new FlakyStore();
    store.mode = 'late-reject';
    const limiter = createLimiter({ policies, store, storeTimeoutMs: 10, logger: recordingLogger() });
    const pending = limiter.check('k');
    await vi.advanceTimersByTimeAsync(20);
    expect((await pending).degraded).toBe(true);
    for (const reject of store.pending) reject(new Error('too late'));
    await vi.advanceTimersByTimeAsync(1);
  });

  it('a late reply proves the node alive but not quick: the next check probes at once, and only a timely reply closes the breaker', async () => {
    vi.useFakeTimers({ toFake: FAKE });
    const store = new FlakyStore();
    store.mode = 'slow';
    store.delayMs = 40;
    const states: string[] = [];
    // A clock in the middle of a minute: on the wall clock the fixed window could roll over between the
    // late call and the probe (a run that crossed a minute boundary saw remaining 9).
    const limiter = createLimiter({
      policies,
      store,
      storeTimeoutMs: 10,
      breaker: { cooldownMs: 1_000 },
      logger: recordingLogger(),
      clock: () => 1_800_000_030_000,
    });
    limiter.on('breaker', (e) => states.push(e.state));
    const late = limiter.check('k');
    await vi.advanceTimersByTimeAsync(20);
    expect((await late).degraded).toBe(true);
    expect(states).toEqual(['open']);
    // The late reply (at 40 ms) closes nothing: a node that answers every call 40 ms late stays open.
    await vi.advanceTimersByTimeAsync(25);
    expect(states).toEqual(['open']);
    store.mode = 'ok';
    // But the next check is a probe at once (not after a doubled wait), and its timely reply closes it.
    // The late call was charged when it reached the store: 10 - 2.
    expect(await limiter.check('k')).toMatchObject({ degraded: false, remaining: 8 });
    expect(states).toEqual(['open', 'half-open', 'closed']);
  });

  /**
   * A check on a store that answers 40 ms late (storeTimeoutMs 10) under `onStoreError`; then the store
   * answers at once again. `mode` 'slow-junk': the late answer is `undefined`, not a result.
   */
  async function lateReply(
    plan: readonly AnyPolicyOptions[],
    onStoreError: 'closed' | 'open',
    mode: 'slow' | 'slow-run' | 'slow-junk' = 'slow',
  ) {
    const store = new FlakyStore();
    store.mode = mode;
    store.delayMs = 40;
    const limiter = createLimiter({
      policies: plan,
      store,
      onStoreError,
      storeTimeoutMs: 10,
      breaker: false,
      logger: recordingLogger(),
      clock: () => 1_800_000_030_000,
    });
    const late = limiter.check('k');
    await vi.advanceTimersByTimeAsync(20);
    expect(await late, onStoreError).toMatchObject({ degraded: true, allowed: onStoreError === 'open' });
    // The reply comes at 40 ms, charged: a refusal charges nothing, so it goes back; an admission ran.
    await vi.advanceTimersByTimeAsync(30);
    store.mode = 'ok';
    return { store, limiter };
  }

  it("a late reply that charged a request the failure mode refused gives the charge back ('closed'); an admitted one keeps it ('open')", async () => {
    vi.useFakeTimers({ toFake: FAKE });
    for (const [onStoreError, remaining, refunds] of [
      ['closed', 9, 1],
      ['open', 8, 0],
    ] as const) {
      const { store, limiter } = await lateReply(policies, onStoreError);
      expect(await limiter.check('k'), onStoreError).toMatchObject({ degraded: false, remaining });
      expect(store.refunds, onStoreError).toBe(refunds);
      await limiter.close();
    }
  });

  it('a late reply that is no result (a custom store resolving undefined) is dropped: nothing thrown, nothing unhandled', async () => {
    vi.useFakeTimers({ toFake: FAKE });
    const leased = [...policies, { name: 'running', algorithm: 'concurrency' as const, limit: 1, leaseMs: 60_000 }];
    for (const plan of [policies, leased]) {
      const unhandled: unknown[] = [];
      const record = (reason: unknown) => unhandled.push(reason);
      process.on('unhandledRejection', record);
      try {
        // The junk comes after the failure mode refused: giving its "charge" back must not throw.
        const { limiter } = await lateReply(plan, 'closed', 'slow-junk');
        vi.useRealTimers();
        await new Promise((r) => setImmediate(r));
        vi.useFakeTimers({ toFake: FAKE });
        expect(await limiter.check('k')).toMatchObject({ degraded: false });
        await limiter.close();
      } finally {
        process.off('unhandledRejection', record);
      }
      // main before: TypeError in marksOf, unhandled (it ends a Node process).
      expect(unhandled).toEqual([]);
    }
  });

  it("'local': a request the failure mode admitted and the store ran late is not charged to the store again when it answers", async () => {
    vi.useFakeTimers({ toFake: FAKE });
    const store = new FlakyStore();
    store.mode = 'slow';
    store.delayMs = 40;
    const limiter = createLimiter({
      policies: [{ algorithm: 'fixed-window', limit: 10, windowMs: 60_000 }],
      store,
      storeTimeoutMs: 10,
      breaker: false,
      logger: recordingLogger(),
      clock: () => 1_800_000_030_000,
    });
    let admitted = 0;
    for (let i = 0; i < 4; i++) {
      const d = limiter.check('k');
      await vi.advanceTimersByTimeAsync(50);
      if ((await d).allowed) admitted += 1;
    }
    store.mode = 'ok';
    for (let i = 0; i < 20; i++) if ((await limiter.check('k')).allowed) admitted += 1;
    await vi.advanceTimersByTimeAsync(10);
    // The store ran the 4 itself (late): owing them too charged each twice (6 of 10 before).
    expect(admitted).toBe(10);
    await limiter.close();
  });

  it('a lease whose call runs after the failure mode gave it up (a Cluster client sends it again) is released again once the call settles', async () => {
    vi.useFakeTimers({ toFake: FAKE });
    const leased = [{ name: 'running', algorithm: 'concurrency' as const, limit: 1, leaseMs: 60_000 }];
    const { store, limiter } = await lateReply(leased, 'closed', 'slow-run');
    // The give-back went at 10 ms, before the call ran at 40 ms and took the lease; the second, after it,
    // ends it. Before: the slot stayed taken by no request for leaseMs (a minute).
    expect(store.calls).toBe(1);
    expect(await limiter.check('k')).toMatchObject({ allowed: true, degraded: false });
    await limiter.close();
  });

  it("a plan with a concurrency policy: a late reply's rate charge goes back when the failure mode refused; its lease is given up either way", async () => {
    vi.useFakeTimers({ toFake: FAKE });
    const leased = [...policies, { name: 'running', algorithm: 'concurrency' as const, limit: 1, leaseMs: 60_000 }];
    for (const [onStoreError, remaining, refunds] of [
      ['closed', 9, 1],
      ['open', 8, 0],
    ] as const) {
      const { store, limiter } = await lateReply(leased, onStoreError);
      // The late lease was released (the limit of 1 admits the next); the minute's charge went back when refused.
      const next = await limiter.check('k');
      expect(next, onStoreError).toMatchObject({ allowed: true, degraded: false });
      expect(next.policies.find((p) => p.name === 'minute')?.remaining, onStoreError).toBe(remaining);
      expect(store.refunds, onStoreError).toBe(refunds);
      next.release?.();
      await limiter.close();
    }
  });

  it('errors of one key answer that key only: other keys stay exact and the node stays healthy', async () => {
    const store = new ScopedStore();
    store.corrupt.add('hot');
    const logger = recordingLogger();
    const limiter = createLimiter({ policies, store, logger, clock: () => 0 });
    const events: LimiterEvents['store-error'][] = [];
    const states: string[] = [];
    limiter.on('store-error', (e) => events.push(e));
    limiter.on('breaker', (e) => states.push(e.state));
    for (let i = 0; i < 50; i++) {
      expect((await limiter.check('hot')).degraded).toBe(true);
      const d = await limiter.check(`user${i % 5}`);
      expect(d.degraded).toBe(false);
    }
    // Each healthy key had exactly its 10: the 11th is refused by the store, not degraded.
    for (let u = 0; u < 5; u++) expect(await limiter.check(`user${u}`)).toMatchObject({ allowed: false, degraded: false, remaining: 0 });
    expect(states).toEqual([]);
    expect(limiter.stats()).toMatchObject({ storeErrors: 50, outages: 0 });
    expect(events.every((e) => e.scope === 'key' && e.key === 'hot')).toBe(true);
    // One line, not 50: key errors are logged at most once per 10 s.
    expect(logger.errors.filter((e) => e.startsWith('ERR_RL_STORE_KEY_FAILED'))).toHaveLength(1);
  });

  it('a decision over keys on two nodes charges a failure to both together, never to the healthy one alone', async () => {
    const store = new ScopedStore();
    store.down.add('node-b');
    const two = [
      { name: 'pa', algorithm: 'fixed-window' as const, limit: 10, windowMs: 60_000 },
      { name: 'pb', algorithm: 'fixed-window' as const, limit: 5, windowMs: 60_000 },
    ];
    const limiter = createLimiter({ policies: two, store, logger: recordingLogger(), onStoreError: 'closed', clock: () => 0 });
    const events: LimiterEvents['store-error'][] = [];
    limiter.on('store-error', (e) => events.push(e));
    for (let i = 0; i < 5; i++) {
      // pa's key is on the healthy node-a, pb's on node-b, which is down: the decision fails.
      expect(await limiter.check({ pa: 'a:x', pb: 'b:y' })).toMatchObject({ degraded: true, allowed: false });
      // node-a's own keys stay exact: its breaker never opened.
      expect(await limiter.check(`a:user${i}`)).toMatchObject({ degraded: false, allowed: true });
    }
    expect(events.map((e) => e.node)).toEqual(Array.from({ length: events.length }, () => 'node-a+node-b'));
    expect(events.length).toBeGreaterThan(0);
  });

  it('health is per node: a node that fails degrades only the keys it serves', async () => {
    let t = 0;
    const store = new ScopedStore();
    store.down.add('node-b');
    const limiter = createLimiter({ policies, store, logger: recordingLogger(), onStoreError: 'closed', clock: () => t });
    const states: LimiterEvents['breaker'][] = [];
    limiter.on('breaker', (e) => states.push(e));
    for (let i = 0; i < 20; i++) {
      t += 1;
      expect((await limiter.check(`a:${i % 3}`)).degraded).toBe(false);
      expect((await limiter.check(`b:${i % 3}`)).degraded).toBe(true);
    }
    expect(states[0]).toEqual({ state: 'open', node: 'node-b' });
    expect(states.every((s) => s.node === 'node-b')).toBe(true);
    store.down.clear();
    t += 10;
    expect((await limiter.check('b:0')).degraded).toBe(false);
    expect(states.at(-1)).toEqual({ state: 'closed', node: 'node-b' });
  });

  it('an open node is probed 10 ms later, again every 10 ms while probes fail fast, doubling only while they hang', async () => {
    vi.useFakeTimers({ toFake: FAKE });
    let t = 0;
    const store = new FlakyStore();
    const limiter = createLimiter({
      policies,
      store,
      storeTimeoutMs: 20,
      logger: recordingLogger(),
      breaker: { cooldownMs: 35 },
      clock: () => t,
    });
    const states: string[] = [];
    limiter.on('breaker', (e) => states.push(e.state));
    store.mode = 'reject';
    await limiter.check('k');
    expect(store.calls).toBe(1);
    t = 9;
    await limiter.check('k');
    expect(store.calls).toBe(1);
    t = 10;
    await limiter.check('k');
    expect(store.calls).toBe(2);
    t = 19;
    await limiter.check('k');
    expect(store.calls).toBe(2);
    t = 20;
    // This probe hangs: the watchdog gives up on it, and the next wait doubles.
    store.mode = 'hang';
    const hung = limiter.check('k');
    expect((await limiter.check('k')).degraded).toBe(true);
    expect(store.calls).toBe(3);
    await vi.advanceTimersByTimeAsync(50);
    expect((await hung).degraded).toBe(true);
    t = 39;
    await limiter.check('k');
    expect(store.calls).toBe(3);
    t = 40;
    const hung2 = limiter.check('k');
    await vi.advanceTimersByTimeAsync(50);
    await hung2;
    expect(store.calls).toBe(4);
    // 40 would be the doubled wait; cooldownMs caps it at 35.
    t = 74;
    await limiter.check('k');
    expect(store.calls).toBe(4);
    t = 75;
    store.mode = 'ok';
    expect(await limiter.check('k')).toMatchObject({ degraded: false, reason: 'allowed' });
    expect(states).toEqual(['open', 'half-open', 'open', 'half-open', 'open', 'half-open', 'open', 'half-open', 'closed']);
    expect(limiter.stats().outages).toBe(1);
  });

  it('a store that batches (localBatch) answering hot keys while its node is down: one outage, one line, however often its answers close the breaker', async () => {
    let t = 0;
    const inner = new MemoryStore({ sweepIntervalMs: 0 });
    let down = true;
    // RedisStore `localBatch`: hot keys answered at once from a batch in hand, the rest by the node.
    const store: Store = {
      kind: 'batching',
      batches: true,
      apply(key: StoreKey, plan: StorePlan, cost: number, now: number) {
        if (typeof key === 'string' && key.startsWith('hot')) return inner.apply(key, plan, cost, now);
        if (down) return Promise.reject(new Error('connection reset'));
        return Promise.resolve(Float64Array.from(inner.apply(key, plan, cost, now)));
      },
      reset: (key: string, plan: StorePlan) => inner.reset(key, plan),
    };
    const logger = recordingLogger();
    const limiter = createLimiter({ policies, store, logger, clock: () => t });
    expect((await limiter.check('cold')).degraded).toBe(true);
    for (t = 10; t <= 500; t += 10) {
      // A batch answer takes the probe and closes the breaker; the next check on a key the node serves
      // fails: the same outage going on (before: one outage per batch answer, 13 to 19 for a 1 s kill).
      expect((await limiter.check('hot')).degraded).toBe(false);
      expect((await limiter.check('cold')).degraded).toBe(true);
    }
    expect(limiter.stats().outages).toBe(1);
    expect(logger.errors).toHaveLength(1);
    down = false;
    t = 2_000;
    expect((await limiter.check('cold')).degraded).toBe(false);
    expect(limiter.stats().outages).toBe(1);
  });

  it('an outage that goes on (a node failing again within a second of answering) is one outage and one WRN_RL_BREAKER_CLOSED', async () => {
    let t = 0;
    const store = new FlakyStore();
    const logger = recordingLogger();
    const limiter = createLimiter({ policies, store, logger, clock: () => t });
    store.mode = 'reject';
    await limiter.check('k');
    // Flapping for 12 s: a reply in time every 300 ms, failures between.
    for (t = 10_000; t < 12_000; t += 300) {
      store.mode = 'ok';
      expect((await limiter.check('k')).degraded).toBe(false);
      store.mode = 'reject';
      t += 100;
      expect((await limiter.check('k')).degraded).toBe(true);
    }
    expect(limiter.stats().outages).toBe(1);
    expect(logger.errors).toHaveLength(1);
    expect(logger.warnings.filter((w) => w.includes('WRN_RL_BREAKER_CLOSED'))).toHaveLength(1);
    // A second outage, 1.5 s after the node answered: counted, and its end (after 10 s) said again.
    store.mode = 'ok';
    await limiter.check('k');
    t += 1_500;
    store.mode = 'reject';
    await limiter.check('k');
    expect(limiter.stats().outages).toBe(2);
    t += 10_500;
    store.mode = 'ok';
    await limiter.check('k');
    expect(logger.warnings.filter((w) => w.includes('WRN_RL_BREAKER_CLOSED'))).toHaveLength(2);
  });

  it('breaker: false calls the store every time; failureThreshold counts outage events, not calls', async () => {
    const store = new FlakyStore();
    store.mode = 'reject';
    const off = createLimiter({ policies, store, breaker: false, logger: recordingLogger() });
    for (let i = 0; i < 5; i++) await off.check('k');
    expect(store.calls).toBe(5);
    const counted = new FlakyStore();
    counted.mode = 'late-reject';
    const states: string[] = [];
    const three = createLimiter({ policies, store: counted, breaker: { failureThreshold: 3 }, logger: recordingLogger() });
    three.on('breaker', (e) => states.push(e.state));
    // Ten calls in flight failing together: one event.
    const pending = Array.from({ length: 10 }, () => three.check('k'));
    for (const reject of counted.pending.splice(0)) reject(new Error('connection reset'));
    await Promise.all(pending);
    expect(states).toEqual([]);
    for (let i = 0; i < 2; i++) {
      const p = three.check('k');
      for (const reject of counted.pending.splice(0)) reject(new Error('connection reset'));
      await p;
    }
    expect(states).toEqual(['open']);
  });

  it('waits for a store that is still connecting at startup, and answers from the store', async () => {
    const store = new StartingStore();
    // Mid-minute: on the wall clock the fixed window could roll over between the two checks.
    const limiter = createLimiter({ policies, store, logger: recordingLogger(), clock: () => 1_800_000_030_000 });
    const first = limiter.check('k');
    await new Promise((r) => setTimeout(r, 20));
    expect(store.calls).toBe(0);
    store.ready();
    expect(await first).toMatchObject({ degraded: false, remaining: 9 });
    expect(store.waits).toBe(1);
    expect((await limiter.check('k')).remaining).toBe(8);
  });

  it("defaults to 'local': a failing store never switches limiting off", async () => {
    const store = new FlakyStore();
    store.mode = 'reject';
    const limiter = createLimiter({ policies: { limit: 2, windowMs: 60_000 }, store, logger: recordingLogger() });
    const allowed = [];
    for (let i = 0; i < 4; i++) allowed.push((await limiter.check('k')).allowed);
    expect(allowed).toEqual([true, true, false, false]);
  });
});

describe('a store that answers junk on time (a custom store bug)', () => {
  const plans: Record<string, AnyPolicyOptions[]> = {
    rate: [{ name: 'minute', limit: 100, windowMs: 60_000 }],
    'rate and concurrency': [
      { name: 'minute', limit: 100, windowMs: 60_000 },
      { name: 'running', algorithm: 'concurrency', limit: 100 },
    ],
  };
  for (const [name, policies] of Object.entries(plans)) {
    for (const mode of ['junk', 'junk-now'] as const) {
      it(`${name}, ${mode === 'junk' ? 'resolved' : 'returned'}: the failure mode answers, the node stays healthy, the error is coded`, async () => {
        const store = new FlakyStore();
        const logger = recordingLogger();
        const limiter = createLimiter({ policies, store, onStoreError: 'closed', logger });
        const events: LimiterEvents['store-error'][] = [];
        limiter.on('store-error', (e) => events.push(e));
        for (const junk of [undefined, null, {}, [1, 2], 'OK', 42]) {
          store.mode = mode;
          store.junk = junk;
          // Before: check() rejected with a TypeError, and the adapters let the request through undecided.
          const d = await limiter.check('k');
          expect(d).toMatchObject({ allowed: false, degraded: true, reason: 'store-error' });
          // The node answered: its breaker stays closed, the next real answer is the store's.
          store.mode = 'ok';
          expect(await limiter.check('k')).toMatchObject({ allowed: true, degraded: false });
        }
        expect(events).toHaveLength(6);
        expect(events.every((e) => e.scope === 'key' && (e.error as { code?: string }).code === 'ERR_RL_STORE_RESULT')).toBe(true);
        expect(String((events[0]?.error as Error | undefined)?.message)).toContain(
          "the 'flaky' store answered undefined, not a result of at least",
        );
        expect(logger.errors).toHaveLength(1);
        expect(logger.errors[0]).toContain('ERR_RL_STORE_KEY_FAILED');
        expect(logger.errors[0]).toContain('ERR_RL_STORE_RESULT');
        await limiter.close();
      });
    }
  }

  it('peek and refund reject with the coded error, not a TypeError', async () => {
    const store = new FlakyStore();
    const limiter = createLimiter({ policies: { limit: 5, windowMs: 60_000 }, store, logger: recordingLogger() });
    const d = await limiter.check('k');
    Object.assign(store, { peek: () => Promise.resolve(undefined), refund: () => Promise.resolve({}) });
    await expect(limiter.peek('k')).rejects.toMatchObject({ code: 'ERR_RL_STORE_RESULT' });
    await expect(limiter.refund(d)).rejects.toMatchObject({ code: 'ERR_RL_STORE_RESULT' });
  });
});

describe('failure options', () => {
  it.each([
    [{ onStoreError: 'maybe' }, 'ERR_RL_INVALID_ON_STORE_ERROR', 'onStoreError'],
    [{ storeTimeoutMs: 0 }, 'ERR_RL_INVALID_STORE_TIMEOUT', 'storeTimeoutMs'],
    [{ storeTimeoutMs: 1.5 }, 'ERR_RL_INVALID_STORE_TIMEOUT', 'storeTimeoutMs'],
    [{ localShare: 0 }, 'ERR_RL_INVALID_LOCAL_SHARE', 'localShare'],
    [{ localShare: 1.5 }, 'ERR_RL_INVALID_LOCAL_SHARE', 'localShare'],
    [{ breaker: { failureThreshold: 0 } }, 'ERR_RL_INVALID_BREAKER', 'breaker.failureThreshold'],
    [{ breaker: { cooldownMs: -1 } }, 'ERR_RL_INVALID_BREAKER', 'breaker.cooldownMs'],
    [{ breaker: { threshold: 3 } }, 'ERR_RL_UNKNOWN_OPTION', 'breaker.threshold'],
  ])('%o is rejected with %s naming %s', (extra, code, option) => {
    expect(() => createLimiter({ policies, ...(extra as object) })).toThrowError(expect.objectContaining({ code, option }));
  });
});
