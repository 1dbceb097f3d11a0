/**
 * @module Where a limiter meets its store's failures: which node serves a key, whether that node may be
 * called now (its NodeHealth), the watchdog over pending calls, the wait for the store's first
 * connection, and the verdict on each failure (one key, or its node), with the logs and `breaker`
 * events that go with them. create-limiter.ts asks it and answers; fallback.ts gives the answers.
 */
import type { Logger } from '../logging.js';
import { safeLog } from '../logging.js';
import { releaseState, takeState } from '../stores/state-claims.js';
import type { Store, StorePlan } from '../stores/store.js';
import { type ErrorScope, errorScopeOf } from './error-scope.js';
import { type BreakerConfig, type BreakerState, NodeHealth } from './node-health.js';
import { StoreTimeoutError } from './store-timeout-error.js';
import { Watchdog } from './watchdog.js';

/** The node name of stores that do not tell nodes apart. */
export const WHOLE_STORE = 'store';

/**
 * How long the first checks wait for a store that has not connected yet (a Redis client still
 * connecting when the app starts), ms; after that the failure mode answers until it connects.
 */
export const STARTUP_WAIT_MS = 2_000;

/**
 * Key errors are logged at most once per this many ms: a script error on every key (or a client that
 * converts replies) would otherwise log once per request. The `store-error` event still names each key.
 */
const KEY_LOG_INTERVAL_MS = 10_000;

/** Why a store call gave no result. */
export class CallFailure {
  constructor(
    readonly error: unknown,
    /** `'key'`: only this key's state is at fault; `'node'`: the node that serves it is. */
    readonly scope: ErrorScope,
    readonly node: string,
  ) {}
}

export interface GuardConfig {
  readonly store: Store;
  readonly plan: StorePlan;
  readonly storeTimeoutMs: number;
  readonly breaker: BreakerConfig | false;
  readonly logger: Logger;
  readonly onStoreError: string;
  readonly now: () => number;
  readonly onBreaker: (state: BreakerState, node: string) => void;
}

/** Resolves with `handler(value)`, or rejects with what it throws. */
function settleWith<A, T>(resolve: (value: T) => void, reject: (error: unknown) => void, handler: (value: A) => T, value: A): void {
  let out: T;
  try {
    out = handler(value);
  } catch (error) {
    reject(error);
    return;
  }
  resolve(out);
}

export class StoreGuard {
  /** Outage events since creation (or `resetStats`): one per node per outage, not one per call. */
  outages = 0;
  private seq = 0;
  private readonly health = new Map<string, NodeHealth>();
  /** Nodes whose health is not 'closed'; empty keeps the hot path to one comparison. */
  private readonly unhealthy = new Set<NodeHealth>();
  private readonly watchdog: Watchdog;
  /** null: not asked yet; undefined: nothing to wait for. */
  private startup: Promise<void> | undefined | null = null;
  private keyLoggedAt = Number.NEGATIVE_INFINITY;
  private keyErrorsNotLogged = 0;

  constructor(private readonly config: GuardConfig) {
    // The limiter is built this far: it now holds its key names on the store (stores/state-claims.ts).
    const owner = config.plan.policies[0];
    if (owner !== undefined) takeState(owner);
    this.watchdog = new Watchdog(config.storeTimeoutMs);
  }

  /**
   * The wait for the store's first connection, asked once: a limiter used before its Redis client is
   * connected waits (up to `STARTUP_WAIT_MS`) instead of answering by the failure mode.
   */
  starting(): Promise<void> | undefined {
    return this.startup !== null ? this.startup : this.askStartup();
  }

  /** `starting`'s first call; out of line, for the decision path's inlining budget (create-limiter.ts, `decideAt`). */
  private askStartup(): Promise<void> | undefined {
    const wait = this.config.store.whenReady?.(STARTUP_WAIT_MS);
    this.startup =
      wait === undefined
        ? undefined
        : wait.then(
            () => {
              this.startup = undefined;
            },
            () => {
              this.startup = undefined;
            },
          );
    return this.startup;
  }

  /** The node that serves `key`. */
  nodeOf(key: string): string {
    const store = this.config.store;
    return store.nodeOf === undefined ? WHOLE_STORE : store.nodeOf(key, this.config.plan);
  }

  /** True when a call for `node` may go to the store now. */
  allow(node: string, at: number): boolean {
    return this.unhealthy.size === 0 || this.allowUnhealthy(node, at);
  }

  /** `allow` once some node is not healthy; out of line, as `succeeded`, for the decision path's inlining budget (create-limiter.ts, `decideAt`). */
  private allowUnhealthy(node: string, at: number): boolean {
    const h = this.health.get(node);
    return h === undefined || h.allow(at);
  }

  /** How long until `node` may be tried again, ms (a hint for `'closed'` answers). */
  retryMs(node: string, at: number): number {
    return this.health.get(node)?.waitMs(at) ?? 0;
  }

  /** Numbers the next store call. */
  next(): number {
    this.seq += 1;
    return this.seq;
  }

  /** `node` answered (a result, or an error about one key's state). */
  answered(node: string): void {
    if (this.health.size !== 0) this.succeeded(node);
  }

  /** `answered` once some node has a health record. */
  private succeeded(node: string): void {
    this.health.get(node)?.success();
  }

  /**
   * Watches an asynchronous call and answers with `onResult(result)`, or `onFailure(why there is none)`,
   * run in the step that settles the call: one promise per call, no `.then` of the caller's after it.
   * Rejects only when the handler throws.
   */
  watch<R, T>(
    node: string,
    seq: number,
    call: PromiseLike<R>,
    onResult: (result: R) => T,
    onFailure: (failure: CallFailure) => T,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const ticket = this.watchdog.watch(node, () => {
        settleWith(resolve, reject, onFailure, this.failure(node, seq, new StoreTimeoutError(this.config.storeTimeoutMs, node), true));
      });
      call.then(
        (result) => {
          const mine = this.watchdog.settle(ticket);
          // A late reply still proves the node alive.
          this.answered(node);
          if (mine) settleWith(resolve, reject, onResult, result);
        },
        (error: unknown) => {
          const mine = this.watchdog.settle(ticket);
          if (mine) settleWith(resolve, reject, onFailure, this.failure(node, seq, error, false));
          else if (errorScopeOf(this.config.store, error) === 'key') this.answered(node);
        },
      );
    });
  }

  /** Judges a failed call numbered `seq` on `node`; `slow`: the watchdog gave up on it. */
  failure(node: string, seq: number, error: unknown, slow: boolean): CallFailure {
    const scope = slow ? 'node' : errorScopeOf(this.config.store, error);
    if (scope === 'key') {
      this.answered(node);
      return new CallFailure(error, scope, node);
    }
    let h = this.health.get(node);
    if (h === undefined) {
      h = new NodeHealth(node, this.config.breaker, (changed) => this.changed(changed));
      this.health.set(node, h);
    }
    if (h.failure(seq, this.seq, this.config.now(), slow)) {
      // The first event since the node last answered: an outage begins.
      if (h.eventsInRow === 1) {
        this.outages += 1;
        const { store, onStoreError, logger } = this.config;
        safeLog(
          logger,
          'error',
          { code: 'ERR_RL_STORE_FAILED', store: store.kind, node, onStoreError, err: error },
          'ERR_RL_STORE_FAILED: a store node failed; its keys are answered by onStoreError until it answers again',
        );
      }
    }
    return new CallFailure(error, scope, node);
  }

  /** Logs an error that belongs to one key: at most one line per 10 s, counting the ones it left out. */
  logKeyFailure(key: string, failure: CallFailure): void {
    const t = performance.now();
    if (t - this.keyLoggedAt < KEY_LOG_INTERVAL_MS) {
      this.keyErrorsNotLogged += 1;
      return;
    }
    const notLogged = this.keyErrorsNotLogged;
    this.keyLoggedAt = t;
    this.keyErrorsNotLogged = 0;
    const { store, onStoreError, logger } = this.config;
    safeLog(
      logger,
      'error',
      { code: 'ERR_RL_STORE_KEY_FAILED', store: store.kind, node: failure.node, key, onStoreError, notLogged, err: failure.error },
      "ERR_RL_STORE_KEY_FAILED: the store failed on one key's state; that key is answered by onStoreError, other keys are not affected",
    );
  }

  private changed(h: NodeHealth): void {
    const { store, logger, breaker } = this.config;
    if (h.state === 'open' && !this.unhealthy.has(h)) {
      this.unhealthy.add(h);
      safeLog(
        logger,
        'warn',
        { code: 'WRN_RL_BREAKER_OPEN', store: store.kind, node: h.node, cooldownMs: breaker === false ? 0 : breaker.cooldownMs },
        'WRN_RL_BREAKER_OPEN: a store node keeps failing; its keys skip it (one probe at a time) until it answers',
      );
    } else if (h.state === 'closed' && this.unhealthy.delete(h)) {
      safeLog(
        logger,
        'warn',
        { code: 'WRN_RL_BREAKER_CLOSED', store: store.kind, node: h.node },
        'WRN_RL_BREAKER_CLOSED: the store node answers again; its keys are decided by the store once more',
      );
    }
    this.config.onBreaker(h.state, h.node);
  }

  resetStats(): void {
    this.outages = 0;
  }

  close(): void {
    this.watchdog.close();
    // The limiter is done with the store: another limiter may take its key names (stores/state-claims.ts;
    // options.ts claims them with this same token, the default plan's first policy).
    const owner = this.config.plan.policies[0];
    if (owner !== undefined) releaseState(this.config.store, owner);
  }
}
