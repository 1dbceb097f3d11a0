import { describe, expect, it } from 'vitest';
import { ADAPTIVE_DEFAULTS, GradientLimit } from './gradient-limit.js';

const clocks = new WeakMap<GradientLimit, number>();

/**
 * A simulated server in virtual time: `capacity` requests run in parallel at `baseMs` each; beyond it
 * requests queue, so latency grows as `baseMs * inFlight / capacity`. A closed loop of `clients`
 * callers keeps as many requests in flight as the limit allows.
 */
function drive(limit: GradientLimit, opts: { capacity: number; baseMs: number; clients: number; windows: number; lag?: number }): number[] {
  const history: number[] = [];
  let now = clocks.get(limit) ?? 0;
  for (let w = 0; w < opts.windows; w++) {
    const inFlight = Math.min(opts.clients, limit.limit);
    const latency = opts.baseMs * Math.max(1, inFlight / opts.capacity);
    limit.observeInFlight(inFlight);
    const finished = Math.max(1, Math.round((inFlight * limit.config.windowMs) / latency));
    for (let i = 0; i < finished; i++) limit.sample(latency);
    now += limit.config.windowMs;
    limit.update(now, () => opts.lag ?? 0);
    history.push(limit.limit);
  }
  clocks.set(limit, now);
  return history;
}

describe('GradientLimit', () => {
  it('keeps its initial limit until a window has passed', () => {
    const g = new GradientLimit({ ...ADAPTIVE_DEFAULTS, initialLimit: 10 }, 0);
    for (let i = 0; i < 50; i++) g.sample(5);
    expect(g.update(ADAPTIVE_DEFAULTS.windowMs - 1, () => 0)).toBe(false);
    expect(g.limit).toBe(10);
    expect(g.lastChange).toBe('initial');
  });

  it('grows while latency stays flat and the server is busy', () => {
    const g = new GradientLimit({ ...ADAPTIVE_DEFAULTS, initialLimit: 10, maxLimit: 200 }, 0);
    const h = drive(g, { capacity: 1000, baseMs: 10, clients: 1000, windows: 80 });
    expect(h.at(-1)).toBeGreaterThan(50);
    expect(g.lastChange).toBe('latency');
  });

  it('does not grow when the server is app-limited (peak in flight under half the limit)', () => {
    const g = new GradientLimit({ ...ADAPTIVE_DEFAULTS, initialLimit: 40 }, 0);
    drive(g, { capacity: 1000, baseMs: 10, clients: 5, windows: 20 });
    expect(g.limit).toBe(40);
    expect(g.lastChange).toBe('app-limited');
  });

  it('follows a handler that slows down later: the limit comes down within seconds', () => {
    const g = new GradientLimit({ ...ADAPTIVE_DEFAULTS, initialLimit: 10, maxLimit: 1000 }, 0);
    drive(g, { capacity: 100, baseMs: 20, clients: 500, windows: 100 });
    const high = g.limit;
    // The handler's capacity drops to 20 (a dependency slowed down); 20 windows = 5 s.
    const h = drive(g, { capacity: 20, baseMs: 20, clients: 500, windows: 20 });
    expect(high).toBeGreaterThan(90);
    expect(h.at(-1)).toBeLessThan(45);
  });

  it('settles near the capacity where latency starts to climb, far below the offered load', () => {
    const g = new GradientLimit({ ...ADAPTIVE_DEFAULTS, initialLimit: 10, maxLimit: 1000 }, 0);
    // 120 windows (30 s): within one baseline period, so the baseline is still the no-load latency.
    const h = drive(g, { capacity: 30, baseMs: 20, clients: 500, windows: 120 });
    const tail = h.slice(-60);
    // Tolerance 1.5 lets latency run to ~1.5x before the gradient bites, plus sqrt(limit) headroom.
    expect(Math.max(...tail)).toBeLessThan(30 * 2.5);
    expect(Math.min(...tail)).toBeGreaterThan(15);
  });

  it('cuts the limit when the event loop lags, whatever latency says', () => {
    const g = new GradientLimit({ ...ADAPTIVE_DEFAULTS, initialLimit: 100, maxEventLoopDelayMs: 50 }, 0);
    drive(g, { capacity: 1000, baseMs: 10, clients: 1000, windows: 3, lag: 200 });
    // 100 * 0.8^2: the third window in a row finds the loop lagging (every request but the critical shed)
    // and cuts no more, which the end of the lag would pay for (before: 51, 100 * 0.8^3).
    expect(g.limit).toBe(64);
    expect(g.lastChange).toBe('event-loop');
  });

  it('lets the baseline drift up under an overload longer than baselineWindows (the documented price)', () => {
    const g = new GradientLimit({ ...ADAPTIVE_DEFAULTS, initialLimit: 10, maxLimit: 1000 }, 0);
    drive(g, { capacity: 30, baseMs: 20, clients: 500, windows: 100 });
    const early = g.baselineLatencyMs;
    drive(g, { capacity: 30, baseMs: 20, clients: 500, windows: 240 });
    expect(early).toBe(20);
    expect(g.baselineLatencyMs).toBeGreaterThan(early);
    expect(g.baselineLatencyMs).toBeLessThan(early * ADAPTIVE_DEFAULTS.tolerance ** 3);
  });

  it('never leaves [minLimit, maxLimit]', () => {
    const g = new GradientLimit({ ...ADAPTIVE_DEFAULTS, initialLimit: 5, minLimit: 3, maxLimit: 8 }, 0);
    expect(Math.max(...drive(g, { capacity: 1000, baseMs: 1, clients: 1000, windows: 50 }))).toBe(8);
    const h = new GradientLimit({ ...ADAPTIVE_DEFAULTS, initialLimit: 5, minLimit: 3, maxLimit: 8 }, 0);
    expect(Math.min(...drive(h, { capacity: 1, baseMs: 1, clients: 1000, windows: 50, lag: 1000 }))).toBe(3);
  });

  it('leaves the limit alone on a window with too few samples', () => {
    const g = new GradientLimit({ ...ADAPTIVE_DEFAULTS, initialLimit: 10 }, 0);
    g.sample(5);
    g.update(1000, () => 0);
    expect(g.limit).toBe(10);
    expect(g.lastChange).toBe('too-few-samples');
  });

  it('carries the samples of a window with too few into the next: a slow handler is judged, not a fixed cap', () => {
    // 6 samples per window against minSamples 10 (a 200 ms handler behind a pool of 4, windows of 250 ms).
    const g = new GradientLimit({ ...ADAPTIVE_DEFAULTS, initialLimit: 20, minSamples: 10, windowMs: 250 }, 0);
    for (let w = 1; w <= 2; w++) {
      for (let i = 0; i < 6; i++) g.sample(200);
      g.update(250 * w, () => 0);
    }
    // Before: every window 'too-few-samples' for ever, the baseline never taken.
    expect(g.lastChange).not.toBe('too-few-samples');
    expect(g.baselineLatencyMs).toBe(200);
  });
});
