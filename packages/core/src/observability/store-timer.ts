/**
 * @module Times the store calls for `tollgate.store.duration`, standing in for `store.apply` at the
 * limiter's call sites, which report a store that throws through `threw`. With no exporter attached it
 * calls the store straight: the timing lives in `TimedCalls`, which takes the store's place while an
 * exporter is attached (metric-store's `followAttached`), so that the decision path carries no check
 * for it. Asynchronous stores are timed on every call, until their promise settles: a call the limiter's
 * watchdog answers without the store counts as `timeout` at that moment (`timedOut`, from the guard: the
 * metric says what the limiter did, by its own judgement of idle time and queued calls; a late reply adds
 * nothing), a rejection as `error`. Synchronous stores are sampled: one call in 1024 is timed. A store
 * that answers both ways (RedisStore `localBatch`: a hot key from the batch this process holds, the rest
 * with a round trip) is timed on every call once it has answered with a promise, or from the start when
 * it says it `batches`; its synchronous answers made no store call and are not recorded.
 */
import { performance } from 'node:perf_hooks';
import { isPromiseLike } from '../internal/promise.js';
import type { Store, StoreKey, StorePlan, StoreResult } from '../stores/store.js';
import type { StoreOutcome } from './metric-names.js';
import { type AttachedFollower, followAttached, type HistogramCell, histogramCell } from './metric-store.js';
import { recordStoreDuration } from './otel-meter.js';

/** Synchronous stores answer in well under a microsecond, and recording costs more: one call in 1024 is timed. */
const SYNC_SAMPLE_MASK = 1023;

type StoreCall = Pick<Store, 'apply'>;

export class StoreTimer implements AttachedFollower {
  /** The store while no exporter is attached, else `timing`. */
  private target: StoreCall;
  private readonly timing: TimedCalls;

  constructor(private readonly store: Store) {
    this.target = store;
    this.timing = new TimedCalls(store);
    followAttached(this);
  }

  /**
   * The limiter's store call: the store's own, or a timed one while an exporter is attached. One call and
   * no check, for the decision path's inlining budget (limiter/decide.ts, `Decider.decideAt`), which the store's `apply` needs.
   */
  apply(key: StoreKey, plan: StorePlan, cost: number, now: number, lease?: number): StoreResult | Promise<StoreResult> {
    return this.target.apply(key, plan, cost, now, lease);
  }

  /** `Store.held`: what the store holds in process, asked while its node's breaker is open (no I/O, not timed). */
  held(key: StoreKey, plan: StorePlan, cost: number, now: number): StoreResult | undefined {
    return this.store.held?.(key, plan, cost, now);
  }

  /** `Store.chargedBeside`: what the store holds in process for a key counts a charge made beside it (no I/O). */
  chargedBeside(key: StoreKey, plan: StorePlan, charged: ArrayLike<number>): void {
    this.store.chargedBeside?.(key, plan, charged);
  }

  /** `Store.returning`: the key's give-backs on their way, if any (no I/O). */
  returning(key: StoreKey): Promise<unknown> | undefined {
    return this.store.returning?.(key);
  }

  /** `Store.refund`, untimed (a give-back of a charge nobody asked for: limiter/decide.ts `giveBack`). */
  refund(
    key: StoreKey,
    plan: StorePlan,
    cost: number,
    marks: readonly number[],
    now: number,
  ): ArrayLike<number> | Promise<ArrayLike<number>> | undefined {
    return this.store.refund?.(key, plan, cost, marks, now);
  }

  /** The store call that `apply` made threw: a timed call is recorded as an error. */
  threw(): void {
    if (this.target === this.timing) this.timing.threw();
  }

  /** The limiter answered `call`, an `apply` on its way, without the store: a timed call is recorded as a timeout. */
  timedOut(call: PromiseLike<unknown>): void {
    this.timing.timedOut(call);
  }

  follow(attached: boolean): void {
    this.target = attached ? this.timing : this.store;
  }
}

/** The store's `apply`, timed. */
class TimedCalls implements StoreCall {
  private calls = 0;
  /**
   * Calls whose count has these bits clear are timed: every call until the store has answered once, then
   * every call of a networked store and one in 1024 of one that has only answered synchronously.
   */
  private mask = 0;
  /**
   * The store goes to the network: it has answered with a promise, or it `batches` (the first answers of a
   * `localBatch` RedisStore attached to an exporter late may all come from its batches). Its every call is
   * timed from then on, and the mask never returns to 1023. (It was set by the kind of the last timed answer:
   * one batch answer left the round trips untimed until the next 1024th call. 5000 checks of one hot key on
   * a local Redis: 954 round trips, 705 timed, 5 batch answers in the 50 µs bucket; now 832 of 832, none.)
   * A synchronous answer of such a store was made in memory, with no store call: it is not recorded. A
   * store that does neither is known by the answers of the calls timed: until one of its 1-in-1024 calls
   * answers with a promise it counts as synchronous (looking at every answer would cost MemoryStore's path).
   */
  private networked: boolean;
  /** When the call being made started (`performance.now()`), when it is timed; else -1. */
  private started = -1;
  private readonly cells: Partial<Record<StoreOutcome, HistogramCell>> = {};
  /** Asynchronous calls on their way, timed: when each started. */
  private readonly pending = new Map<PromiseLike<unknown>, number>();

  constructor(private readonly store: Store) {
    this.networked = store.batches === true;
  }

  /**
   * One call of the store, timed or not: a second call in a branch taken 1023 times in 1024 would lower
   * that call's frequency below the receipt's, and V8, which inlines the most frequent calls first, would
   * then spend the decision path's inlining budget on the receipt and call the store out of line.
   */
  apply(key: StoreKey, plan: StorePlan, cost: number, now: number, lease?: number): StoreResult | Promise<StoreResult> {
    if ((++this.calls & this.mask) === 0) this.start();
    const r = this.store.apply(key, plan, cost, now, lease);
    return this.started < 0 ? r : this.timed(r);
  }

  threw(): void {
    const started = this.started;
    if (started < 0) return;
    this.started = -1;
    this.record(started, 'error');
  }

  /** A call to time starts; `timed` or `threw` ends it. */
  private start(): void {
    this.started = performance.now();
  }

  /**
   * Records a timed call's duration when it is known: now for a synchronous store, when it settles for a
   * networked one. A networked store's synchronous answer is no store call and records nothing.
   */
  private timed(r: StoreResult | Promise<StoreResult>): StoreResult | Promise<StoreResult> {
    const started = this.started;
    this.started = -1;
    if (!isPromiseLike(r)) {
      if (!this.networked) {
        this.mask = SYNC_SAMPLE_MASK;
        this.record(started, 'ok');
      }
      return r;
    }
    this.networked = true;
    this.mask = 0;
    this.pending.set(r, started);
    const end = (outcome: StoreOutcome) => () => {
      if (this.pending.delete(r)) this.record(started, outcome);
    };
    r.then(end('ok'), end('error'));
    return r;
  }

  /**
   * The limiter answered `call` without the store (its watchdog: failure/store-guard.ts): a timeout,
   * recorded now, while the store hangs (when it matters on a dashboard); a late reply adds nothing.
   */
  timedOut(call: PromiseLike<unknown>): void {
    const started = this.pending.get(call);
    if (started === undefined) return;
    this.pending.delete(call);
    this.record(started, 'timeout');
  }

  private record(started: number, outcome: StoreOutcome): void {
    const seconds = (performance.now() - started) / 1000;
    let cell = this.cells[outcome];
    if (cell === undefined) {
      cell = histogramCell('storeDuration', { storeKind: this.store.kind, storeOutcome: outcome });
      this.cells[outcome] = cell;
    }
    cell.record(seconds);
    recordStoreDuration(seconds, cell.attributes);
  }
}
