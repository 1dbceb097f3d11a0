/**
 * @module Times the store calls for `tollgate.store.duration`, standing in for `store.apply` at the
 * limiter's one call site. With no exporter attached it is a plain forward (one check). Asynchronous
 * stores are timed on every call, until their promise settles: a reply later than the limiter's
 * `storeTimeoutMs` counts as `timeout` (the limiter had already answered without it), a rejection
 * as `error`. Synchronous stores are sampled: one call in 1024 is timed.
 */
import { performance } from 'node:perf_hooks';
import { isPromiseLike, type Store, type StoreKey, type StorePlan, type StoreResult } from '../stores/store.js';
import type { StoreOutcome } from './metric-names.js';
import { exporters, type HistogramCell, histogramCell } from './metric-store.js';
import { recordStoreDuration } from './otel-meter.js';

/** Synchronous stores answer in well under a microsecond, and recording costs more: one call in 1024 is timed. */
const SYNC_SAMPLE_MASK = 1023;

export class StoreTimer {
  private calls = 0;
  /** Calls whose count has these bits clear are timed: every call until the store has answered once, then every call of an asynchronous store and one in 1024 of a synchronous one. */
  private mask = 0;
  private readonly cells: Partial<Record<StoreOutcome, HistogramCell>> = {};
  /** metric-store's `exporters`, held in a field: reading it skips the check that an imported binding is initialized (see DecisionObserver.observe). */
  private readonly watch = exporters;

  constructor(
    private readonly store: Store,
    private readonly timeoutMs: number,
  ) {}

  /** Kept this small so that the limiter's call site inlines it: no exporter, one check and the store call. */
  apply(key: StoreKey, plan: StorePlan, cost: number, now: number, lease?: number): StoreResult | Promise<StoreResult> {
    return this.watch.attached === true && (++this.calls & this.mask) === 0
      ? this.timed(key, plan, cost, now, lease)
      : this.store.apply(key, plan, cost, now, lease);
  }

  private timed(key: StoreKey, plan: StorePlan, cost: number, now: number, lease?: number): StoreResult | Promise<StoreResult> {
    const started = performance.now();
    let r: StoreResult | Promise<StoreResult>;
    try {
      r = this.store.apply(key, plan, cost, now, lease);
    } catch (error) {
      this.record(started, 'error');
      throw error;
    }
    this.mask = isPromiseLike(r) ? 0 : SYNC_SAMPLE_MASK;
    if (!isPromiseLike(r)) {
      this.record(started, 'ok');
      return r;
    }
    r.then(
      () => this.record(started, performance.now() - started > this.timeoutMs ? 'timeout' : 'ok'),
      () => this.record(started, 'error'),
    );
    return r;
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
