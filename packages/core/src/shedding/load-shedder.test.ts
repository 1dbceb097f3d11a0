import { describe, expect, it } from 'vitest';
import { RateLimitConfigError } from '../errors.js';
import { createLoadShedder, type ShedPriority } from './load-shedder.js';

describe('createLoadShedder: fixed cap', () => {
  it('admits up to maxInFlight, sheds the rest, and counts both', () => {
    const s = createLoadShedder({ maxInFlight: 2 });
    const a = s.acquire();
    const b = s.acquire();
    expect(a).toBeDefined();
    expect(b).toBeDefined();
    expect(s.acquire()).toBeUndefined();
    expect(s.state()).toMatchObject({ mode: 'fixed', limit: 2, inFlight: 2, admitted: 2, shed: 1 });
    a?.release();
    expect(s.acquire()).toBeDefined();
  });

  it('counts a release once, however often it is called', () => {
    const s = createLoadShedder({ maxInFlight: 1 });
    const t = s.acquire();
    t?.release();
    t?.release();
    t?.release(false);
    expect(s.state().inFlight).toBe(0);
    expect(s.acquire()).toBeDefined();
    expect(s.state().inFlight).toBe(1);
  });

  it('sheds lower priorities first: each fills only its share of the cap', () => {
    const s = createLoadShedder<{ p: ShedPriority }>({ maxInFlight: 10, priority: (r) => r.p });
    const admitted = (p: ShedPriority) => {
      let n = 0;
      while (s.acquire(s.priorityOf({ p })) !== undefined) n += 1;
      return n;
    };
    expect(admitted('low')).toBe(5); // 0.5 of 10
    expect(admitted('normal')).toBe(3); // up to 8
    expect(admitted('high')).toBe(1); // up to 9
    expect(admitted('critical')).toBe(1); // up to 10
    expect(s.state().shedByPriority).toEqual({ low: 1, normal: 1, high: 1, critical: 1 });
  });

  it('lets every request fill the whole cap when no priority function is set', () => {
    const s = createLoadShedder({ maxInFlight: 3 });
    expect(s.priorityOf({})).toBe('critical');
    expect([s.acquire(), s.acquire(), s.acquire()].every((t) => t !== undefined)).toBe(true);
  });

  it('treats an unknown priority as normal', () => {
    const s = createLoadShedder<string>({ maxInFlight: 3, priority: (r) => r as ShedPriority });
    expect(s.priorityOf('vip')).toBe('normal');
  });
});

describe('createLoadShedder: adaptive', () => {
  it('moves its limit from latency samples in virtual time, with no timers', () => {
    let now = 0;
    const s = createLoadShedder({
      adaptive: { initialLimit: 10, windowMs: 100, minSamples: 5 },
      clock: () => now,
      eventLoopDelay: () => 0,
    });
    // Latency doubles then triples against the baseline: the limit comes down.
    const round = (latency: number) => {
      const tickets = [];
      for (let i = 0; i < 10; i++) tickets.push(s.acquire());
      now += latency;
      for (const t of tickets) t?.release();
      now += 100;
    };
    for (let i = 0; i < 10; i++) round(10);
    const before = s.state().limit;
    expect(before).toBeGreaterThanOrEqual(10);
    for (let i = 0; i < 10; i++) round(60);
    const after = s.state();
    expect(after.limit).toBeLessThan(before);
    expect(after.shortLatencyMs).toBe(60);
    expect(after.mode).toBe('adaptive');
  });

  it("measures a synchronous handler by default: its own clock, not the limiter's one reading per event-loop turn", () => {
    const s = createLoadShedder({ adaptive: { windowMs: 1, minSamples: 1 }, eventLoopDelay: () => 0 });
    const spin = (ms: number) => {
      const end = performance.now() + ms;
      while (performance.now() < end);
    };
    for (let i = 0; i < 3; i++) {
      const t = s.acquire();
      // A CPU-bound handler: acquired and released in one turn of the event loop.
      spin(15);
      t?.release();
    }
    // Before: 0 ms and 'too-few-samples' (both reads were the turn's one reading).
    expect(s.state().shortLatencyMs).toBeGreaterThanOrEqual(14);
  });

  it('keeps unsampled releases (refusals, aborts) out of the latency', () => {
    let now = 0;
    const s = createLoadShedder({ adaptive: { windowMs: 10, minSamples: 1 }, clock: () => now, eventLoopDelay: () => 0 });
    const t = s.acquire();
    now += 500;
    t?.release(false);
    now += 20;
    s.acquire()?.release();
    expect(s.state().lastChange).toBe('too-few-samples');
  });

  it('cuts the limit when the event loop lags; a second lagged window after an idle spell is not lag in a row', () => {
    let now = 0;
    const s = createLoadShedder({
      adaptive: { initialLimit: 50, windowMs: 10, maxEventLoopDelayMs: 20 },
      clock: () => now,
      eventLoopDelay: () => 300,
    });
    now += 10;
    s.acquire()?.release();
    expect(s.state()).toMatchObject({ limit: 40, lastChange: 'event-loop' });
    // A second pause 5 s later, the loop idle in between (a window closes only when a request comes).
    // Before: lagging, and every request shed for a window.
    now += 5_000;
    expect(s.acquire()).toBeDefined();
  });

  it("sheds a synchronous handler's overload: after two windows of lag, only what a priority function calls critical runs", () => {
    let now = 0;
    let lag = 300;
    const shedder = (priority?: (r: unknown) => 'normal' | 'critical') =>
      createLoadShedder({
        adaptive: { initialLimit: 50, windowMs: 10, maxEventLoopDelayMs: 20 },
        clock: () => now,
        eventLoopDelay: () => lag,
        ...(priority === undefined ? {} : { priority }),
      });
    const s = shedder((r) => (r === '/health' ? 'critical' : 'normal'));
    const plain = shedder();
    // A synchronous handler: one request in flight at a time, however far behind the loop is.
    const served = (sh: typeof s, path: string) => {
      const t = sh.acquire(sh.priorityOf(path));
      t?.release();
      return t !== undefined;
    };
    now += 10;
    // One window of lag (it could be one long GC pause): the limit is cut, nothing is shed yet.
    expect([served(s, '/'), served(plain, '/')]).toEqual([true, true]);
    now += 10;
    // Two in a row: the loop is saturated. Before: every request admitted, the cap never reached.
    expect([served(s, '/'), served(s, '/health'), served(plain, '/')]).toEqual([false, true, false]);
    expect(s.state().shedByPriority).toMatchObject({ normal: 1, critical: 0 });
    // The lag gone for a window: the cap decides again.
    lag = 0;
    now += 10;
    expect([served(s, '/'), served(plain, '/')]).toEqual([true, true]);
  });

  it('a long lag cuts the limit only until the loop is lagging: when it ends, the limit is where two windows left it', () => {
    let now = 0;
    let lag = 300;
    const s = createLoadShedder({
      adaptive: { initialLimit: 20, windowMs: 250, maxEventLoopDelayMs: 100 },
      clock: () => now,
      eventLoopDelay: () => lag,
      priority: () => 'normal',
    });
    // A 3 s stall: 12 windows of lag. Before: 20 * 0.8^12, clamped to minLimit 1, and 5 s to climb back.
    for (let w = 0; w < 12; w++) {
      now += 250;
      s.acquire('normal')?.release();
    }
    expect(s.state()).toMatchObject({ limit: 12, lagging: true, lastChange: 'event-loop' });
    lag = 0;
    now += 250;
    expect(s.acquire('normal')).toBeDefined();
    expect(s.state()).toMatchObject({ limit: 12, lagging: false });
  });

  it('measures event-loop delay by default and stops it on close', () => {
    const s = createLoadShedder({ adaptive: {} });
    expect(s.acquire()).toBeDefined();
    s.close();
  });
});

describe('createLoadShedder: options', () => {
  const bad: [unknown, string][] = [
    [{}, 'options'],
    [{ maxInFlight: 1, adaptive: {} }, 'options'],
    [{ maxInFlight: 0 }, 'maxInFlight'],
    [{ maxInFlight: 1.5 }, 'maxInFlight'],
    [{ adaptive: { minLimit: 10, maxLimit: 5 } }, 'adaptive.minLimit'],
    [{ adaptive: { initialLimit: 5000 } }, 'adaptive.initialLimit'],
    [{ adaptive: { smoothing: 0 } }, 'adaptive.smoothing'],
    [{ adaptive: { tolerance: 0.5 } }, 'adaptive.tolerance'],
    [{ maxInFlight: 1, priority: 'high' }, 'priority'],
    [{ maxInFlight: 1, shares: { low: 2 } }, 'shares.low'],
    // Inverted: low would fill the cap before critical may (a probe: critical shed while low ran).
    [{ maxInFlight: 10, shares: { low: 1, critical: 0.3 } }, 'shares.normal'],
    [{ maxInFlight: 10, shares: { high: 0.95, critical: 0.9 } }, 'shares.critical'],
    [{ maxInFlight: 1, retryAfterMs: -1 }, 'retryAfterMs'],
  ];
  // Named as the caller wrote them: at the top (the middleware's `loadShedding.` prefix is older-spellings.test.ts').
  it.each(bad)('rejects %j naming %s', (options, option) => {
    try {
      createLoadShedder(options as never);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(RateLimitConfigError);
      expect((error as RateLimitConfigError).option).toBe(option);
      expect((error as RateLimitConfigError).code).toBe('ERR_RL_INVALID_SHED');
    }
  });

  it('rejects unknown keys', () => {
    expect(() => createLoadShedder({ maxInflight: 3 } as never)).toThrow(/ERR_RL_UNKNOWN_OPTION: 'maxInflight'/);
  });
});
