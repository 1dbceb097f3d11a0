/**
 * @module `createLimiter`: turns policies into decisions. Assembly only: it validates the options once,
 * compiles each plan (each its own store plan, its own Lua script on Redis), builds the parts of the
 * decision path (target, decision builder, failure guard and fallbacks, observer, counters, events) and
 * picks the path: a limiter with no concurrency policy never builds the leased one
 * (leases/leased-decisions.ts). The hot path itself is limiter/decide.ts.
 */

import { type WarningCode, warningEnabled } from '../diagnostics.js';
import { codedError, describeValue, RateLimitConfigError, seeDocs } from '../errors.js';
import { Fallback } from '../failure/fallback.js';
import { BudgetRestore, type RestoreReport } from '../failure/restore/budget-restore.js';
import { StoreGuard } from '../failure/store-guard.js';
import { LeaseKeeper } from '../leases/lease-keeper.js';
import { LeasedDecider, type LeasedParts } from '../leases/leased-decisions.js';
import { safeLog } from '../logging.js';
import { DecisionObserver, observerSetup } from '../observability/decision-observer.js';
import { StoreTimer } from '../observability/store-timer.js';
import { type LimiterConfig, type LimiterOptions, parseLimiterOptions } from '../options.js';
import { type CompiledPlan, compilePlan } from '../plans/compiled-plan.js';
import { MemoryStore } from '../stores/memory-store.js';
import { releaseState, takeState } from '../stores/state-claims.js';
import type { Store } from '../stores/store.js';
import type { Clock } from '../types.js';
import { DecisionBuilder } from './build-decision.js';
import { checkedClock } from './checked-clock.js';
import { Counters } from './counters.js';
import { Decider } from './decide.js';
import { LimiterEventHub } from './events.js';
import type { Limiter, LimiterStats } from './limiter.js';
import { type PeekRefundParts, peek, refund, watched } from './peek-refund.js';
import { ResetLog } from './reset-log.js';
import { SoloDecider } from './solo.js';
import { normalizeKey, Targets } from './target.js';

export { StoreTimeoutError } from '../failure/store-timeout-error.js';
export type { Limiter, LimiterEvents, LimiterKey, LimiterStats, PolicyStats } from './limiter.js';
export { MAX_KEY_LENGTH, normalizeKey } from './target.js';

/**
 * Each plan compiled once, and prepared in the store (RedisStore: its own Lua script); then, when the
 * limiter was `told` a logger or a `validate`, the store told where it logs, for its own warnings
 * (stores/store-log.ts).
 */
function compilePlans(config: LimiterConfig, told: boolean): Map<string, CompiledPlan> {
  const compiled = new Map<string, CompiledPlan>();
  const { store } = config;
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
  if (told) store.logTo?.(config.logger, config.validate);
  return compiled;
}

/** Creates a limiter. Options are validated here, once; see `LimiterOptions`. */
export function createLimiter(options: LimiterOptions): Limiter {
  return assembleLimiter(options, false);
}

/**
 * `createLimiter`, for a handler whose adapter may have made the limiter's `name` itself
 * (`HandlerContext.nameByAdapter`): then its state is claimed as an unnamed limiter's (stores/state-claims.ts).
 */
export function assembleLimiter(options: LimiterOptions, nameByAdapter: boolean): Limiter {
  const config = parseLimiterOptions(options, nameByAdapter);
  const { store, mode, logger } = config;
  const compiled = compilePlans(config, options.logger !== undefined || options.validate !== undefined);
  const defaultPlan = compiled.get(config.plans.defaultPlan) as CompiledPlan;
  const now = checkedClock(config.clock);
  const warns = (code: WarningCode): boolean => warningEnabled(config.validate, code);
  const targets = new Targets(
    compiled,
    defaultPlan,
    compiled.get(config.plans.unknownPlan) as CompiledPlan,
    logger,
    warns('WRN_RL_UNKNOWN_PLAN'),
    now,
  );
  const counters = new Counters();
  const events = new LimiterEventHub(logger);
  const builder = new DecisionBuilder(mode, config.shadowPolicies.length > 0, counters, {}, new ResetLog());
  const observer = new DecisionObserver(observerSetup(compiled, config, now));
  // A node that answers again is charged what the failure mode admitted meanwhile (Decider.carryAllOwed).
  let storeBack = (_node: string): void => {};
  const timed = new StoreTimer(store);
  const { guard, fallbacks } = failureMode(config, compiled, defaultPlan, builder, observer, events, now, timed, (node) => storeBack(node));
  const plain = new Decider({
    targets,
    builder,
    guard,
    store: timed,
    observer,
    fallbacks,
    counters,
    events,
    now,
    defaultCost: config.defaultCost,
    countsDegraded: config.onStoreError === 'local',
  });
  const restore = budgetRestore(config, defaultPlan, fallbacks, plain, timed, now, warns);
  storeBack = (node) => {
    // The restore first: its reads of the keys (`holdsNow`) go ahead of the outage's carries, which its snapshot does not count.
    restore?.nodeBack(node);
    plain.carryAllOwed(node);
  };
  const { paths, keeper } = decisionPaths(config, compiled, defaultPlan, now, warns, {
    plain,
    targets,
    builder,
    guard,
    timed,
    store,
    fallbacks,
    observer,
    counters,
    mode,
    defaultCost: config.defaultCost,
  });
  const { decide, check } = paths;
  // Built this far: the limiter now holds its key names on the store (options.ts checked them with this token).
  const owner = defaultPlan.storePlan.policies[0];
  if (owner !== undefined) takeState(owner, sharedStateLine(config));
  const ops: PeekRefundParts = { store, guard, targets, builder, now, defaultCost: config.defaultCost, refunded: refundedTo(fallbacks) };

  return {
    check,
    decide,
    peek(key, opts) {
      try {
        return peek(ops, key, opts);
      } catch (error) {
        return Promise.reject(error);
      }
    },
    refund: (charge, opts) => refund(ops, charge, opts),
    reset: resetter(store, guard, compiled, fallbacks, builder.resets, keeper),
    policies: defaultPlan.policies,
    shadowPolicies: defaultPlan.shadowPolicies,
    plans: new Map([...compiled].map(([name, cp]) => [name, cp.policies])),
    defaultPlan: defaultPlan.name,
    mode,
    name: config.name,
    on: (event, listener) => events.on(event, listener),
    stats: () => stats(counters, guard, compiled, observer),
    resetStats() {
      counters.reset();
      guard.resetStats();
      for (const cp of compiled.values()) cp.rejected.fill(0);
      observer.resetStats();
    },
    hotKeys: hotKeysReport(config, warns, observer),
    async close() {
      keeper?.close();
      restore?.close();
      observer.close();
      plain.close();
      guard.close();
      // Another limiter may take these key names now (stores/state-claims.ts).
      if (owner !== undefined) releaseState(store, owner);
      if (config.ownsStore) await store.close?.();
    },
  };
}

/** `limiter.decide`, and `limiter.check`, its answer as a promise. */
type DecisionPaths = Pick<SoloDecider, 'decide' | 'check'>;

/** `decide` and a `check` that answers with a promise of its answer, rejected when it throws (an invalid key). */
function awaited(decide: DecisionPaths['decide']): DecisionPaths {
  return {
    decide,
    check(key, opts) {
      try {
        return Promise.resolve(decide(key, opts));
      } catch (error) {
        return Promise.reject(error);
      }
    },
  };
}

/**
 * The decision path: the leased one (leases/leased-decisions.ts) when a plan has a concurrency policy,
 * which alone builds the lease keeper; else the solo or the plain one.
 */
function decisionPaths(
  config: LimiterConfig,
  compiled: ReadonlyMap<string, CompiledPlan>,
  defaultPlan: CompiledPlan,
  now: Clock,
  warns: (code: WarningCode) => boolean,
  parts: Omit<LeasedParts, 'keeper'>,
): { paths: DecisionPaths; keeper: LeaseKeeper | undefined } {
  if (![...compiled.values()].some((cp) => cp.leases))
    return { paths: soloOrPlain(config, defaultPlan, parts.plain, parts.builder), keeper: undefined };
  const guard = parts.guard;
  const keeper = new LeaseKeeper(compiled, {
    logger: config.logger,
    storeKind: config.store.kind,
    now,
    warns,
    aside: (key, call) => guard.aside(key, call),
    limiter: config.name,
    nodeOf: (key) => guard.nodeOfKey(key),
  });
  return { paths: awaited(new LeasedDecider({ ...parts, keeper }).decide), keeper };
}

/**
 * `limiter.hotKeys(n)`: the observer's report, `n` checked; with hot keys off, a warning once that they
 * are (an empty report would read as "nobody is hammering us").
 */
function hotKeysReport(config: LimiterConfig, warns: (code: WarningCode) => boolean, observer: DecisionObserver): Limiter['hotKeys'] {
  let warned = config.hotKeys !== false;
  return (n = 10) => {
    if (!Number.isSafeInteger(n) || n < 0) {
      throw codedError(RangeError, 'ERR_RL_INVALID_HOT_KEYS_COUNT', `hotKeys(n) takes a whole number n >= 0; received ${describeValue(n)}`);
    }
    if (!warned && warns('WRN_RL_HOT_KEYS_OFF')) {
      warned = true;
      safeLog(
        config.logger,
        'warn',
        { code: 'WRN_RL_HOT_KEYS_OFF' },
        'WRN_RL_HOT_KEYS_OFF: hotKeys() was asked of a limiter with hot keys off (the default); its report is empty. Pass hotKeys: true to turn them on',
      );
    }
    return observer.hotKeys(n);
  };
}

/** `limiter.reset(key)`: the key's state forgotten in the store and in each plan's failure mode. */
function resetter(
  store: Store,
  guard: StoreGuard,
  compiled: ReadonlyMap<string, CompiledPlan>,
  fallbacks: ReadonlyMap<CompiledPlan, Fallback>,
  resets: ResetLog,
  keeper: LeaseKeeper | undefined,
): Limiter['reset'] {
  return async (rawKey) => {
    const key = normalizeKey(rawKey);
    const endLeases = keeper?.ending(key);
    try {
      for (const cp of compiled.values()) {
        // Watched as a check's call is: a silent store rejects it with ERR_RL_STORE_TIMEOUT, not never.
        await watched(guard, key, store.reset(key, cp.storePlan));
        fallbacks.get(cp)?.reset(key);
      }
      // The store ended the key's leases held as it began: they are not put back as leases it lost.
      endLeases?.();
    } finally {
      // Once the store answered: a check sent before the reset was answered before it (one connection per
      // node keeps the order), so its receipt counts fewer resets and refunds nothing from now on; one sent
      // after went into the new state, and its receipt stays good.
      resets.record(key);
    }
  };
}

/**
 * Tells the failure mode's memory of a refund (Fallback.refunded), where a plan remembers: an outage
 * continues the key from the budget given back, and its next answer is not taken for a lost state.
 */
function refundedTo(fallbacks: ReadonlyMap<CompiledPlan, Fallback>): PeekRefundParts['refunded'] {
  if (![...fallbacks.values()].some((f) => f.remembers)) return undefined;
  return (cp, storeKey, cost, at) => fallbacks.get(cp)?.refunded(storeKey, cost, at);
}

/** Logs ERR_RL_SHARED_STATE found once the store answered (stores/state-claims.ts `confirmState`): the limiter is serving, nothing is thrown. */
function sharedStateLine(config: LimiterConfig): (message: string) => void {
  const code = 'ERR_RL_SHARED_STATE';
  return (message) =>
    safeLog(
      config.logger,
      'error',
      { code, store: config.store.kind },
      `${code}: 'name' ${message} (found once the store answered: another store object reaches the same keys; the limiter runs on) ${seeDocs(code)}`,
    );
}

/** Charges a store that lost its state again what this limiter remembers (failure/restore/budget-restore.ts), where it can. */
function budgetRestore(
  config: LimiterConfig,
  defaultPlan: CompiledPlan,
  fallbacks: ReadonlyMap<CompiledPlan, Fallback>,
  plain: Decider,
  timed: StoreTimer,
  now: Clock,
  warns: (code: WarningCode) => boolean,
): BudgetRestore | undefined {
  const report: RestoreReport | undefined = warns('WRN_RL_BUDGETS_RESTORED')
    ? (restore) => {
        const code = 'WRN_RL_BUDGETS_RESTORED';
        const store = config.store.kind;
        if ('behind' in restore) {
          const msg = `${code}: the store answers from a new server (a restart, a failover) that holds less than it had counted (an older snapshot, a replica behind its master); each key is charged the difference as it is next answered ${seeDocs(code)}`;
          const { node } = restore;
          return safeLog(config.logger, 'warn', { code, store, ...(node === undefined ? {} : { node }), behind: true }, msg);
        }
        const { keys, node } = restore;
        const msg = `${code}: the store had lost its state (a restart without persistence, FLUSHALL, a failover to an empty replica); what ${keys} ${keys === 1 ? 'key' : 'keys'} had used by this process's last answers was charged again ${seeDocs(code)}`;
        safeLog(config.logger, 'warn', { code, store, ...(node === undefined ? {} : { node }), keys }, msg);
      }
    : undefined;
  return BudgetRestore.of(config.store, defaultPlan, fallbacks, plain.guard, timed, plain.sure, now, report);
}

/** The common limiter's own path (solo.ts) where it applies, else the general one. */
function soloOrPlain(config: LimiterConfig, defaultPlan: CompiledPlan, plain: Decider, builder: DecisionBuilder): DecisionPaths {
  const { store } = config;
  const solo =
    defaultPlan.all.length === 1 &&
    config.hotKeys === false &&
    store instanceof MemoryStore &&
    Object.getPrototypeOf(store) === MemoryStore.prototype;
  return solo ? new SoloDecider(plain, store, defaultPlan, builder, config.defaultCost) : awaited(plain.decide);
}

/** The failure mode: the guard that watches the store (breaker, watchdog, timeouts) and each plan's fallback answers. */
function failureMode(
  config: LimiterConfig,
  compiled: ReadonlyMap<string, CompiledPlan>,
  defaultPlan: CompiledPlan,
  builder: DecisionBuilder,
  observer: DecisionObserver,
  events: LimiterEventHub,
  now: Clock,
  timed: StoreTimer,
  storeBack: (node: string) => void,
): { guard: StoreGuard; fallbacks: Map<CompiledPlan, Fallback> } {
  const { store, logger } = config;
  const guard = new StoreGuard({
    store,
    plan: defaultPlan.storePlan,
    storeTimeoutMs: config.storeTimeoutMs,
    breaker: config.breaker,
    logger,
    onStoreError: config.onStoreError,
    warnBreaker: warningEnabled(config.validate, 'WRN_RL_BREAKER_OPEN'),
    warnRecovered: warningEnabled(config.validate, 'WRN_RL_BREAKER_CLOSED'),
    now,
    onBreaker: (state, node) => {
      if (state === 'closed') storeBack(node);
      observer.storeState(state, node);
      events.emit('breaker', { state, node });
    },
    onTimedOut: (call) => timed.timedOut(call),
  });
  // The failure mode per plan: each answers with its plan's policies (and their local twins).
  const fallbacks = new Map<CompiledPlan, Fallback>();
  for (const cp of compiled.values()) {
    const planConfig = { ...config, policies: cp.all.slice(0, cp.enforcedCount), localPolicies: cp.localPolicies };
    fallbacks.set(
      cp,
      new Fallback(planConfig, (key, cost, r, policies, degraded) => builder.build(key, cost, r, cp, policies, degraded, 'count')),
    );
  }
  return { guard, fallbacks };
}

/** `limiter.stats()`: the counters, the guard's outages, each policy's rejections and the shadow record. */
function stats(
  counters: Counters,
  guard: StoreGuard,
  compiled: ReadonlyMap<string, CompiledPlan>,
  observer: DecisionObserver,
): LimiterStats {
  return {
    requests: counters.requests,
    limited: counters.limited,
    shadowLimited: counters.shadowLimited,
    shadowOnly: counters.shadowOnly,
    enforcedOnly: counters.enforcedOnly,
    storeErrors: counters.storeErrors,
    outages: guard.outages,
    policies: [...compiled.values()].flatMap((cp) =>
      cp.all.map((p, i) => ({ name: p.name, plan: cp.name, shadow: p.shadow, rejected: cp.rejected[i] as number })),
    ),
    shadow: observer.shadowStats(),
  };
}
