import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLimiter, type LimiterEvents } from './create-limiter.js';
import { formatLine, type LogFields } from './logging.js';
import { MemoryStore } from './stores/memory-store.js';
import type { Store, StorePlan, StoreResult } from './stores/store.js';
import type { Logger } from './types.js';

/** A store whose behaviour the test switches: healthy (a real MemoryStore), throwing, rejecting or hanging. */
class FlakyStore implements Store {
  readonly kind = 'flaky';
  mode: 'ok' | 'throw' | 'reject' | 'hang' | 'late-reject' | 'slow' = 'ok';
  /** 'slow': answers this many ms after the call, from a timer. */
  delayMs = 0;
  calls = 0;
  private readonly inner = new MemoryStore({ sweepIntervalMs: 0 });
  pending: Array<(error: Error) => void> = [];

  apply(key: string, plan: StorePlan, cost: number, now: number): StoreResult | Promise<StoreResult> {
    this.calls += 1;
    switch (this.mode) {
      case 'ok':
        return Promise.resolve(Float64Array.from(this.inner.apply(key, plan, cost, now)));
      case 'throw':
        throw new Error('connection refused');
      case 'reject':
        return Promise.reject(new Error('connection reset'));
      case 'hang':
        return new Promise<StoreResult>(() => {});
      case 'late-reject':
        return new Promise<StoreResult>((_, reject) => this.pending.push(reject));
      case 'slow': {
        const result = Float64Array.from(this.inner.apply(key, plan, cost, now));
        // Scheduled from a microtask, so after the limiter's own timer: the reply lands in the same
        // timers phase as the deadline, just after it.
        return new Promise<StoreResult>((resolve) => queueMicrotask(() => setTimeout(() => resolve(result), this.delayMs)));
      }
    }
  }

  reset(key: string, plan: StorePlan): void {
    this.inner.reset(key, plan);
  }
}

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
    const limiter = createLimiter({ policies, store, logger, onStoreError: 'open', breaker: false, clock: () => 0 });
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
    expect(logger.errors).toHaveLength(2);
    expect(limiter.stats().storeErrors).toBe(4);
  });

  it("'closed' refuses with reason store-error (not a quota verdict), and shadow mode still lets it pass", async () => {
    const store = new FlakyStore();
    store.mode = 'throw';
    const closed = createLimiter({ policies, store, onStoreError: 'closed', breaker: false, logger: recordingLogger() });
    const d = await closed.check('k');
    expect(d).toMatchObject({ allowed: false, limited: false, degraded: true, reason: 'store-error' });
    expect(d.retryAfterMs).toBeGreaterThanOrEqual(1000);
    const shadow = createLimiter({ policies, store, onStoreError: 'closed', mode: 'shadow', breaker: false, logger: recordingLogger() });
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

  it('times out a store that never answers after storeTimeoutMs', async () => {
    vi.useFakeTimers();
    const store = new FlakyStore();
    store.mode = 'hang';
    const limiter = createLimiter({ policies, store, storeTimeoutMs: 30, breaker: false, logger: recordingLogger() });
    const errors: unknown[] = [];
    limiter.on('store-error', (e) => errors.push(e.error));
    const pending = limiter.check('k');
    await vi.advanceTimersByTimeAsync(29);
    expect(errors).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    // The verdict waits one turn of the event loop (see the next test).
    await vi.runOnlyPendingTimersAsync();
    expect(await pending).toMatchObject({ allowed: true, degraded: true, reason: 'store-error' });
    expect(String(errors[0])).toContain('ERR_RL_STORE_TIMEOUT');
  });

  it('a reply that arrives in the same turn as the deadline is not a timeout (busy event loop)', async () => {
    vi.useFakeTimers();
    const store = new FlakyStore();
    store.mode = 'slow';
    store.delayMs = 30;
    const limiter = createLimiter({ policies, store, storeTimeoutMs: 30, breaker: { failureThreshold: 1 }, logger: recordingLogger() });
    const errors: unknown[] = [];
    limiter.on('store-error', (e) => errors.push(e.error));
    // The limiter's timer and the store's reply are due at the same time; the timer was set first, as
    // on a process too busy to read the socket before the timers phase.
    const pending = limiter.check('k');
    await vi.advanceTimersByTimeAsync(30);
    await vi.runOnlyPendingTimersAsync();
    expect(await pending).toMatchObject({ allowed: true, degraded: false, reason: 'allowed', remaining: 9 });
    expect(errors).toEqual([]);
  });

  it('a store that rejects after the timeout leaves no unhandled rejection', async () => {
    vi.useFakeTimers();
    const store = new FlakyStore();
    store.mode = 'late-reject';
    const limiter = createLimiter({ policies, store, storeTimeoutMs: 10, breaker: false, logger: recordingLogger() });
    const pending = limiter.check('k');
    await vi.advanceTimersByTimeAsync(10);
    await vi.runOnlyPendingTimersAsync();
    await pending;
    for (const reject of store.pending) reject(new Error('too late'));
    await vi.advanceTimersByTimeAsync(1);
  });

  it('the breaker stops calling a failing store, probes after the cool-down and closes on success', async () => {
    let t = 0;
    const store = new FlakyStore();
    const logger = recordingLogger();
    const limiter = createLimiter({
      policies,
      store,
      logger,
      breaker: { failureThreshold: 3, cooldownMs: 1_000 },
      clock: () => t,
    });
    const states: string[] = [];
    limiter.on('breaker', (e) => states.push(e.state));
    store.mode = 'reject';
    for (let i = 0; i < 3; i++) await limiter.check('k');
    expect(store.calls).toBe(3);
    expect(states).toEqual(['open']);
    for (let i = 0; i < 10; i++) expect((await limiter.check('k')).degraded).toBe(true);
    expect(store.calls).toBe(3);
    t = 999;
    await limiter.check('k');
    expect(store.calls).toBe(3);
    t = 1_000;
    await limiter.check('k');
    expect(store.calls).toBe(4);
    expect(states).toEqual(['open', 'half-open', 'open']);
    t = 2_000;
    store.mode = 'ok';
    const probe = await limiter.check('k');
    expect(probe).toMatchObject({ degraded: false, reason: 'allowed' });
    expect(states).toEqual(['open', 'half-open', 'open', 'half-open', 'closed']);
    expect(logger.warnings.some((w) => w.includes('answers again'))).toBe(true);
    expect(limiter.stats().storeErrors).toBe(15);
  });

  it('lets one probe out at a time while half-open', async () => {
    let t = 0;
    const store = new FlakyStore();
    const limiter = createLimiter({
      policies,
      store,
      logger: recordingLogger(),
      breaker: { failureThreshold: 1, cooldownMs: 100 },
      clock: () => t,
    });
    store.mode = 'reject';
    await limiter.check('k');
    t = 100;
    store.mode = 'hang';
    void limiter.check('k');
    const second = await limiter.check('k');
    expect(second.degraded).toBe(true);
    expect(store.calls).toBe(2);
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
