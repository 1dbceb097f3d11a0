/**
 * @module MemoryStore: option validation, the `maxKeys` bound across policies and limiters, the eviction
 * order, the sweep, reset and clear, and the sweep timer that never keeps a process alive.
 *
 * Eviction order (CLOCK, second chance), as guaranteed and tested here:
 * 1. A table that needs a row evicts from itself; a table with no rows evicts from the fullest table.
 * 2. The hand moves through the rows in slot order and evicts the first row it meets that is expired
 *    or has not been used since the hand last passed it; a used row loses its mark and is skipped.
 * 3. An expired row never gets a second chance, even if it was just used.
 * 4. When every row was used since the last pass, the hand clears them all and evicts the row it
 *    started at: first-in, first-out.
 * 5. The rows of the request being decided are never evicted to make room for that same request
 *    (unless maxKeys is below the number of policies, when the key cannot hold all its rows anyway).
 * Not guaranteed: expired rows are not preferred globally; a live unused row ahead of the hand goes
 * before an expired row behind it (the sweep purges those).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { RateLimitConfigError } from '../errors.js';
import { createLimiter, type Limiter } from '../limiter/create-limiter.js';
import type { Decision, PolicyOptions } from '../types.js';
import { MemoryStore, type MemoryStoreOptions } from './memory-store.js';

/** A limiter on `store` with a settable clock. */
function limiterOn(store: MemoryStore, policies: PolicyOptions | PolicyOptions[], name?: string) {
  const clock = { now: 0 };
  const limiter = createLimiter({ name, policies, store, clock: () => clock.now });
  return {
    limiter,
    at(at: number, key: string, cost = 1): Decision {
      clock.now = at;
      return limiter.decide(key, { cost }) as Decision;
    },
  };
}

/** What `limiter` has left for `key` at `at`, asked with a cost no policy can hold: charges nothing, allocates nothing. */
function peek(l: { at: (at: number, key: string, cost?: number) => Decision }, at: number, key: string): number[] {
  return l.at(at, key, 1_000_000).policies.map((p) => p.remaining);
}

describe('options', () => {
  function configError(options: unknown): RateLimitConfigError {
    try {
      new MemoryStore(options as MemoryStoreOptions).close();
    } catch (error) {
      expect(error).toBeInstanceOf(RateLimitConfigError);
      return error as RateLimitConfigError;
    }
    throw new Error('expected a RateLimitConfigError, nothing was thrown');
  }

  it.each([
    { options: { maxKeys: 0 }, code: 'ERR_RL_INVALID_MAX_KEYS', option: 'maxKeys', fix: /must be a positive integer/ },
    { options: { maxKeys: 1.5 }, code: 'ERR_RL_INVALID_MAX_KEYS', option: 'maxKeys', fix: /must be a positive integer/ },
    { options: { maxKeys: '1000' }, code: 'ERR_RL_INVALID_MAX_KEYS', option: 'maxKeys', fix: /must be a positive integer/ },
    {
      options: { sweepIntervalMs: -1 },
      code: 'ERR_RL_INVALID_SWEEP_INTERVAL',
      option: 'sweepIntervalMs',
      fix: /must be a non-negative integer number of ms \(0 turns the sweep off\)/,
    },
    { options: { sweepIntervalMs: 0.5 }, code: 'ERR_RL_INVALID_SWEEP_INTERVAL', option: 'sweepIntervalMs', fix: /non-negative integer/ },
    { options: { sweepBatch: 0 }, code: 'ERR_RL_INVALID_SWEEP_BATCH', option: 'sweepBatch', fix: /must be a positive integer/ },
    {
      options: { maxKey: 10 },
      code: 'ERR_RL_UNKNOWN_OPTION',
      option: 'maxKey',
      fix: /is not an option \(valid: maxKeys, sweepIntervalMs, sweepBatch\)/,
    },
    { options: 1000, code: 'ERR_RL_INVALID_OPTIONS', option: 'options', fix: /must be an options object like \{ maxKeys: 100_000 \}/ },
    { options: null, code: 'ERR_RL_INVALID_OPTIONS', option: 'options', fix: /must be an options object/ },
  ])('$code at $option', ({ options, code, option, fix }) => {
    const error = configError(options);
    expect(error).toMatchObject({ code, option });
    expect(error.message).toMatch(fix);
  });

  it('undefined values count as absent; defaults: 1,000,000 entries', () => {
    const store = new MemoryStore({ maxKeys: undefined, sweepIntervalMs: undefined, sweepBatch: undefined });
    expect(store.maxKeys).toBe(1_000_000);
    expect(store.kind).toBe('memory');
    store.close();
    store.close();
  });
});

describe('bounded by maxKeys', () => {
  it('never holds more than maxKeys entries, counting one per (key, policy), across policies and limiters', () => {
    const store = new MemoryStore({ maxKeys: 10, sweepIntervalMs: 0 });
    const a = limiterOn(store, [
      { name: 'second', algorithm: 'gcra', limit: 5, windowMs: 1000 },
      { name: 'day', algorithm: 'fixed-window', limit: 1000, windowMs: 86_400_000 },
      { name: 'log', algorithm: 'sliding-log', limit: 50, windowMs: 60_000 },
    ]);
    const b = limiterOn(store, { name: 'other', algorithm: 'sliding-window', limit: 5, windowMs: 1000 });
    for (let i = 0; i < 200; i++) {
      a.at(i, `user:${i % 37}`);
      b.at(i, `ip:${i % 23}`);
      expect(store.size).toBeLessThanOrEqual(10);
    }
    expect(store.size).toBe(10);
    expect(store.evictions).toBeGreaterThan(0);
  });

  it('a rejected request for a new key takes no entry', () => {
    const store = new MemoryStore({ maxKeys: 5, sweepIntervalMs: 0 });
    const l = limiterOn(store, [
      { name: 'a', algorithm: 'fixed-window', limit: 5, windowMs: 1000 },
      { name: 'b', algorithm: 'fixed-window', limit: 1, windowMs: 1000 },
    ]);
    expect(l.at(0, 'k', 2).reason).toBe('cost-exceeds-capacity');
    expect(l.at(0, 'k', 0.5).allowed).toBe(true);
    expect(store.size).toBe(2);
    expect(l.at(0, 'k', 0.6).allowed).toBe(false);
    expect(store.size).toBe(2);
  });

  it('a flood of 1,000,000 distinct keys stays within maxKeys and keeps answering', () => {
    const store = new MemoryStore({ maxKeys: 1000, sweepIntervalMs: 0 });
    const l = limiterOn(store, { algorithm: 'fixed-window', limit: 2, windowMs: 60_000 });
    let admitted = 0;
    for (let i = 0; i < 1_000_000; i++) {
      if (l.at(i >> 10, `flood:${i}`).allowed) admitted += 1;
      if ((i & 0xffff) === 0) expect(store.size).toBeLessThanOrEqual(1000);
    }
    expect(admitted).toBe(1_000_000);
    expect(store.size).toBe(1000);
    expect(store.evictions).toBe(999_000);
    // The most recent keys are the ones kept.
    expect(peek(l, 1000, 'flood:999999')).toEqual([1]);
    expect(peek(l, 1000, 'flood:0')).toEqual([2]);
  }, 60_000);
});

describe('eviction order', () => {
  const policy: PolicyOptions = { algorithm: 'fixed-window', limit: 5, windowMs: 60_000 };

  it('a full store makes room from expired entries first, and counts them as purged, not evicted', () => {
    const store = new MemoryStore({ maxKeys: 3, sweepIntervalMs: 0 });
    const l = limiterOn(store, { algorithm: 'fixed-window', limit: 5, windowMs: 1_000 });
    for (const key of ['a', 'b', 'c']) l.at(0, key);
    // Their windows ended: three new keys reuse their rows; nothing live was dropped.
    for (const key of ['d', 'e', 'f']) l.at(5_000, key);
    expect([store.evictions, store.purged, store.size]).toEqual([0, 3, 3]);
    // A fourth new key in the same window drops a live one: an eviction.
    l.at(5_000, 'g');
    expect([store.evictions, store.purged]).toEqual([1, 3]);
  });

  it('a row used since the hand last passed gets a second chance; the first unused one goes', () => {
    const store = new MemoryStore({ maxKeys: 3, sweepIntervalMs: 0 });
    const l = limiterOn(store, policy);
    for (const key of ['a', 'b', 'c']) l.at(0, key);
    l.at(1, 'a');
    l.at(1, 'b');
    l.at(2, 'd');
    expect(store.evictions).toBe(1);
    // a and b kept their counts; c was evicted (fresh again); d is new.
    expect(['a', 'b', 'c', 'd'].map((k) => peek(l, 3, k)[0])).toEqual([3, 3, 5, 4]);
  });

  it('an expired row goes even if it was just used (no second chance)', () => {
    const store = new MemoryStore({ maxKeys: 3, sweepIntervalMs: 0 });
    const l = limiterOn(store, { algorithm: 'sliding-log', limit: 5, windowMs: 1000 });
    l.at(0, 'a');
    l.at(0, 'a');
    l.at(500, 'b');
    l.at(500, 'c');
    // a expired at 1000 and is marked used; b and c are live and unmarked.
    l.at(1200, 'd');
    expect(['b', 'c', 'd'].map((k) => peek(l, 1300, k)[0])).toEqual([4, 4, 4]);
    expect(store.size).toBe(3);
  });

  it('when every row was used since the last pass, the oldest slot goes first (FIFO)', () => {
    const store = new MemoryStore({ maxKeys: 3, sweepIntervalMs: 0 });
    const l = limiterOn(store, policy);
    for (const key of ['a', 'b', 'c']) l.at(0, key);
    for (const key of ['a', 'b', 'c']) l.at(1, key);
    l.at(2, 'd');
    expect(['a', 'b', 'c'].map((k) => peek(l, 3, k)[0])).toEqual([5, 3, 3]);
  });

  it('never evicts a row of the request being decided to make room for that request', () => {
    // 'a' is shared by two limiters (one limiter name, same policy name and numbers, so the same state); 'b' expires quickly.
    const store = new MemoryStore({ maxKeys: 2, sweepIntervalMs: 0 });
    const daily: PolicyOptions = { name: 'a', algorithm: 'fixed-window', limit: 3, windowMs: 86_400_000 };
    const one = limiterOn(store, daily, 'shared');
    const two = limiterOn(store, [{ name: 'b', algorithm: 'gcra', limit: 10, windowMs: 1000 }, daily], 'shared');
    one.at(0, 'k1');
    one.at(0, 'k2');
    one.at(1, 'k1');
    one.at(1, 'k2');
    // k1: 2 of 3 used in 'a'. Table 'b' is empty, so room comes from 'a': k2 must go, not k1.
    expect(two.at(2, 'k1').policies.map((p) => p.remaining)).toEqual([9, 0]);
    expect(one.at(3, 'k1')).toMatchObject({ allowed: false, remaining: 0 });
    expect(store.size).toBe(2);
  });

  it('the same, with the shared policy first in the plan', () => {
    const store = new MemoryStore({ maxKeys: 2, sweepIntervalMs: 0 });
    const daily: PolicyOptions = { name: 'a', algorithm: 'fixed-window', limit: 3, windowMs: 86_400_000 };
    const one = limiterOn(store, daily, 'shared');
    const two = limiterOn(store, [daily, { name: 'b', algorithm: 'gcra', limit: 10, windowMs: 1000 }], 'shared');
    one.at(0, 'k1');
    one.at(0, 'k2');
    one.at(1, 'k1');
    one.at(1, 'k2');
    expect(two.at(2, 'k1').policies.map((p) => p.remaining)).toEqual([0, 9]);
    expect(one.at(3, 'k1')).toMatchObject({ allowed: false, remaining: 0 });
  });

  it('with maxKeys below the number of policies the bound still holds (the key cannot keep all its rows)', () => {
    const store = new MemoryStore({ maxKeys: 1, sweepIntervalMs: 0 });
    const l = limiterOn(store, [
      { name: 'a', algorithm: 'fixed-window', limit: 3, windowMs: 60_000 },
      { name: 'b', algorithm: 'gcra', limit: 3, windowMs: 60_000 },
    ]);
    for (let i = 0; i < 5; i++) {
      expect(l.at(i, 'k').allowed).toBe(true);
      expect(store.size).toBe(1);
    }
  });

  it('a slot reused after eviction starts from a fresh state (also a sliding-log ring)', () => {
    const store = new MemoryStore({ maxKeys: 1, sweepIntervalMs: 0 });
    const l = limiterOn(store, { algorithm: 'sliding-log', limit: 3, windowMs: 60_000 });
    l.at(0, 'a', 3);
    expect(l.at(1, 'b', 1).remaining).toBe(2);
    expect(l.at(2, 'a', 1).remaining).toBe(2);
  });
});

describe('sweep, reset, clear', () => {
  it('sweep(now) purges exactly the expired entries, in every table', () => {
    const store = new MemoryStore({ maxKeys: 100, sweepIntervalMs: 0 });
    const l = limiterOn(store, [
      { name: 'fw', algorithm: 'fixed-window', limit: 5, windowMs: 2000 },
      { name: 'tb', algorithm: 'token-bucket', limit: 5, windowMs: 5000 },
    ]);
    l.at(0, 'early');
    l.at(900, 'late');
    expect(store.size).toBe(4);
    // The token buckets are full again one token (1000 ms) after their request; the windows end at 2000.
    expect(store.sweep(999)).toBe(0);
    expect(store.sweep(1000)).toBe(1);
    expect(store.sweep(1899)).toBe(0);
    expect(store.sweep(1900)).toBe(1);
    expect(store.size).toBe(2);
    expect(peek(l, 1950, 'late')).toEqual([4, 5]);
    expect(store.sweep(2000)).toBe(2);
    expect(store.size).toBe(0);
    expect(store.purged).toBe(4);
  });

  it('sweep() without an argument sweeps as of the latest time the store has seen', () => {
    const store = new MemoryStore({ maxKeys: 100, sweepIntervalMs: 0 });
    const l = limiterOn(store, { algorithm: 'fixed-window', limit: 5, windowMs: 1000 });
    l.at(0, 'a');
    l.at(999, 'b');
    expect(store.sweep()).toBe(0);
    l.at(2500, 'c');
    expect(store.sweep()).toBe(2);
    expect(store.size).toBe(1);
  });

  it('a sweep looks at no more than sweepBatch entries per table; later sweeps continue', () => {
    const store = new MemoryStore({ maxKeys: 100, sweepIntervalMs: 0, sweepBatch: 3 });
    const l = limiterOn(store, { algorithm: 'fixed-window', limit: 5, windowMs: 1000 });
    for (let i = 0; i < 7; i++) l.at(0, `k${i}`);
    expect(store.sweep(5000)).toBe(3);
    expect(store.sweep(5000)).toBe(3);
    expect(store.sweep(5000)).toBe(1);
    expect(store.size).toBe(0);
  });

  it('grows past its initial capacity without losing state', () => {
    const store = new MemoryStore({ maxKeys: 10_000, sweepIntervalMs: 0 });
    const l = limiterOn(store, [
      { name: 'fw', algorithm: 'fixed-window', limit: 5, windowMs: 1000 },
      { name: 'log', algorithm: 'sliding-log', limit: 5, windowMs: 1000 },
    ]);
    for (let i = 0; i < 1000; i++) l.at(0, `k${i}`, 1 + (i % 4));
    for (let i = 0; i < 1000; i += 97) expect(peek(l, 1, `k${i}`)).toEqual([4 - (i % 4), 4 - (i % 4)]);
    expect(store.size).toBe(2000);
  });

  it('reset(key) drops the key’s entries and nothing else', async () => {
    const store = new MemoryStore({ maxKeys: 100, sweepIntervalMs: 0 });
    const l = limiterOn(store, [
      { name: 'a', algorithm: 'fixed-window', limit: 5, windowMs: 1000 },
      { name: 'b', algorithm: 'sliding-log', limit: 5, windowMs: 1000 },
    ]);
    l.at(0, 'x', 2);
    l.at(0, 'y', 3);
    await l.limiter.reset('x');
    expect(store.size).toBe(2);
    await l.limiter.reset('never-seen');
    expect(store.size).toBe(2);
    expect(peek(l, 0, 'x')).toEqual([5, 5]);
    expect(peek(l, 0, 'y')).toEqual([2, 2]);
  });
  it('clear() drops every entry, also for limiters that already used the store', async () => {
    const store = new MemoryStore({ maxKeys: 100, sweepIntervalMs: 0 });
    const l: { limiter: Limiter; at: (at: number, key: string, cost?: number) => Decision } = limiterOn(store, {
      algorithm: 'fixed-window',
      limit: 1,
      windowMs: 60_000,
    });
    l.at(0, 'k');
    expect(l.at(0, 'k').allowed).toBe(false);
    store.clear();
    expect(store.size).toBe(0);
    expect(l.at(0, 'k').allowed).toBe(true);
    expect(store.size).toBe(1);
    // reset and sweep keep working after a clear.
    await l.limiter.reset('k');
    expect(store.size).toBe(0);
    l.at(0, 'k');
    expect(store.sweep(60_000)).toBe(1);
  });
});

describe('the sweep timer', () => {
  it('runs, but never keeps the process alive (unref)', async () => {
    const source = fileURLToPath(new URL('./memory-store.ts', import.meta.url));
    const script = `
      const { MemoryStore } = await import(${JSON.stringify(source)});
      const store = new MemoryStore({ sweepIntervalMs: 1 });
      let sweeps = 0;
      const sweep = store.sweep.bind(store);
      store.sweep = (now) => { sweeps += 1; return sweep(now); };
      setTimeout(() => console.log(JSON.stringify({ sweeps })), 20);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    // The child exits on its own once the 20 ms timeout has fired; a ref'd interval would keep it forever.
    const guard = setTimeout(() => child.kill('SIGKILL'), 15_000);
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => {
      child.on('exit', (c, s) => resolve([c, s]));
    });
    clearTimeout(guard);
    expect({ code, signal, err }).toEqual({ code: 0, signal: null, err: '' });
    expect(JSON.parse(out).sweeps).toBeGreaterThan(0);
  });

  it('sweepIntervalMs: 0 starts no timer; close() stops it', () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    store.close();
    const timed = new MemoryStore({ sweepIntervalMs: 10 });
    timed.close();
    timed.close();
    expect(timed.size).toBe(0);
  });
});
