/**
 * @module createLimiter: turns policies into decisions. One store call per request applies every
 * policy (enforced and shadow) atomically; the limiter picks the binding policy, builds the Decision,
 * keeps the counters a team reads to compare shadow policies with enforced ones. When the store cannot
 * decide, failure/ judges why (one key, or the node that serves it) and answers by the failure mode.
 */
import { createHash } from 'node:crypto';
import { monotonicClock } from './clock.js';
import { costUnits, DecisionImpl, Group, readGroup, Verdict } from './decision.js';
import { codedError, describeValue } from './errors.js';
import { Fallback } from './failure/fallback.js';
import type { BreakerState } from './failure/node-health.js';
import { CallFailure, StoreGuard } from './failure/store-guard.js';
import { fromMilli, MILLI, toMilli } from './internal/fixed-point.js';
import { safeLog } from './logging.js';
import { DecisionObserver } from './observability/decision-observer.js';
import type { HotKeysReport } from './observability/hot-keys.js';
import type { ShadowPolicyStats } from './observability/shadow-stats.js';
import { StoreTimer } from './observability/store-timer.js';
import { type LimiterConfig, type LimiterOptions, parseLimiterOptions } from './options.js';
import type { CompiledPolicy } from './policy.js';
import {
  F_ALLOWED,
  F_CHARGED,
  F_EXCEEDS,
  isPromiseLike,
  R_DELAY,
  R_FLAGS,
  R_REMAINING,
  R_RESET,
  R_RETRY_AFTER,
  RESULT_STRIDE,
  type StorePlan,
  type StoreResult,
} from './stores/store.js';
import type { AlgorithmId, CheckOptions, Decision, PolicyResult, QuotaUnit, ShadowVerdict } from './types.js';

export { StoreTimeoutError } from './failure/store-timeout-error.js';

/** Keys longer than this are replaced by their SHA-256, so a store never holds a huge key. */
export const MAX_KEY_LENGTH = 256;

/** What a limiter enforces, as headers and docs describe it. */
export interface PolicyDescription {
  readonly name: string;
  readonly algorithm: AlgorithmId;
  readonly limit: number;
  readonly windowMs: number;
  readonly capacity: number;
  readonly unit: QuotaUnit;
  readonly shadow: boolean;
}

/** Counters of one policy. */
export interface PolicyStats {
  readonly name: string;
  readonly shadow: boolean;
  /** Requests this policy rejected (or would have, for shadow policies). */
  readonly rejected: number;
}

/** Counters since the limiter was created (or `resetStats()`), for dashboards and rollout decisions. */
export interface LimiterStats {
  /** Every check. */
  readonly requests: number;
  /** Checks the enforced policies rejected (blocked in enforce mode, reported in shadow mode). */
  readonly limited: number;
  /** Checks the shadow policies would have rejected. */
  readonly shadowLimited: number;
  /** Shadow would block what the enforced policies let through. */
  readonly shadowOnly: number;
  /** The enforced policies rejected what shadow would have let through. */
  readonly enforcedOnly: number;
  /** Checks the failure mode answered: the store failed on them (error, silence) or their node's breaker was open. */
  readonly storeErrors: number;
  /** Store outage events: one per node per outage, however many checks it touched. */
  readonly outages: number;
  readonly policies: readonly PolicyStats[];
  /** Per shadow policy: agreement, would-block rate over recent intervals, the keys it would block most. */
  readonly shadow: readonly ShadowPolicyStats[];
}

/** Events a limiter reports besides its decisions. */
export interface LimiterEvents {
  /**
   * The store failed on this check and the failure mode answered. `error` is what the store threw (or a
   * StoreTimeoutError); `scope` says whose fault: `'key'` (this key's state, other keys unaffected) or
   * `'node'` (the node that serves it, named by `node`).
   */
  'store-error': { readonly error: unknown; readonly key: string; readonly scope: 'key' | 'node'; readonly node: string };
  /** The circuit breaker of a store node changed state. */
  breaker: { readonly state: BreakerState; readonly node: string };
}

export interface Limiter {
  /** Decides a request of `options.cost` (default: the limiter's `cost`, 1) for `key`. */
  check(key: string, options?: CheckOptions): Promise<Decision>;
  /**
   * Same as `check`, but returns the Decision itself when the store answers synchronously
   * (MemoryStore), saving a microtask per request; a Promise otherwise. Throws on bad input.
   */
  decide(key: string, options?: CheckOptions): Decision | Promise<Decision>;
  /** Forgets `key` in every policy (enforced and shadow). */
  reset(key: string): Promise<void>;
  /** The enforced policies, in order. */
  readonly policies: readonly PolicyDescription[];
  /** The shadow policies, in order. */
  readonly shadowPolicies: readonly PolicyDescription[];
  readonly mode: 'enforce' | 'shadow';
  /** Subscribes to an event; returns the function that unsubscribes. Listener errors are logged, not thrown. */
  on<E extends keyof LimiterEvents>(event: E, listener: (payload: LimiterEvents[E]) => void): () => void;
  stats(): LimiterStats;
  resetStats(): void;
  /** The `n` (default 10) keys rejected most, and most often near their limit, recently (see HotKeysReport). */
  hotKeys(n?: number): HotKeysReport;
  /** Closes the store if the limiter created it, and the local fallback store. */
  close(): Promise<void>;
}

/** Replaces keys that are too long by a digest; rejects what is not a string. */
export function normalizeKey(key: string): string {
  if (typeof key !== 'string') {
    throw codedError(TypeError, 'ERR_RL_INVALID_KEY', `the key must be a string; received ${describeValue(key)}`);
  }
  if (key.length <= MAX_KEY_LENGTH) return key;
  return `sha256:${createHash('sha256').update(key).digest('base64url')}`;
}

function costOf(options: CheckOptions | undefined, fallback: number): number {
  const cost = options?.cost;
  if (cost === undefined) return fallback;
  const milli = cost === 1 ? MILLI : toMilli(cost);
  if (milli < 0) {
    throw codedError(
      RangeError,
      'ERR_RL_INVALID_COST',
      `cost must be a positive finite multiple of 1/1000 (e.g. 1, 2.5, 0.001); received ${describeValue(cost)}`,
    );
  }
  return milli;
}

function describePolicy(p: CompiledPolicy): PolicyDescription {
  return Object.freeze({
    name: p.name,
    algorithm: p.algorithm,
    limit: p.limit,
    windowMs: p.windowMs,
    capacity: p.capacity,
    unit: p.unit,
    shadow: p.shadow,
  });
}

/** Creates a limiter. Options are validated here, once; see `LimiterOptions`. */
export function createLimiter(options: LimiterOptions): Limiter {
  const config: LimiterConfig = parseLimiterOptions(options);
  const { store, clock, mode, defaultCost, logger, onStoreError } = config;
  const all = [...config.policies, ...config.shadowPolicies];
  const enforcedCount = config.policies.length;
  const plan: StorePlan = Object.freeze({ policies: all, enforcedCount });
  store.prepare?.(plan);
  const hasShadow = all.length > enforcedCount;
  const shadowMode = mode === 'shadow';
  const enforced = new Group();
  const candidates = new Group();
  const observer = new DecisionObserver({ policies: all, enforcedCount, mode, storeKind: store.kind, clock: now });
  const timedStore = new StoreTimer(store, config.storeTimeoutMs);

  const listeners: { [E in keyof LimiterEvents]: Set<(payload: LimiterEvents[E]) => void> } = {
    'store-error': new Set(),
    breaker: new Set(),
  };
  function emit<E extends keyof LimiterEvents>(event: E, payload: LimiterEvents[E]): void {
    for (const listener of listeners[event]) {
      try {
        listener(payload);
      } catch (error) {
        safeLog(logger, 'error', { code: 'ERR_RL_LISTENER_THREW', event, err: error }, 'ERR_RL_LISTENER_THREW: an event listener threw');
      }
    }
  }

  const guard = new StoreGuard({
    store,
    plan,
    storeTimeoutMs: config.storeTimeoutMs,
    breaker: config.breaker,
    logger,
    onStoreError,
    now: () => now(),
    onBreaker: (state, node) => {
      observer.storeState(state, node);
      emit('breaker', { state, node });
    },
  });
  const fallback = new Fallback(config, finish);

  let requests = 0;
  let limitedCount = 0;
  let shadowLimited = 0;
  let shadowOnly = 0;
  let enforcedOnly = 0;
  let storeErrors = 0;
  const rejected = new Float64Array(all.length);

  function now(): number {
    // The built-in clock needs no checking: it always returns integer ms.
    if (clock === monotonicClock) return monotonicClock();
    const t = clock();
    if (typeof t !== 'number' || !Number.isFinite(t)) {
      throw codedError(TypeError, 'ERR_RL_INVALID_CLOCK', `the clock returned ${describeValue(t)}; it must return finite milliseconds`);
    }
    return Math.floor(t);
  }

  /**
   * Builds the decision from a store result over `policies` (the configured ones, or their local
   * fallback twins); `degraded` marks answers of the local fallback.
   */
  function finish(key: string, cost: number, r: StoreResult, policies: readonly CompiledPolicy[], degraded: boolean): Decision {
    requests += 1;
    if (policies.length === 1) return finishSingle(key, cost, r, policies[0] as CompiledPolicy, degraded);
    readGroup(enforced, r, policies, 0, enforcedCount);
    const limited = !enforced.charged;
    if (limited) limitedCount += 1;
    for (let i = 0; i < policies.length; i++) {
      if (((r[i * RESULT_STRIDE + R_FLAGS] as number) & F_ALLOWED) === 0) rejected[i] = (rejected[i] as number) + 1;
    }
    let shadow: ShadowVerdict | undefined;
    if (hasShadow) {
      readGroup(candidates, r, policies, enforcedCount, policies.length);
      const b = candidates.binding as PolicyResult;
      shadow = new Verdict(candidates.charged, candidates.reason, b.name, b.remaining, candidates.retryAfterMs, candidates.results);
      if (!candidates.charged) {
        shadowLimited += 1;
        if (!limited) shadowOnly += 1;
      } else if (limited) {
        enforcedOnly += 1;
      }
    }
    const b = enforced.binding as PolicyResult;
    return new DecisionImpl(
      !limited || shadowMode,
      limited,
      enforced.reason,
      mode,
      key,
      costUnits(cost),
      b.name,
      b.remaining,
      enforced.retryAfterMs,
      b.resetMs,
      enforced.delayMs,
      enforced.results,
      shadow,
      degraded,
    );
  }

  /** The common case, one enforced policy and no shadow: no loops, and `policies` built only if read. */
  function finishSingle(key: string, cost: number, r: StoreResult, p: CompiledPolicy, degraded: boolean): Decision {
    const flags = r[R_FLAGS] as number;
    const limited = (flags & F_CHARGED) === 0;
    const exceeds = (flags & F_EXCEEDS) !== 0;
    if (limited) {
      limitedCount += 1;
      rejected[0] = (rejected[0] as number) + 1;
    }
    return new DecisionImpl(
      !limited || shadowMode,
      limited,
      exceeds ? 'cost-exceeds-capacity' : limited ? 'limited' : 'allowed',
      mode,
      key,
      costUnits(cost),
      p.name,
      fromMilli(r[R_REMAINING] as number),
      limited && !exceeds ? (r[R_RETRY_AFTER] as number) : 0,
      r[R_RESET] as number,
      limited ? 0 : (r[R_DELAY] as number),
      p,
      undefined,
      degraded,
    );
  }

  /** The failure mode's answer for a check that skips the store (its node's breaker is open). */
  function skipped(key: string, cost: number, at: number, node: string): Decision {
    storeErrors += 1;
    const d = fallback.answer(key, cost, at, guard.retryMs(node, at));
    if (onStoreError !== 'local') requests += 1;
    return d;
  }

  /** The failure mode's answer for a check the store failed on. */
  function failed(key: string, cost: number, at: number, failure: CallFailure): Decision {
    if (failure.scope === 'key') guard.logKeyFailure(key, failure);
    emit('store-error', { error: failure.error, key, scope: failure.scope, node: failure.node });
    return skipped(key, cost, at, failure.node);
  }

  function decideAt(key: string, cost: number, at: number): Decision | Promise<Decision> {
    const node = guard.nodeOf(key);
    if (!guard.allow(node, at)) return skipped(key, cost, at, node);
    const seq = guard.next();
    let r: StoreResult | Promise<StoreResult>;
    try {
      r = timedStore.apply(key, plan, cost, at);
    } catch (error) {
      return failed(key, cost, at, guard.failure(node, seq, error, false));
    }
    if (isPromiseLike(r)) {
      return guard
        .watch(node, seq, r)
        .then((o) => (o instanceof CallFailure ? failed(key, cost, at, o) : finish(key, cost, o, all, false)));
    }
    guard.answered(node);
    return finish(key, cost, r, all, false);
  }

  /** Every decision goes out through the observer (metrics, diagnostics channel, hot keys, shadow record). */
  function decide(rawKey: string, opts?: CheckOptions): Decision | Promise<Decision> {
    const out = evaluate(rawKey, opts);
    // evaluate() answers with a Decision, or with a native Promise (of the store guard's chain).
    return out instanceof Promise ? observeLater(out, opts) : observer.observe(out, opts);
  }

  /** Apart from decide(), so that the closure's context is allocated on the asynchronous path only. */
  function observeLater(out: Promise<Decision>, opts: CheckOptions | undefined): Promise<Decision> {
    return out.then((d) => observer.observe(d, opts));
  }

  function evaluate(rawKey: string, opts?: CheckOptions): Decision | Promise<Decision> {
    const key = normalizeKey(rawKey);
    const cost = costOf(opts, defaultCost);
    const starting = guard.starting();
    if (starting !== undefined) return starting.then(() => decideAt(key, cost, now()));
    return decideAt(key, cost, now());
  }

  return {
    check(key, opts) {
      try {
        return Promise.resolve(decide(key, opts));
      } catch (error) {
        return Promise.reject(error);
      }
    },
    decide,
    async reset(rawKey) {
      const key = normalizeKey(rawKey);
      await store.reset(key, plan);
      fallback.reset(key);
    },
    policies: Object.freeze(config.policies.map(describePolicy)),
    shadowPolicies: Object.freeze(config.shadowPolicies.map(describePolicy)),
    mode,
    on(event, listener) {
      const set = listeners[event] as Set<typeof listener>;
      set.add(listener);
      return () => {
        set.delete(listener);
      };
    },
    stats() {
      return {
        requests,
        limited: limitedCount,
        shadowLimited,
        shadowOnly,
        enforcedOnly,
        storeErrors,
        outages: guard.outages,
        policies: all.map((p, i) => ({ name: p.name, shadow: p.shadow, rejected: rejected[i] as number })),
        shadow: observer.shadowStats(),
      };
    },
    resetStats() {
      requests = 0;
      limitedCount = 0;
      shadowLimited = 0;
      shadowOnly = 0;
      enforcedOnly = 0;
      storeErrors = 0;
      guard.resetStats();
      rejected.fill(0);
      observer.resetStats();
    },
    hotKeys(n = 10) {
      return observer.hotKeys(n);
    },
    async close() {
      observer.close();
      fallback.close();
      guard.close();
      if (config.ownsStore) await store.close?.();
    },
  };
}
