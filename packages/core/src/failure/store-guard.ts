/**
 * @module Where a limiter meets its store's failures: which node serves a key, whether that node may be
 * called now (its NodeHealth), the watchdog over pending calls, the wait for the store's first
 * connection, and the verdict on each failure (one key, or its node), with the logs and `breaker`
 * events that go with them. The Decider (limiter/decide.ts) asks it and answers; fallback.ts gives the answers.
 */
import { isPromiseLike } from '../internal/promise.js';
import type { Logger } from '../logging.js';
import { LineThrottle, safeLog } from '../logging.js';
import { RESULT_STRIDE, type Store, type StoreKey, type StorePlan } from '../stores/store.js';
import { type ErrorScope, errorScopeOf } from './error-scope.js';
import { type BreakerConfig, type BreakerState, NodeHealth } from './node-health.js';
import { StoreResultError } from './store-result-error.js';
import { StoreTimeoutError } from './store-timeout-error.js';
import { type Overdue, Watchdog } from './watchdog.js';

/** The node name of stores that do not tell nodes apart. */
export const WHOLE_STORE = 'store';

/** The nodes a node name of `StoreGuard.nodeOfKey` names: itself, or each of a call's several nodes. */
export function nodesIn(node: string): string[] {
  return node.split('+');
}

/**
 * How long the first checks wait for a store that has not connected yet (a Redis client still
 * connecting when the app starts), ms; after that the failure mode answers until it connects.
 */
export const STARTUP_WAIT_MS = 2_000;

/** The least a hold waits for what checks must follow (`holdFor`): one round trip, as a rule, ms. */
const HOLD_MS = 100;

/**
 * Key errors are logged at most once per this many ms: a script error on every key (or a client that
 * converts replies) would otherwise log once per request. The `store-error` event still names each key.
 */
const KEY_LOG_INTERVAL_MS = 10_000;

/**
 * Outage lines (ERR_RL_STORE_FAILED) are written at most once per this many ms per limiter: a store that
 * flaps (or answers late, call after call) would otherwise write one per flap. The line counts the
 * outages it left out. An outage that lasted at least this long also writes WRN_RL_BREAKER_CLOSED when
 * it ends; a shorter one writes nothing more (one outage, one line).
 */
const OUTAGE_LOG_INTERVAL_MS = 10_000;
/**
 * A node that fails again within this long of answering in time after an outage goes on with that
 * outage, not a new one: a node whose replies trickle (some in time, most late) or that flaps is one
 * outage in `stats().outages`, not one per reply that came in time.
 */
export const OUTAGE_MERGE_MS = 1_000;

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
  /** `validate` lets WRN_RL_BREAKER_OPEN through. */
  readonly warnBreaker?: boolean;
  /** `validate` lets WRN_RL_BREAKER_CLOSED through. */
  readonly warnRecovered?: boolean;
  readonly now: () => number;
  readonly onBreaker: (state: BreakerState, node: string) => void;
  /** Told of each watched call the watchdog answered (its node silent, or the call late): the store duration metric's `timeout`. */
  readonly onTimedOut?: (call: PromiseLike<unknown>) => void;
}

/** Resolves with `handler(value)`, or rejects with what it throws. */
function settleWith<A, T>(
  resolve: (value: T | PromiseLike<T>) => void,
  reject: (error: unknown) => void,
  handler: (value: A) => T | PromiseLike<T>,
  value: A,
): void {
  let out: T | PromiseLike<T>;
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
  /** What checks wait for before they call the store now (`holdFor`), if anything. */
  private holding: Promise<void> | undefined = undefined;
  private readonly keyLines = new LineThrottle(KEY_LOG_INTERVAL_MS);
  private readonly outageLines = new LineThrottle(OUTAGE_LOG_INTERVAL_MS);
  /** When the current outage of each node began (the limiter's clock), for the line at its end. */
  private readonly outageSince = new Map<string, number>();
  /** Per node, the start of the outage WRN_RL_BREAKER_CLOSED was last written for (once per outage). */
  private readonly closedWarned = new Map<string, number>();
  /** Per node, when it last answered in time after an outage, and when that outage began (OUTAGE_MERGE_MS). */
  private readonly recovered = new Map<string, { readonly at: number; readonly since: number | undefined }>();

  /** The store's connection closed and is not ready again (Store.watchConnection): each node's breaker is told. */
  private offline = false;
  private readonly unwatch: (() => void) | undefined;

  constructor(private readonly config: GuardConfig) {
    this.watchdog = new Watchdog(config.storeTimeoutMs);
    this.unwatch = config.store.watchConnection?.((event) => this.connection(event === 'lost'));
  }

  private connection(offline: boolean): void {
    this.offline = offline;
    for (const h of this.health.values()) h.connection(offline);
  }

  /**
   * The wait for the store's first connection, asked once: a limiter used before its Redis client is
   * connected waits (up to `STARTUP_WAIT_MS`) instead of answering by the failure mode.
   */
  starting(): Promise<void> | undefined {
    if (this.holding !== undefined) return this.holding;
    return this.startup !== null ? this.startup : this.askStartup();
  }

  /**
   * Checks wait for `p` before they call the store (`starting`): the calls `p` makes before it settles go
   * to the store ahead of theirs (failure/restore/budget-restore.ts: the charges of a restore; decide.ts: the
   * carries after an outage). At most HOLD_MS, or `storeTimeoutMs` when longer: a limiter that waits that
   * long for a store answer waits as long for the charges the answers must follow. A hold made while
   * another runs waits for that one too, within its own bound: however many holds follow each other, a
   * check waits at most that bound from the latest.
   */
  holdFor(p: Promise<unknown>): void {
    const maxMs = this.holdBoundMs();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const before = this.holding;
    const all = before === undefined ? p : Promise.all([p, before]);
    const held: Promise<void> = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, maxMs);
      timer.unref?.();
      all.then(
        () => resolve(),
        () => resolve(),
      );
    }).then(() => {
      clearTimeout(timer);
      if (this.holding === held) this.holding = undefined;
    });
    this.holding = held;
  }

  /** The most a hold keeps a check waiting, ms (`holdFor`): HOLD_MS, or `storeTimeoutMs` when longer. */
  holdBoundMs(): number {
    return Math.max(HOLD_MS, this.config.storeTimeoutMs);
  }

  /** `starting`'s first call; out of line, for the decision path's inlining budget (limiter/decide.ts, `Decider.decideAt`). */
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

  /**
   * `call`, sent for `key`, is one nobody waits for (a charge given back, a lease released or put back):
   * the checks sent behind it are given the time its node needs for it (Watchdog.aside). Returns `call`.
   */
  aside<T>(key: StoreKey, call: T): T {
    if (isPromiseLike(call)) this.watchdog.aside(this.nodeOfKey(key), call);
    return call;
  }

  /**
   * The node a call for `key` goes to: for the keys of several policies on different nodes (a Cluster),
   * all of them, sorted and joined by '+'. Such a call needs every one of them, so its silence or failure
   * is that combination's, with a breaker of its own: never charged to a healthy node alone, whose own
   * keys then stay exact (the first key's node used to take the blame).
   */
  nodeOfKey(key: StoreKey): string {
    if (typeof key === 'string') return this.nodeOf(key);
    const first = this.nodeOf(key[0] as string);
    let nodes: string[] | undefined;
    for (let i = 1; i < key.length; i++) {
      const node = this.nodeOf(key[i] as string);
      if (node !== first && nodes?.includes(node) !== true) {
        if (nodes === undefined) nodes = [first];
        nodes.push(node);
      }
    }
    return nodes === undefined ? first : nodes.sort().join('+');
  }

  /** True when a call for `node` may go to the store now. */
  allow(node: string, at: number): boolean {
    return this.unhealthy.size === 0 || this.allowUnhealthy(node, at);
  }

  /** `allow` once some node is not healthy; out of line, as `succeeded`, for the decision path's inlining budget (limiter/decide.ts, `Decider.decideAt`). */
  private allowUnhealthy(node: string, at: number): boolean {
    const h = this.health.get(node);
    return h === undefined || h.allow(at);
  }

  /** True when `allow(node, at)` would refuse (its breaker is open): the failure mode answers, and nothing waits for the node. */
  refuses(node: string, at: number): boolean {
    if (this.unhealthy.size === 0) return false;
    return this.health.get(node)?.refuses(at) === true;
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
    // A store that answers is connected, whatever its client last said.
    this.offline = false;
    const h = this.health.get(node);
    if (h === undefined) return;
    if (h.eventsInRow > 0) this.recovered.set(node, { at: this.config.now(), since: this.outageSince.get(node) });
    h.success();
  }

  /**
   * Watches an asynchronous call and answers with `onResult(result)`, or `onFailure(why there is none)`,
   * run in the step that settles the call: one promise per call, no `.then` of the caller's after it.
   * Rejects only when the handler throws. `onLate` gets a result that came after the watchdog answered
   * (the failure mode decided; the store may have charged for it all the same).
   */
  watch<R, T>(
    node: string,
    seq: number,
    call: PromiseLike<R>,
    onResult: (result: R) => T | PromiseLike<T>,
    onFailure: (failure: CallFailure) => T | PromiseLike<T>,
    onLate?: (result: R) => void,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const ticket = this.watchdog.watch(node, (why: Overdue) => {
        this.config.onTimedOut?.(call);
        const error = new StoreTimeoutError(this.config.storeTimeoutMs, node, why);
        // Overtaken: the node answered calls sent after it, so the fault is the call's (its key's), as for a
        // TRYAGAIN reply; counted against the node, one key caught in a slot move degraded its master's others.
        const failed = why === 'overtaken' ? this.judge(node, seq, error, 'key', true) : this.failure(node, seq, error, true);
        settleWith(resolve, reject, onFailure, failed);
      });
      call.then(
        (result) => {
          if (this.watchdog.settle(ticket)) {
            this.answered(node);
            settleWith(resolve, reject, onResult, result);
          } else {
            this.lateReply(node);
            // Nobody waits for a late reply: a handler that throws on it (junk from a custom store) would
            // be an unhandled rejection, which ends the process. Its work is best effort; dropped.
            try {
              onLate?.(result);
            } catch {}
          }
        },
        (error: unknown) => {
          // Only an error about one key's state is a reply from the node (see Watchdog.settle).
          const scope = errorScopeOf(this.config.store, error);
          if (this.watchdog.settle(ticket, scope === 'key'))
            settleWith(resolve, reject, onFailure, this.judge(node, seq, error, scope, false));
          else if (scope === 'key') this.lateReply(node);
        },
      );
    });
  }

  /**
   * A reply came after the watchdog answered its call: the node is alive, but not known to be quick. It
   * does not end the outage by itself (a node that answers every call 100 ms late would otherwise close
   * its breaker with each reply, and every check would wait again); it lets the next call probe at once,
   * and that probe's timely reply ends it.
   */
  private lateReply(node: string): void {
    if (this.health.size !== 0) this.health.get(node)?.lateReply(this.config.now());
  }

  /** The call numbered `seq` on `node` answered `r`, which is not a result of `plan`: a failure of that call alone. */
  junk(node: string, seq: number, r: unknown, plan: StorePlan): CallFailure {
    const error = new StoreResultError(this.config.store.kind, r, plan.policies.length * RESULT_STRIDE);
    return this.judge(node, seq, error, 'key', false);
  }

  /** Judges a failed call numbered `seq` on `node`; `slow`: the watchdog gave up on it. */
  failure(node: string, seq: number, error: unknown, slow: boolean): CallFailure {
    return this.judge(node, seq, error, slow ? 'node' : errorScopeOf(this.config.store, error), slow);
  }

  /** `failure`, with the error's scope already known (the store's classifier runs once per error). */
  private judge(node: string, seq: number, error: unknown, scope: ErrorScope, slow: boolean): CallFailure {
    if (scope === 'key') {
      this.answered(node);
      return new CallFailure(error, scope, node);
    }
    let h = this.health.get(node);
    if (h === undefined) {
      h = new NodeHealth(node, this.config.breaker, (changed) => this.changed(changed), this.config.now);
      if (this.offline) h.connection(true);
      this.health.set(node, h);
    }
    // The first event since the node last answered: an outage begins.
    if (h.failure(seq, this.seq, this.config.now(), slow) && h.eventsInRow === 1) this.outageBegins(node, error);
    return new CallFailure(error, scope, node);
  }

  /** Counts an outage of `node` and writes its one line (at most one per 10 s, counting the rest); a failure within OUTAGE_MERGE_MS of its recovery goes on with the last one. */
  private outageBegins(node: string, error: unknown): void {
    // The limiter's clock, so that tests in virtual time see the lines a day of outages would write.
    const t = this.config.now();
    const last = this.recovered.get(node);
    if (last !== undefined && t - last.at < OUTAGE_MERGE_MS) {
      // The node answered in time a moment ago, between failures: the outage then goes on.
      this.outageSince.set(node, last.since ?? t);
      return;
    }
    this.outages += 1;
    this.outageSince.set(node, t);
    const notLogged = this.outageLines.take(t);
    if (notLogged === undefined) return;
    const { store, onStoreError, logger, breaker } = this.config;
    safeLog(
      logger,
      'error',
      { code: 'ERR_RL_STORE_FAILED', store: store.kind, node, onStoreError, breaker: breaker !== false, notLogged, err: error },
      'ERR_RL_STORE_FAILED: a store node failed; its keys are answered by onStoreError until it answers again in time',
    );
  }

  /** Logs an error that belongs to one key: at most one line per 10 s, counting the ones it left out. */
  logKeyFailure(key: string, failure: CallFailure): void {
    const notLogged = this.keyLines.take(performance.now());
    if (notLogged === undefined) return;
    const { store, onStoreError, logger } = this.config;
    safeLog(
      logger,
      'error',
      { code: 'ERR_RL_STORE_KEY_FAILED', store: store.kind, node: failure.node, key, onStoreError, notLogged, err: failure.error },
      "ERR_RL_STORE_KEY_FAILED: the store failed on one key's state; that key is answered by onStoreError, other keys are not affected",
    );
  }

  /**
   * A node's breaker changed. The outage line already says the breaker opens, so WRN_RL_BREAKER_OPEN is
   * written only when it opens later in the outage (`failureThreshold` above 1), and WRN_RL_BREAKER_CLOSED
   * only at the end of an outage that lasted 10 s or more.
   */
  private changed(h: NodeHealth): void {
    const { store, logger, breaker, warnBreaker = true, warnRecovered = true } = this.config;
    if (h.state === 'open' && !this.unhealthy.has(h)) {
      this.unhealthy.add(h);
      if (warnBreaker && h.eventsInRow > 1)
        safeLog(
          logger,
          'warn',
          { code: 'WRN_RL_BREAKER_OPEN', store: store.kind, node: h.node, cooldownMs: breaker === false ? 0 : breaker.cooldownMs },
          'WRN_RL_BREAKER_OPEN: a store node keeps failing; its keys skip it (one probe at a time) until it answers',
        );
    } else if (h.state === 'closed' && this.unhealthy.delete(h)) {
      const since = this.outageSince.get(h.node);
      this.outageSince.delete(h.node);
      const lastedMs = since === undefined ? 0 : Math.round(this.config.now() - since);
      // Once per outage: one that goes on (OUTAGE_MERGE_MS) closes its breaker again with each timely reply.
      if (warnRecovered && lastedMs >= OUTAGE_LOG_INTERVAL_MS && this.closedWarned.get(h.node) !== since) {
        this.closedWarned.set(h.node, since as number);
        safeLog(
          logger,
          'warn',
          { code: 'WRN_RL_BREAKER_CLOSED', store: store.kind, node: h.node, lastedMs },
          'WRN_RL_BREAKER_CLOSED: the store node answers again; its keys are decided by the store once more',
        );
      }
    }
    this.config.onBreaker(h.state, h.node);
  }

  resetStats(): void {
    this.outages = 0;
  }

  close(): void {
    this.unwatch?.();
    this.watchdog.close();
    for (const h of this.health.values()) h.close();
  }
}
