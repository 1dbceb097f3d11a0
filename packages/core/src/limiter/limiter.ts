/**
 * @module What a limiter is to its callers: the `Limiter` interface, its events and its counters. Types
 * only; `createLimiter` (create-limiter.ts) assembles one.
 */
import type { BreakerState } from '../failure/node-health.js';
import type { HotKeysReport } from '../observability/hot-keys.js';
import type { ShadowPolicyStats } from '../observability/shadow-stats.js';
import type { RefundResult } from '../plans/compiled-plan.js';
import type { ChargeReceipt, CheckOptions, Decision, PolicyDescription, RefundOptions } from '../types.js';

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
   * A store call of this check failed (threw, rejected or timed out) and the failure mode answered: one
   * event per failed call, not per degraded decision (while a node's breaker is open its checks call
   * nothing and emit none; count degraded decisions with `stats().storeErrors` or the metrics); also one
   * per new lease refused to the store while held leases are not back (the restore's error). `error`
   * is what the store threw (or a StoreTimeoutError); `scope` says whose fault: `'key'` (this key's
   * state, other keys unaffected) or `'node'` (the node that serves it, named by `node`).
   */
  'store-error': { readonly error: unknown; readonly key: string; readonly scope: 'key' | 'node'; readonly node: string };
  /** The circuit breaker of a store node changed state. */
  breaker: { readonly state: BreakerState; readonly node: string };
}

/**
 * What a check is decided for: one key for every policy, or an object from policy name to key (several
 * keys, one all-or-nothing decision: `{ 'per-ip': ip, 'per-account': account }`), which must name a key
 * for every policy of the plan that applies. Any string: one longer than `MAX_KEY_LENGTH`, beginning with
 * `sha256:` or holding an unpaired surrogate is stored (and reported) as `sha256:<digest>`, one to one.
 */
export type LimiterKey = string | Readonly<Record<string, string>>;

/** A limiter: decides checks by its policies (`check`, `decide`), reads and gives back budget (`peek`, `refund`), and reports (`stats`, `on`, `hotKeys`). */
export interface Limiter {
  /** Decides a request of `options.cost` (default: the limiter's `cost`, 1) for `key`, under `options.plan`. */
  check(key: LimiterKey, options?: CheckOptions): Promise<Decision>;
  /**
   * Same as `check`, but returns the Decision itself when the store answers synchronously
   * (MemoryStore) and the request does not wait in a concurrency queue, saving a microtask per request;
   * a Promise otherwise. Throws on bad input.
   */
  decide(key: LimiterKey, options?: CheckOptions): Decision | Promise<Decision>;
  /**
   * The Decision `check` would answer now, charging nothing (for dashboards and "how many are left"
   * endpoints): its verdict, wait and delay, with `remaining` and `resetMs` of the state as it stands
   * (of the policy with the least left, whatever the cost).
   * Not counted in `stats()`; a store failure rejects instead of answering by `onStoreError`.
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
  /** The `name` it was given (its key names on the store, the `limiter` label of its metrics); undefined without one. */
  readonly name: string | undefined;
  /** Subscribes to an event; returns the function that unsubscribes. Listener errors are logged, not thrown. */
  on<E extends keyof LimiterEvents>(event: E, listener: (payload: LimiterEvents[E]) => void): () => void;
  stats(): LimiterStats;
  resetStats(): void;
  /** The `n` (default 10) keys rejected most, and most often near their limit, recently (see HotKeysReport), with the `hotKeys` option on; off (the default), an empty report of size 0 and, the first time, `WRN_RL_HOT_KEYS_OFF`; throws ERR_RL_INVALID_HOT_KEYS_COUNT unless `n` is a whole number >= 0. */
  hotKeys(n?: number): HotKeysReport;
  /** Closes the store if the limiter created it, and the local fallback store; refuses the requests waiting in a concurrency queue. */
  close(): Promise<void>;
}
