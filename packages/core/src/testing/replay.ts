/**
 * @module Test support (not exported by the package): replays a trace of requests through a real limiter
 * and a real MemoryStore in virtual time, so a test reads as a table of `{ at, cost, expected decision }`.
 * `replay` returns the observed rows in the shape of the expected ones, so `expect(replay(...)).toEqual(rows)`
 * shows every mismatching row in one diff.
 */
import { createLimiter, type Limiter } from '../limiter/create-limiter.js';
import type { LimiterOptions } from '../options.js';
import { MemoryStore } from '../stores/memory-store.js';
import type { Decision, DecisionReason } from '../types.js';

/** One request of a trace: when, how much, for whom (default key `'k'`). */
export interface TraceStep {
  readonly at: number;
  readonly cost: number;
  readonly key?: string;
}

/** A request and the decision expected for it (quantities in policy units, times in ms). */
export interface TraceRow extends TraceStep {
  readonly allowed: boolean;
  readonly remaining: number;
  readonly retryAfterMs: number;
  readonly resetMs: number;
  readonly delayMs: number;
  /** Checked only when the expected row gives it. */
  readonly reason?: DecisionReason;
}

export type TraceOptions = Omit<LimiterOptions, 'clock' | 'store'>;

/** A limiter on a fresh MemoryStore (no sweep timer) whose clock the caller sets. */
export interface VirtualLimiter {
  readonly limiter: Limiter;
  readonly store: MemoryStore;
  /** Sets the clock to `at` and decides a request (synchronously: the memory store answers at once). */
  at(at: number, cost: number, key?: string): Decision;
}

export function createVirtualLimiter(options: TraceOptions): VirtualLimiter {
  let now = 0;
  const store = new MemoryStore({ sweepIntervalMs: 0 });
  const limiter = createLimiter({ ...options, store, clock: () => now });
  return {
    limiter,
    store,
    at(at, cost, key = 'k') {
      now = at;
      return limiter.decide(key, { cost }) as Decision;
    },
  };
}

/** Replays `rows` in order on a fresh limiter and returns what it decided, shaped like `rows`. */
export function replay(options: TraceOptions, rows: readonly TraceRow[]): TraceRow[] {
  const v = createVirtualLimiter(options);
  return rows.map((row) => {
    const d = v.at(row.at, row.cost, row.key);
    const seen: TraceRow = {
      ...(row.key === undefined ? {} : { key: row.key }),
      at: row.at,
      cost: row.cost,
      allowed: d.allowed,
      remaining: d.remaining,
      retryAfterMs: d.retryAfterMs,
      resetMs: d.resetMs,
      delayMs: d.delayMs,
    };
    return row.reason === undefined ? seen : { ...seen, reason: d.reason };
  });
}

/**
 * Replays `prefix` on a fresh limiter, then decides one more request: the way to ask "what would happen
 * at `at` after exactly this history", with nothing else in between.
 */
export function probe(options: TraceOptions, prefix: readonly TraceStep[], at: number, cost: number, key?: string): Decision {
  const v = createVirtualLimiter(options);
  for (const step of prefix) v.at(step.at, step.cost, step.key);
  return v.at(at, cost, key);
}
