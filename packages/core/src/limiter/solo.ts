/**
 * @module The decision path of the common limiter, picked at construction: one policy, no shadow
 * policy, no concurrency policy, hot keys off, on a `MemoryStore` of its own class. A check of a string
 * key with neither a cost nor a plan in its options (the adapters pass every request's `route` and
 * `request`, which only an observer reads, and a `signal`, which only a concurrency queue reads), while
 * no exporter is attached, nobody subscribes to `tollgate:decision` and no TracerProvider is registered (the
 * active span would get an event), goes
 * from the key to the store's table and back to a Decision with nothing in between: no Target, no
 * observer (it would do nothing), no store timer (it would call the store straight). Everything else
 * (a cost or a plan, a key object or one too long, a store that failed, a first check that asks the store whether
 * it is ready) takes the general path, limiter/decide.ts, which gives the same answers.
 *
 * A key rejected again in the same millisecond, while the store has changed nothing since
 * (`MemoryStore.changes`), gets the same Decision without asking the store: a rejection charges
 * nothing, so the store would answer the same numbers. A client flooding over its limit (the case where
 * answering fast matters most) costs a comparison per request; the counters still count every check.
 */
import { channel } from 'node:diagnostics_channel';
import { WHOLE_STORE } from '../failure/store-guard.js';
import { DECISION_CHANNEL } from '../observability/decision-observer.js';
import { exporters } from '../observability/metric-store.js';
import type { CompiledPlan } from '../plans/compiled-plan.js';
import type { MemoryStore } from '../stores/memory-store.js';
import type { CheckOptions, Decision } from '../types.js';
import type { DecisionBuilder } from './build-decision.js';
import type { Decider } from './decide.js';
import type { LimiterKey } from './limiter.js';
import { isPlainKey } from './target.js';

const decisionChannel = channel(DECISION_CHANNEL);

export class SoloDecider {
  /** metric-store's `exporters`, held in a field: reading it skips the check that an imported binding is initialized. */
  private readonly watch = exporters;
  /** The last rejection, its key, its ms and the store's `changes` then: `lastKey` undefined when there is none. */
  private lastKey: string | undefined = undefined;
  private lastAt = 0;
  private lastChanges = 0;
  private last: Decision | undefined = undefined;
  /** `last` as a promise, made on the first `check` that answers it. */
  private settled: Promise<Decision> | undefined = undefined;

  constructor(
    private readonly plain: Decider,
    private readonly store: MemoryStore,
    private readonly plan: CompiledPlan,
    private readonly builder: DecisionBuilder,
    /** The limiter's default cost, in milli-units. */
    private readonly cost: number,
  ) {}

  /** `limiter.decide`. */
  readonly decide = (rawKey: LimiterKey, opts?: CheckOptions): Decision | Promise<Decision> => {
    // `=== false`, not `!`: a compare with the boolean, where `!` compiles to a full truthiness test.
    if (
      // `null` (from JavaScript) is no options, as on the general path, not a TypeError.
      (opts === undefined || opts === null || (opts.cost === undefined && opts.plan === undefined)) &&
      typeof rawKey === 'string' &&
      isPlainKey(rawKey) &&
      this.watch.attached === false &&
      this.watch.tracing === false &&
      decisionChannel.hasSubscribers === false &&
      this.plain.guard.starting() === undefined
    ) {
      return this.solo(rawKey);
    }
    return this.plain.decide(rawKey, opts);
  };

  /**
   * `limiter.check`: a rejection answered again (see the module doc) is answered with the same promise;
   * rejected when `decide` throws (an invalid key).
   */
  readonly check = (rawKey: LimiterKey, opts?: CheckOptions): Promise<Decision> => {
    let d: Decision | Promise<Decision>;
    try {
      d = this.decide(rawKey, opts);
    } catch (error) {
      return Promise.reject(error);
    }
    if (d !== this.last) return Promise.resolve(d);
    if (this.settled === undefined) this.settled = Promise.resolve(d);
    return this.settled;
  };

  private solo(key: string): Decision | Promise<Decision> {
    const plain = this.plain;
    const guard = plain.guard;
    const at = plain.now();
    // The store's one node (a MemoryStore has no `nodeOf`) is failing: the general path decides.
    if (!guard.allow(WHOLE_STORE, at)) return plain.decideStringAt(key, at);
    const store = this.store;
    const cp = this.plan;
    if (key === this.lastKey && at === this.lastAt && store.changes === this.lastChanges) {
      return this.builder.soloAgain(this.last as Decision, cp);
    }
    const seq = guard.next();
    let r: Float64Array;
    try {
      r = store.applyOne(key, cp.storePlan, this.cost, at);
    } catch (error) {
      return plain.threw(key, this.cost, at, seq, error);
    }
    guard.answered(WHOLE_STORE);
    const d = this.builder.solo(key, this.cost, r, cp, at);
    if (d.limited) {
      this.lastKey = key;
      this.lastAt = at;
      this.lastChanges = store.changes;
      this.last = d;
      this.settled = undefined;
    }
    return d;
  }
}
