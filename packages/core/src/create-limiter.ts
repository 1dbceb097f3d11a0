/**
 * @module createLimiter: turns policies into decisions. One store call per request applies every
 * policy (enforced and shadow) atomically; the limiter then picks the binding policy, builds the
 * Decision and keeps the counters a team reads to compare shadow policies with enforced ones.
 */
import { createHash } from 'node:crypto';
import { fromMilli, MILLI, toMilli } from './internal/fixed-point.js';
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
import type { AlgorithmId, CheckOptions, Decision, DecisionReason, PolicyResult, QuotaUnit, ShadowVerdict } from './types.js';

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
  readonly policies: readonly PolicyStats[];
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
  stats(): LimiterStats;
  resetStats(): void;
  /** Closes the store if the limiter created it. */
  close(): Promise<void>;
}

class Result implements PolicyResult {
  constructor(
    readonly name: string,
    readonly algorithm: AlgorithmId,
    readonly allowed: boolean,
    readonly shadow: boolean,
    readonly limit: number,
    readonly windowMs: number,
    readonly capacity: number,
    readonly remaining: number,
    readonly retryAfterMs: number,
    readonly resetMs: number,
    readonly delayMs: number,
    readonly reason: 'cost-exceeds-capacity' | undefined,
  ) {}
}

class DecisionImpl implements Decision {
  constructor(
    readonly allowed: boolean,
    readonly limited: boolean,
    readonly reason: DecisionReason,
    readonly mode: 'enforce' | 'shadow',
    readonly key: string,
    readonly cost: number,
    readonly policy: string,
    readonly remaining: number,
    readonly retryAfterMs: number,
    readonly resetMs: number,
    readonly delayMs: number,
    readonly policies: readonly PolicyResult[],
    readonly shadow: ShadowVerdict | undefined,
    readonly degraded: boolean,
  ) {}
}

class Verdict implements ShadowVerdict {
  constructor(
    readonly allowed: boolean,
    readonly reason: DecisionReason,
    readonly policy: string,
    readonly remaining: number,
    readonly retryAfterMs: number,
    readonly policies: readonly PolicyResult[],
  ) {}
}

/** Replaces keys that are too long by a digest; rejects what is not a string. */
export function normalizeKey(key: string): string {
  if (typeof key !== 'string') {
    throw new TypeError(`ERR_RL_INVALID_KEY: the key must be a string; received ${typeof key}`);
  }
  if (key.length <= MAX_KEY_LENGTH) return key;
  return `sha256:${createHash('sha256').update(key).digest('base64url')}`;
}

function costOf(options: CheckOptions | undefined, fallback: number): number {
  const cost = options?.cost;
  if (cost === undefined) return fallback;
  const milli = cost === 1 ? MILLI : toMilli(cost);
  if (milli < 0) {
    throw new RangeError(
      `ERR_RL_INVALID_COST: cost must be a positive finite multiple of 1/1000 (e.g. 1, 2.5, 0.001); received ${String(cost)}`,
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

/** Per-policy results of one group and the group's summary. */
interface GroupSummary {
  readonly results: PolicyResult[];
  readonly charged: boolean;
  readonly reason: DecisionReason;
  readonly binding: number;
  readonly retryAfterMs: number;
  readonly delayMs: number;
}

function readGroup(r: StoreResult, policies: readonly CompiledPolicy[], from: number, to: number): GroupSummary {
  const results: PolicyResult[] = new Array(to - from);
  let charged = to > from;
  let exceeds = -1;
  let binding = from;
  let bestRetry = -1;
  let bestRemaining = Number.POSITIVE_INFINITY;
  let bestReset = -1;
  let delayMs = 0;
  for (let i = from; i < to; i++) {
    const p = policies[i] as CompiledPolicy;
    const o = i * RESULT_STRIDE;
    const flags = r[o + R_FLAGS] as number;
    const allowed = (flags & F_ALLOWED) !== 0;
    const retry = r[o + R_RETRY_AFTER] as number;
    const remainingMilli = r[o + R_REMAINING] as number;
    const reset = r[o + R_RESET] as number;
    const delay = r[o + R_DELAY] as number;
    if ((flags & F_CHARGED) === 0) charged = false;
    if ((flags & F_EXCEEDS) !== 0 && exceeds < 0) exceeds = i;
    if (!allowed) {
      if (retry > bestRetry) {
        bestRetry = retry;
        binding = i;
      }
    } else if (bestRetry < 0 && (remainingMilli < bestRemaining || (remainingMilli === bestRemaining && reset > bestReset))) {
      bestRemaining = remainingMilli;
      bestReset = reset;
      binding = i;
    }
    if (delay > delayMs) delayMs = delay;
    results[i - from] = new Result(
      p.name,
      p.algorithm,
      allowed,
      p.shadow,
      p.limit,
      p.windowMs,
      p.capacity,
      fromMilli(remainingMilli),
      retry,
      reset,
      delay,
      (flags & F_EXCEEDS) !== 0 ? 'cost-exceeds-capacity' : undefined,
    );
  }
  if (exceeds >= 0) binding = exceeds;
  return {
    results,
    charged,
    reason: exceeds >= 0 ? 'cost-exceeds-capacity' : charged ? 'allowed' : 'limited',
    binding: binding - from,
    retryAfterMs: exceeds >= 0 || charged ? 0 : bestRetry,
    delayMs: charged ? delayMs : 0,
  };
}

/** Creates a limiter. Options are validated here, once; see `LimiterOptions`. */
export function createLimiter(options: LimiterOptions): Limiter {
  const config: LimiterConfig = parseLimiterOptions(options);
  const { store, clock, mode, defaultCost } = config;
  const all = [...config.policies, ...config.shadowPolicies];
  const plan: StorePlan = Object.freeze({ policies: all, enforcedCount: config.policies.length });
  const enforcedCount = config.policies.length;
  const hasShadow = config.shadowPolicies.length > 0;
  const shadowMode = mode === 'shadow';

  let requests = 0;
  let limitedCount = 0;
  let shadowLimited = 0;
  let shadowOnly = 0;
  let enforcedOnly = 0;
  const rejected = new Float64Array(all.length);

  function now(): number {
    const t = clock();
    if (typeof t !== 'number' || !Number.isFinite(t)) {
      throw new TypeError(`ERR_RL_INVALID_CLOCK: the clock returned ${String(t)}; it must return finite milliseconds`);
    }
    return Math.floor(t);
  }

  function finish(key: string, cost: number, r: StoreResult): Decision {
    requests += 1;
    const enforced = readGroup(r, all, 0, enforcedCount);
    const limited = !enforced.charged;
    if (limited) limitedCount += 1;
    for (let i = 0; i < all.length; i++) {
      if (((r[i * RESULT_STRIDE + R_FLAGS] as number) & F_ALLOWED) === 0) rejected[i] = (rejected[i] as number) + 1;
    }
    let shadow: ShadowVerdict | undefined;
    if (hasShadow) {
      const s = readGroup(r, all, enforcedCount, all.length);
      const b = s.results[s.binding] as PolicyResult;
      shadow = new Verdict(s.charged, s.reason, b.name, b.remaining, s.retryAfterMs, s.results);
      if (!s.charged) {
        shadowLimited += 1;
        if (!limited) shadowOnly += 1;
      } else if (limited) {
        enforcedOnly += 1;
      }
    }
    const b = enforced.results[enforced.binding] as PolicyResult;
    return new DecisionImpl(
      !limited || shadowMode,
      limited,
      enforced.reason,
      mode,
      key,
      cost / MILLI,
      b.name,
      b.remaining,
      enforced.retryAfterMs,
      b.resetMs,
      enforced.delayMs,
      enforced.results,
      shadow,
      false,
    );
  }

  function decide(rawKey: string, opts?: CheckOptions): Decision | Promise<Decision> {
    const key = normalizeKey(rawKey);
    const cost = costOf(opts, defaultCost);
    const r = store.apply(key, plan, cost, now());
    if (isPromiseLike(r)) return r.then((res) => finish(key, cost, res));
    return finish(key, cost, r);
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
      await store.reset(normalizeKey(rawKey), plan);
    },
    policies: Object.freeze(config.policies.map(describePolicy)),
    shadowPolicies: Object.freeze(config.shadowPolicies.map(describePolicy)),
    mode,
    stats() {
      return {
        requests,
        limited: limitedCount,
        shadowLimited,
        shadowOnly,
        enforcedOnly,
        policies: all.map((p, i) => ({ name: p.name, shadow: p.shadow, rejected: rejected[i] as number })),
      };
    },
    resetStats() {
      requests = 0;
      limitedCount = 0;
      shadowLimited = 0;
      shadowOnly = 0;
      enforcedOnly = 0;
      rejected.fill(0);
    },
    async close() {
      if (config.ownsStore) await config.store.close?.();
    },
  };
}
