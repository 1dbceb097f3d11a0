/**
 * @module createLimiter: turns policies into decisions. One store call per request applies every
 * policy (enforced and shadow) atomically; the limiter picks the binding policy, builds the Decision,
 * keeps the counters a team reads to compare shadow policies with enforced ones. When the store cannot
 * decide, failure/ judges why (one key, or the node that serves it) and answers by the failure mode.
 */
import { createHash } from 'node:crypto';
import type { CompiledPolicy } from '../algorithms/kernel.js';
import { monotonicClock } from '../clock.js';
import { costUnits, DecisionImpl, Group, readGroup, Verdict } from '../decision.js';
import { codedError, describeValue, RateLimitConfigError } from '../errors.js';
import { Fallback } from '../failure/fallback.js';
import type { BreakerState } from '../failure/node-health.js';
import { CallFailure, StoreGuard } from '../failure/store-guard.js';
import { fromMilli, MILLI, requestCostToMilli, toMilli } from '../internal/fixed-point.js';
import { LeaseKeeper, leftQueue, waitsOut } from '../leases/lease-keeper.js';
import { aborted } from '../leases/lease-queue.js';
import { safeLog } from '../logging.js';
import { DecisionObserver, observerSetup } from '../observability/decision-observer.js';
import type { HotKeysReport } from '../observability/hot-keys.js';
import type { ShadowPolicyStats } from '../observability/shadow-stats.js';
import { StoreTimer } from '../observability/store-timer.js';
import { type LimiterConfig, type LimiterOptions, parseLimiterOptions } from '../options.js';
import { type CompiledPlan, compilePlan, keysFor, Receipt, type RefundResult } from '../plans/compiled-plan.js';
import {
  F_ALLOWED,
  F_CHARGED,
  F_EXCEEDS,
  isPromiseLike,
  keyAt,
  R_DELAY,
  R_FLAGS,
  R_POSITION,
  R_REMAINING,
  R_RESET,
  R_RETRY_AFTER,
  RESULT_STRIDE,
  type Store,
  type StoreKey,
  type StorePlan,
  type StoreResult,
} from '../stores/store.js';
import type {
  ChargeReceipt,
  CheckOptions,
  Decision,
  PolicyAlgorithm,
  PolicyDescription,
  PolicyResult,
  QuotaUnit,
  RefundOptions,
  ShadowVerdict,
} from '../types.js';

export { StoreTimeoutError } from '../failure/store-timeout-error.js';

/** Keys longer than this are replaced by their SHA-256, so a store never holds a huge key. */
export const MAX_KEY_LENGTH = 256;

/** Counters of one policy. */
export interface PolicyStats {
  readonly name: string;
  /** The plan the policy belongs to (`'default'` for the one-plan form). */
  readonly plan: string;
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

/**
 * What a check is decided for: one key for every policy, or an object from policy name to key (several
 * keys, one all-or-nothing decision: `{ 'per-ip': ip, 'per-account': account }`), which must name a key
 * for every policy of the plan that applies.
 */
export type LimiterKey = string | Readonly<Record<string, string>>;

export interface Limiter {
  /** Decides a request of `options.cost` (default: the limiter's `cost`, 1) for `key`, under `options.plan`. */
  check(key: LimiterKey, options?: CheckOptions): Promise<Decision>;
  /**
   * Same as `check`, but returns the Decision itself when the store answers synchronously
   * (MemoryStore), saving a microtask per request; a Promise otherwise. Throws on bad input.
   */
  decide(key: LimiterKey, options?: CheckOptions): Decision | Promise<Decision>;
  /**
   * The Decision `check` would answer now, charging nothing (for dashboards and "how many are left"
   * endpoints). Not counted in `stats()`; a store failure rejects instead of answering by `onStoreError`.
   */
  peek(key: LimiterKey, options?: CheckOptions): Promise<Decision>;
  /**
   * Gives back a charge: `decision.receipt` (or the decision itself), all of it or `options.cost` of it,
   * atomically, never above capacity, and only to the state the charge went into (a window that has
   * rolled over, or a bucket that has refilled past the charge, is left alone). A decision that charged
   * nothing refunds nothing. Each receipt gives back at most its cost, however often it is passed.
   */
  refund(charge: Decision | ChargeReceipt, options?: RefundOptions): Promise<RefundResult>;
  /** Forgets `key` in every policy (enforced and shadow) of every plan. */
  reset(key: string): Promise<void>;
  /** The default plan's enforced policies, in order. */
  readonly policies: readonly PolicyDescription[];
  /** The shadow policies, in order. */
  readonly shadowPolicies: readonly PolicyDescription[];
  /** Every plan's enforced policies, by plan name (one plan, `'default'`, for the `policies` form). */
  readonly plans: ReadonlyMap<string, readonly PolicyDescription[]>;
  /** The plan a check that names none applies. */
  readonly defaultPlan: string;
  readonly mode: 'enforce' | 'shadow';
  /** Subscribes to an event; returns the function that unsubscribes. Listener errors are logged, not thrown. */
  on<E extends keyof LimiterEvents>(event: E, listener: (payload: LimiterEvents[E]) => void): () => void;
  stats(): LimiterStats;
  resetStats(): void;
  /** The `n` (default 10) keys rejected most, and most often near their limit, recently (see HotKeysReport), with the `hotKeys` option on; off (the default), an empty report of size 0 and, the first time, `WRN_RL_HOT_KEYS_OFF`. */
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
  return cost === undefined ? fallback : costToMilli(cost);
}

/** A check's own cost, in milli-units; out of `costOf`, for the decision path's inlining budget (create-limiter.ts, `decideAt`). */
function costToMilli(cost: number): number {
  // A cost past exact arithmetic (Infinity, 1e13) is OVERSIZE_MILLI: above every capacity, so a 413.
  const milli = cost === 1 ? MILLI : requestCostToMilli(cost);
  if (milli < 0) {
    throw codedError(
      RangeError,
      'ERR_RL_INVALID_COST',
      `cost must be a positive finite multiple of 1/1000 (e.g. 1, 2.5, 0.001); received ${describeValue(cost)}`,
    );
  }
  return milli;
}

/**
 * Lease ids, unique within the process (limiters sharing a store never end each other's leases); a
 * RedisStore prefixes them with its own random id, unique across processes.
 */
let nextLease = 1;

const NOTHING_REFUNDED: RefundResult = Object.freeze({ refunded: false, policies: Object.freeze([]) });

/** Creates a limiter. Options are validated here, once; see `LimiterOptions`. */
/** The identity, for `StoreGuard.watch` callers that want the result or the failure as it is. */
function same<T>(value: T): T {
  return value;
}

export function createLimiter(options: LimiterOptions): Limiter {
  const config: LimiterConfig = parseLimiterOptions(options);
  const { store, clock, mode, defaultCost, logger, onStoreError } = config;
  // Each plan compiled once: its own StorePlan, prepared once (RedisStore: its own Lua script).
  const compiled = new Map<string, CompiledPlan>();
  for (const [name, enforcedPolicies] of config.plans.plans) {
    const cp = compilePlan(name, enforcedPolicies, config.shadowPolicies, config.localPlans.get(name) ?? []);
    store.prepare?.(cp.storePlan);
    if (cp.leases && (store.release === undefined || store.renew === undefined)) {
      throw new RateLimitConfigError(
        'ERR_RL_STORE_UNSUPPORTED',
        'store',
        `has no release() and renew(), which concurrency policies need (plan '${name}'); MemoryStore and RedisStore have them`,
        store.kind,
      );
    }
    compiled.set(name, cp);
  }
  const leases = new LeaseKeeper(compiled.values(), logger, store.kind, () => now());
  const defaultPlan = compiled.get(config.plans.defaultPlan) as CompiledPlan;
  const unknownPlan = compiled.get(config.plans.unknownPlan) as CompiledPlan;
  /** Unknown plan names already warned about (bounded: a flood of names cannot grow it without limit). */
  const unknownWarned = new Set<string>();
  /** `hotKeys()` was asked of this limiter with hot keys off, and said so once. */
  let hotKeysOffWarned = false;
  const hasShadow = config.shadowPolicies.length > 0;
  const shadowMode = mode === 'shadow';
  const enforced = new Group();
  const candidates = new Group();
  /** Identifies this limiter's receipts. */
  const issuer = {};
  const observer = new DecisionObserver(observerSetup(compiled, config.shadowPolicies, mode, store.kind, now, config.hotKeys));
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
    plan: defaultPlan.storePlan,
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
  // The failure mode per plan: each answers with its plan's policies (and their local twins).
  const fallbacks = new Map<CompiledPlan, Fallback>();
  for (const cp of compiled.values()) {
    const planConfig = { ...config, policies: cp.all.slice(0, cp.enforcedCount), localPolicies: cp.localPolicies };
    fallbacks.set(cp, new Fallback(planConfig, (key, cost, r, policies, degraded) => finish(key, cost, r, cp, policies, degraded)));
  }

  let requests = 0;
  let limitedCount = 0;
  let shadowLimited = 0;
  let shadowOnly = 0;
  let enforcedOnly = 0;
  let storeErrors = 0;

  /** The plan a check names, else the default; the lookup out of line, for the decision path's inlining budget (create-limiter.ts, `decideAt`). */
  function planOf(opts: CheckOptions | undefined): CompiledPlan {
    const name = opts?.plan;
    return name === undefined ? defaultPlan : namedPlan(name);
  }

  function namedPlan(name: string): CompiledPlan {
    const cp = compiled.get(name);
    if (cp !== undefined) return cp;
    if (typeof name !== 'string') {
      throw codedError(TypeError, 'ERR_RL_INVALID_PLAN', `the plan must be a plan name (a string); received ${describeValue(name)}`);
    }
    if (!unknownWarned.has(name) && unknownWarned.size < 1000) {
      unknownWarned.add(name);
      safeLog(
        logger,
        'warn',
        { code: 'WRN_RL_UNKNOWN_PLAN', plan: name, appliedPlan: unknownPlan.name, plans: [...compiled.keys()] },
        'WRN_RL_UNKNOWN_PLAN: a check named a plan that does not exist; the unknownPlan fallback applies',
      );
    }
    return unknownPlan;
  }

  function now(): number {
    // The built-in clock needs no checking: it always returns integer ms.
    return clock === monotonicClock ? monotonicClock() : checkedNow();
  }

  /** `now` from a clock of the caller's, checked; out of `now`, for the decision path's inlining budget (create-limiter.ts, `decideAt`). */
  function checkedNow(): number {
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
  function finish(
    key: string,
    cost: number,
    r: StoreResult,
    cp: CompiledPlan,
    policies: readonly CompiledPolicy[],
    degraded: boolean,
    count = true,
  ): DecisionImpl {
    if (count) requests += 1;
    if (policies.length === 1) return finishSingle(key, cost, r, cp, policies[0] as CompiledPolicy, degraded, count);
    const enforcedCount = cp.enforcedCount;
    const rejected = cp.rejected;
    readGroup(enforced, r, policies, 0, enforcedCount);
    const limited = !enforced.charged;
    if (limited && count) limitedCount += 1;
    for (let i = 0; count && i < policies.length; i++) {
      if (((r[i * RESULT_STRIDE + R_FLAGS] as number) & F_ALLOWED) === 0) rejected[i] = (rejected[i] as number) + 1;
    }
    let shadow: ShadowVerdict | undefined;
    if (hasShadow) {
      readGroup(candidates, r, policies, enforcedCount, policies.length);
      const b = candidates.binding as PolicyResult;
      shadow = new Verdict(candidates.charged, candidates.reason, b.name, b.remaining, candidates.retryAfterMs, candidates.results);
      if (!count) {
        // A peek: no counters.
      } else if (!candidates.charged) {
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
  function finishSingle(
    key: string,
    cost: number,
    r: StoreResult,
    cp: CompiledPlan,
    p: CompiledPolicy,
    degraded: boolean,
    count: boolean,
  ): DecisionImpl {
    const flags = r[R_FLAGS] as number;
    const limited = (flags & F_CHARGED) === 0;
    const exceeds = (flags & F_EXCEEDS) !== 0;
    if (limited && count) {
      limitedCount += 1;
      cp.rejected[0] = (cp.rejected[0] as number) + 1;
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
  function skipped(t: Target, cost: number, at: number, node: string, lease?: number): Decision {
    storeErrors += 1;
    const d = (fallbacks.get(t.cp) as Fallback).answer(t.key, cost, at, guard.retryMs(node, at), t.storeKey, lease);
    if (onStoreError !== 'local') requests += 1;
    (d as DecisionImpl).plan = t.cp.name;
    return d;
  }

  /** The failure mode's answer for a check the store failed on. */
  function failed(t: Target, cost: number, at: number, failure: CallFailure, lease?: number): Decision {
    if (failure.scope === 'key') guard.logKeyFailure(t.key, failure);
    emit('store-error', { error: failure.error, key: t.key, scope: failure.scope, node: failure.node });
    return skipped(t, cost, at, failure.node, lease);
  }

  /** The plan, the store key and the Decision's `key` text of a check. */
  interface Target {
    readonly cp: CompiledPlan;
    readonly storeKey: StoreKey;
    readonly key: string;
  }

  function target(rawKey: LimiterKey, opts: CheckOptions | undefined): Target {
    const cp = planOf(opts);
    if (typeof rawKey !== 'object' || rawKey === null) {
      const key = normalizeKey(rawKey as string);
      return { cp, storeKey: key, key };
    }
    const { storeKey, text } = keysFor(cp, rawKey, normalizeKey);
    return { cp, storeKey, key: text };
  }

  /**
   * Labels a decision with its plan and, when it charged, a receipt for `refund()`. The receipt is built
   * out of line: `decideAt` inlines this, and a rejection never needs the receipt's loop.
   */
  function label(d: DecisionImpl, t: Target, cost: number, r: StoreResult, at: number): Decision {
    d.plan = t.cp.name;
    // `=== false`, not `!`: a compare with the boolean, where `!` compiles to a full truthiness test (DecisionObserver.observe).
    if (d.limited === false && d.degraded === false) d.receipt = receiptOf(t, cost, r, at);
    return d;
  }

  function receiptOf(t: Target, cost: number, r: StoreResult, at: number): Receipt {
    const cp = t.cp;
    const n = cp.all.length;
    // RedisStore answers with the `now` it used after the per-policy numbers; the memory store used ours.
    const storeNow = r.length > n * RESULT_STRIDE ? (r[n * RESULT_STRIDE] as number) : at;
    // Per policy its mark, then per policy its position (Store.refund); NaN for a policy not charged.
    const marks: number[] = new Array(2 * n);
    const none = Number.NaN;
    for (let i = 0, o = 0; i < n; i++, o += RESULT_STRIDE) {
      const charged = cp.refundable[i] === 1 && ((r[o + R_FLAGS] as number) & F_CHARGED) !== 0;
      marks[i] = charged ? storeNow + (r[o + R_RESET] as number) : none;
      marks[n + i] = charged ? (r[o + R_POSITION] as number) : none;
    }
    return new Receipt(issuer, cp, t.storeKey, costUnits(cost), cost, marks);
  }

  /**
   * Decides `t` at `at` for a plan without concurrency policies. A decision made at once (a synchronous
   * store, a call skipped by the breaker or failed) comes back unobserved: `decideNow` passes it to the
   * observer. On an asynchronous store the decision is built and observed in the step that settles the
   * store's call (StoreGuard.watch): one promise per check, no `.then` after it.
   *
   * The decision path's inlining budget: V8 inlines the most frequent calls first and charges each inlined
   * callee's whole bytecode, rare branches included, to the caller's budget (920 bytes on Node 20). Spent
   * on anything else, it leaves the store's `apply` and its kernel out of line. So the observer runs in
   * `decideNow`, and the functions this one inlines keep their rare branches (a named plan, a given cost,
   * a caller's clock, an unhealthy node, a lease, a new key) out of line. Check a change with
   * `node --trace-turbo-inlining`: `decide` and `decideAt` should inline the same functions as the
   * build with the observer's hooks cut (bench/README.md, section O).
   */
  function decideAt(t: Target, cost: number, at: number, opts: CheckOptions | undefined): Decision | Promise<Decision> {
    const node = guard.nodeOf(keyAt(t.storeKey, 0));
    if (!guard.allow(node, at)) return skipped(t, cost, at, node);
    const seq = guard.next();
    let r: StoreResult | Promise<StoreResult>;
    try {
      r = timedStore.apply(t.storeKey, t.cp.storePlan, cost, at);
    } catch (error) {
      timedStore.threw();
      return failed(t, cost, at, guard.failure(node, seq, error, false));
    }
    if (isPromiseLike(r)) {
      return guard.watch(
        node,
        seq,
        r,
        (o) => observer.observe(label(finish(t.key, cost, o, t.cp, t.cp.all, false), t, cost, o, at), opts, at),
        (f) => observer.observe(failed(t, cost, at, f), opts, at),
      );
    }
    guard.answered(node);
    return label(finish(t.key, cost, r, t.cp, t.cp.all, false), t, cost, r, at);
  }

  /** Decides `t` now, observed (metrics, diagnostics channel, hot keys, shadow record). */
  function decideNow(t: Target, cost: number, opts: CheckOptions | undefined): Decision | Promise<Decision> {
    const at = now();
    if (t.cp.leases) return decideLeased(t, cost, at, opts, false);
    const d = decideAt(t, cost, at, opts);
    return isPromiseLike(d) ? d : observer.observe(d, opts, at);
  }

  /**
   * `decideAt` for a plan with concurrency policies: the store call carries a lease id, and an admitted
   * decision gets `release` and `renew` for its leases (in the store, or in the local fallback's store
   * when that answered). `quiet`: neither counted nor observed (a queued request's attempts; `account`
   * counts the last one).
   */
  function decideLeased(t: Target, cost: number, at: number, opts: CheckOptions | undefined, quiet: boolean): Decision | Promise<Decision> {
    const lease = nextLease++;
    const seen = (d: Decision): Decision => (quiet ? d : observer.observe(d, opts, at));
    const node = guard.nodeOf(keyAt(t.storeKey, 0));
    if (!guard.allow(node, at)) return seen(holding(skipped(t, cost, at, node, lease), t, lease));
    const seq = guard.next();
    let r: StoreResult | Promise<StoreResult>;
    try {
      r = timedStore.apply(t.storeKey, t.cp.storePlan, cost, at, lease);
    } catch (error) {
      timedStore.threw();
      return seen(holding(failed(t, cost, at, guard.failure(node, seq, error, false), lease), t, lease));
    }
    const done = (o: StoreResult): Decision =>
      seen(holding(label(finish(t.key, cost, o, t.cp, t.cp.all, false, !quiet), t, cost, o, at), t, lease));
    const failedLeased = (f: CallFailure): Decision => {
      leases.abandon(store, t.storeKey, t.cp.storePlan, lease, at);
      return seen(holding(failed(t, cost, at, f, lease), t, lease));
    };
    if (isPromiseLike(r)) return guard.watch(node, seq, r, done, failedLeased);
    guard.answered(node);
    return done(r);
  }

  /** Gives an admitted decision of a leased plan its `release` and `renew`. */
  function holding(d: Decision, t: Target, lease: number): Decision {
    if (d.limited || !(d instanceof DecisionImpl)) return d;
    let s: Store = store;
    let plan: StorePlan = t.cp.storePlan;
    if (d.degraded) {
      // 'local' took the lease in its own store; 'open' admitted without one.
      const local = (fallbacks.get(t.cp) as Fallback).leases;
      if (local === undefined) return d;
      s = local.store;
      plan = local.plan;
    }
    leases.hold(d, t.cp, t.storeKey, lease, s, plan, queueId(t));
    return d;
  }

  /** The queue a request of `t` waits in: its plan and key. */
  function queueId(t: Target): string {
    return `${t.cp.name}\n${t.key}`;
  }

  /**
   * A request of a plan whose concurrency policies may queue: decided at once when no one waits for its
   * key here and it gets a lease; else it waits its turn (leases/lease-queue.ts). Counted and observed
   * once, with its last decision.
   */
  async function decideQueued(t: Target, cost: number, opts: CheckOptions | undefined): Promise<Decision> {
    const queue = t.cp.queue as NonNullable<CompiledPlan['queue']>;
    const id = queueId(t);
    const attempt = async (): Promise<Decision> => {
      await guard.starting();
      return decideLeased(t, cost, now(), opts, true);
    };
    let d: Decision | undefined;
    let firstRetryMs = 0;
    if (leases.queues.waiting(id) === 0) {
      d = await attempt();
      if (!waitsOut(d, t.cp) || aborted(opts?.signal)) return account(d, t.cp, opts);
      firstRetryMs = d.retryAfterMs;
    }
    if (aborted(opts?.signal)) return account(d ?? leftQueue(t.cp, t.key, cost, mode), t.cp, opts);
    if (leases.queues.waiting(id) >= queue.size) return account(d ?? (await attempt()), t.cp, opts);
    leases.countQueued(t.cp, 1);
    try {
      await leases.queues.wait(id, now() + queue.timeoutMs, now, opts?.signal, firstRetryMs, async () => {
        d = await attempt();
        return { done: !waitsOut(d, t.cp), retryMs: d.retryAfterMs };
      });
    } finally {
      leases.countQueued(t.cp, -1);
    }
    if (d !== undefined) return account(d, t.cp, opts);
    // Never at the head: a client that went away is refused without a lease; a timeout tries once more.
    return account(aborted(opts?.signal) ? leftQueue(t.cp, t.key, cost, mode) : await attempt(), t.cp, opts);
  }

  /** Counts and observes a decision made quietly (`decideQueued`); degraded answers counted themselves. */
  function account(d: Decision, cp: CompiledPlan, opts: CheckOptions | undefined): Decision {
    if (!d.degraded) {
      requests += 1;
      if (d.limited) limitedCount += 1;
      d.policies.forEach((r, i) => {
        if (!r.allowed) cp.rejected[i] = (cp.rejected[i] as number) + 1;
      });
      const shadow = d.shadow;
      if (shadow !== undefined) {
        shadow.policies.forEach((r, i) => {
          if (!r.allowed) cp.rejected[cp.enforcedCount + i] = (cp.rejected[cp.enforcedCount + i] as number) + 1;
        });
        if (!shadow.allowed) {
          shadowLimited += 1;
          if (!d.limited) shadowOnly += 1;
        } else if (d.limited) {
          enforcedOnly += 1;
        }
      }
    }
    // A queued request's decision time is not at hand here (its last attempt made it): the observer's clock.
    return observer.observe(d, opts, observer.now());
  }

  function decide(rawKey: LimiterKey, opts?: CheckOptions): Decision | Promise<Decision> {
    const t = target(rawKey, opts);
    const cost = costOf(opts, defaultCost);
    if (t.cp.queue !== undefined && !shadowMode) return decideQueued(t, cost, opts);
    const starting = guard.starting();
    if (starting !== undefined) return starting.then(() => decideNow(t, cost, opts));
    return decideNow(t, cost, opts);
  }

  async function peek(rawKey: LimiterKey, opts?: CheckOptions): Promise<Decision> {
    const t = target(rawKey, opts);
    const cost = costOf(opts, defaultCost);
    if (store.peek === undefined) {
      throw codedError(
        TypeError,
        'ERR_RL_STORE_UNSUPPORTED',
        `the '${store.kind}' store has no peek(); MemoryStore and RedisStore have one`,
      );
    }
    await guard.starting();
    const at = now();
    const node = guard.nodeOf(keyAt(t.storeKey, 0));
    const pending = store.peek(t.storeKey, t.cp.storePlan, cost, at);
    const r = isPromiseLike(pending)
      ? await guard.watch<StoreResult, StoreResult | CallFailure>(node, guard.next(), pending, same, same)
      : pending;
    if (r instanceof CallFailure) throw r.error;
    const d = finish(t.key, cost, r, t.cp, t.cp.all, false, false);
    d.plan = t.cp.name;
    return d;
  }

  async function refund(charge: Decision | ChargeReceipt, opts?: RefundOptions): Promise<RefundResult> {
    const given =
      charge instanceof DecisionImpl || (typeof charge === 'object' && charge !== null && 'allowed' in charge)
        ? (charge as Decision).receipt
        : charge;
    if (given === undefined) return NOTHING_REFUNDED;
    const receipt = Receipt.open(given, issuer);
    if (receipt === undefined) {
      throw codedError(
        TypeError,
        'ERR_RL_INVALID_RECEIPT',
        `refund() takes a Decision or decision.receipt from this limiter's check(); received ${describeValue(charge)}`,
      );
    }
    if (receipt.left <= 0) return NOTHING_REFUNDED;
    const cost = opts?.cost === undefined ? receipt.left : toMilli(opts.cost);
    if (!(cost > 0) || cost > Math.round(receipt.cost * MILLI)) {
      throw codedError(
        RangeError,
        'ERR_RL_INVALID_REFUND_COST',
        `a refund's cost must be a positive multiple of 1/1000, at most the cost charged (${receipt.cost}); received ${describeValue(opts?.cost)}`,
      );
    }
    const give = Math.min(cost, receipt.left);
    if (store.refund === undefined) {
      throw codedError(
        TypeError,
        'ERR_RL_STORE_UNSUPPORTED',
        `the '${store.kind}' store has no refund(); MemoryStore and RedisStore have one`,
      );
    }
    // What the receipt gave back before (Store.refund: the last of the marks).
    const marks = [...receipt.marks, Math.round(receipt.cost * MILLI) - receipt.left];
    // Spent before the call: a refund whose answer is lost is never sent twice.
    receipt.spend(give);
    const cp = receipt.compiled;
    const node = guard.nodeOf(keyAt(receipt.key, 0));
    const pending = store.refund(receipt.key, cp.storePlan, give, marks, now());
    const done = isPromiseLike(pending)
      ? await guard.watch<ArrayLike<number>, ArrayLike<number> | CallFailure>(node, guard.next(), pending, same, same)
      : pending;
    if (done instanceof CallFailure) throw done.error;
    const names: string[] = [];
    for (let i = 0; i < cp.all.length; i++) if (done[i] === 1) names.push((cp.all[i] as CompiledPolicy).name);
    return Object.freeze({ refunded: names.length > 0, policies: Object.freeze(names) });
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
    peek(key, opts) {
      try {
        return peek(key, opts);
      } catch (error) {
        return Promise.reject(error);
      }
    },
    refund,
    async reset(rawKey) {
      const key = normalizeKey(rawKey);
      for (const cp of compiled.values()) {
        await store.reset(key, cp.storePlan);
        fallbacks.get(cp)?.reset(key);
      }
    },
    policies: defaultPlan.policies,
    shadowPolicies: defaultPlan.shadowPolicies,
    plans: new Map([...compiled].map(([name, cp]) => [name, cp.policies])),
    defaultPlan: defaultPlan.name,
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
        policies: [...compiled.values()].flatMap((cp) =>
          cp.all.map((p, i) => ({ name: p.name, plan: cp.name, shadow: p.shadow, rejected: cp.rejected[i] as number })),
        ),
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
      for (const cp of compiled.values()) cp.rejected.fill(0);
      observer.resetStats();
    },
    hotKeys(n = 10) {
      if (config.hotKeys === false && !hotKeysOffWarned) {
        // Hot keys are opt-in: an empty report would otherwise read as "nobody is hammering us".
        hotKeysOffWarned = true;
        safeLog(
          logger,
          'warn',
          { code: 'WRN_RL_HOT_KEYS_OFF' },
          'WRN_RL_HOT_KEYS_OFF: hotKeys() was asked of a limiter with hot keys off (the default); its report is empty. Pass hotKeys: true to turn them on',
        );
      }
      return observer.hotKeys(n);
    },
    async close() {
      leases.close();
      observer.close();
      for (const f of fallbacks.values()) f.close();
      guard.close();
      if (config.ownsStore) await store.close?.();
    },
  };
}
