/**
 * @module `limiter.hotKeys(n)`: who is hammering us. Two Space-Saving sketches, one fed by rejected
 * decisions, one by admitted decisions that left the binding policy with at most a tenth of its capacity.
 * "Recent" is two epochs of `epochMs` (a minute by default): the current one and the one before, so a
 * report always covers between one and two epochs. Memory is fixed (2 kinds x 2 epochs x `size` keys)
 * whatever the key cardinality.
 *
 * Heavy streams are sampled, so that a flood of rejections costs a counter decrement per decision
 * rather than a sketch update: the first EXACT_OFFERS decisions of an epoch (both kinds together) are
 * counted exactly, then each further decision with probability 1 / S, at weight S (independent draws, so
 * no traffic pattern can line up with the sampling). S is SAMPLE_EVERY until the epoch's total N reaches
 * SAMPLE_EVERY x size², then N / size²: the sampling error of a key's count, a standard deviation of
 * about sqrt(S x c) for its c sampled-period decisions, then stays within Space-Saving's own bound
 * N / size (sqrt(S x c) <= sqrt(S x N) = N / size), and the cost of a flood falls as it grows. Counts
 * past EXACT_OFFERS are unbiased estimates rather than upper bounds (4 % at 10,000 rejections, 1.3 % at
 * 100,000, under N / size beyond that).
 *
 * Two more sketch pairs rank the keys by decisions, whatever their verdict (the keys that load the store,
 * under their limit too), and count, per key, the decisions that waited for a store call (a RedisStore
 * round trip; not one answered from a `localBatch` batch, nor by a synchronous store): `busy` gives each
 * busy key its share of those calls. Decisions are sampled as above, on their own countdown; store calls
 * are counted one by one (each already cost a round trip).
 */
import { type SketchEntry, SpaceSaving } from './space-saving.js';

/** One key of `limiter.hotKeys()`. */
export interface HotKey {
  readonly key: string;
  /**
   * Decisions counted for this key in the recent epochs: an upper bound, at most `error` above the truth,
   * while the stream is light; once sampled (see the module), an estimate (each kept decision weighs its sampling interval).
   */
  readonly count: number;
  /** The most `count` may overestimate through Space-Saving's evictions; 0 means exact (sampling error aside). */
  readonly error: number;
  /** The binding policy at the key's latest counted decision. */
  readonly policy: string;
  /** What that policy had left then (0 on a rejection). */
  readonly remaining: number;
}

/** One key of `hotKeys().busy`: a key ranked by decisions, with the store calls it caused. */
export interface BusyKey {
  readonly key: string;
  /** Decisions for this key in the recent epochs (an estimate once sampled, as `HotKey.count`). */
  readonly decisions: number;
  /** The most `decisions` may overestimate through Space-Saving's evictions. */
  readonly error: number;
  /**
   * Decisions for this key that waited for a store call (Redis round trips; batched answers do not): an
   * upper bound, at most `storeCallsError` above the truth; never above `decisions` unless exact (once
   * sampled, `decisions` is an estimate that may read below the calls counted one by one).
   */
  readonly storeCalls: number;
  /** The most `storeCalls` may overestimate through Space-Saving's evictions (a cold key may inherit an evicted key's count); 0 means exact. */
  readonly storeCallsError: number;
  /** `storeCalls` over all store calls of the window: the share of the store's load this key causes, 0 to 1. */
  readonly storeShare: number;
}

/** What `limiter.hotKeys(n)` returns. */
export interface HotKeysReport {
  /** Keys rejected most often recently, most first. */
  readonly rejected: readonly HotKey[];
  /** Keys admitted most often at or under a tenth of their capacity recently, most first. */
  readonly nearLimit: readonly HotKey[];
  /**
   * Keys decided most often recently, most first, whatever the verdict: the keys that load the store,
   * with their share of its calls. A key with many decisions and a high share is the one to batch
   * (RedisStore `localBatch`, docs/capacity.md); with it on, its share falls.
   */
  readonly busy: readonly BusyKey[];
  /** Decisions that waited for a store call in the window (all keys). */
  readonly storeCalls: number;
  /** The span the report covers, in milliseconds (one to two epochs). */
  readonly windowMs: number;
  /** Keys each sketch monitors per epoch (`hotKeys.size`); 0 when the limiter has hot keys off (the default). */
  readonly size: number;
  /**
   * Space-Saving's bound for this report: no count is more than this above the truth, and every key
   * rejected more than this many times is in `rejected` (N / size, N the rejections in the window,
   * estimated from the sample once sampling started; the sampling error comes on top, see `count`).
   */
  readonly errorBound: number;
}

/** Admitted decisions count as near the limit when the binding policy keeps at most this share of capacity. */
export const NEAR_LIMIT_SHARE = 0.1;
/** Decisions (both kinds together) counted one by one per epoch before sampling starts. */
export const EXACT_OFFERS = 1024;
/** Past EXACT_OFFERS, at least one decision in SAMPLE_EVERY on average is counted (see the module for when fewer are). */
export const SAMPLE_EVERY = 16;
/**
 * Gaps between counted decisions are geometric: for an interval S, floor(E / -ln(1 - 1/S)) with E
 * exponential. E is drawn from its quantiles at 1024 evenly spaced probabilities with a xorshift
 * generator: a few integer operations where `Math.log(Math.random())` cost more than the sketch update
 * it replaces.
 */
const EXPONENTIALS = Float64Array.from({ length: 1024 }, (_, i) => -Math.log(1 - (i + 0.5) / 1024));
let seed = 0x2545f491;

/** How many decisions to pass over before the next counted one; `scale` is -1 / ln(1 - 1/S). */
function gap(scale: number): number {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return Math.floor((EXPONENTIALS[seed & 1023] as number) * scale);
}

/** `gap`'s scale for the interval `every`. */
function gapScale(every: number): number {
  return -1 / Math.log1p(-1 / every);
}

export class HotKeys {
  private rejectedNow: SpaceSaving;
  private rejectedBefore: SpaceSaving;
  private nearNow: SpaceSaving;
  private nearBefore: SpaceSaving;

  constructor(
    readonly size: number,
    readonly epochMs: number,
    private readonly clock: () => number,
  ) {
    this.rejectedNow = new SpaceSaving(size);
    this.rejectedBefore = new SpaceSaving(size);
    this.nearNow = new SpaceSaving(size);
    this.nearBefore = new SpaceSaving(size);
    this.busyNow = new SpaceSaving(size);
    this.busyBefore = new SpaceSaving(size);
    this.callsNow = new SpaceSaving(size);
    this.callsBefore = new SpaceSaving(size);
  }

  private busyNow: SpaceSaving;
  private busyBefore: SpaceSaving;
  private callsNow: SpaceSaving;
  private callsBefore: SpaceSaving;
  /** `skip` for the decisions of `busy`: its own countdown, so they never shift the sampling of the others. */
  busySkip = 0;
  private busyEvery = 1;
  private busyScale = gapScale(SAMPLE_EVERY);

  /** A decision of `key` (any verdict), picked by `busySkip`'s countdown, at `at`. */
  decided(key: string, policy: string, at: number): void {
    if (at >= this.epochEnd) this.rotate(at);
    const weight = this.busyEvery;
    const total = this.busyNow.total + weight;
    if (total < EXACT_OFFERS) this.busyEvery = 1;
    else {
      const every = Math.max(SAMPLE_EVERY, Math.floor(total / (this.size * this.size)));
      if (every !== this.busyEvery) {
        this.busyEvery = every;
        this.busyScale = gapScale(every);
      }
      this.busySkip = gap(this.busyScale);
    }
    this.busyNow.offer(key, policy, 0, weight);
  }

  /** A decision of `key` that waited for a store call, at `at`. */
  storeCall(key: string, at: number): void {
    if (at >= this.epochEnd) this.rotate(at);
    this.callsNow.offer(key, '', 0, 1);
  }

  /**
   * Decisions still to pass over before the next one is counted, in this epoch: the caller checks both first,
   * so a sampled-out decision costs a compare and a decrement
   * (`if (hot.skip > 0 && at < hot.epochEnd) hot.skip -= 1; else hot.rejected(..., at)`).
   */
  skip = 0;
  /** When the current epoch ends (-Infinity before the first decision): a new epoch counts exactly from its first decision. */
  epochEnd = Number.NEGATIVE_INFINITY;

  /** When the current epoch began. */
  private get epochStart(): number {
    return this.epochEnd - this.epochMs;
  }
  /** The sampling interval S the pending gap was drawn at (1: counting exactly), and `gap`'s scale for it. */
  private every = 1;
  private scale = gapScale(SAMPLE_EVERY);

  /** A rejection of `key` by `policy`, decided at `at` (the limiter's clock). */
  rejected(key: string, policy: string, at: number): void {
    const weight = this.weight(at);
    this.rejectedNow.offer(key, policy, 0, weight);
  }

  /** An admission of `key` that left `policy` with `remaining`, decided at `at`. */
  near(key: string, policy: string, remaining: number, at: number): void {
    const weight = this.weight(at);
    this.nearNow.offer(key, policy, remaining, weight);
  }

  /**
   * The weight of the decision being counted at `at`: the interval it was sampled at (1 while counting
   * exactly). Moves to a new epoch first when `at` is past the current one, whatever the stream's rate: a
   * light stream's decisions land in the epoch they were made in. Then sets the interval for the next one
   * from the epoch's total, and draws the gap to it.
   */
  private weight(at: number): number {
    if (at >= this.epochEnd) this.rotate(at);
    const weight = this.every;
    const total = this.rejectedNow.total + this.nearNow.total + weight;
    if (total < EXACT_OFFERS) {
      this.every = 1;
      return weight;
    }
    // Past SAMPLE_EVERY x size², S = total / size²: the sampling error then stays within N / size (see the module).
    const every = Math.max(SAMPLE_EVERY, Math.floor(total / (this.size * this.size)));
    if (every !== this.every) {
      this.every = every;
      this.scale = gapScale(every);
    }
    this.skip = gap(this.scale);
    return weight;
  }

  report(n: number): HotKeysReport {
    const now = this.clock();
    this.rotate(now);
    const rejected = merge(this.rejectedNow, this.rejectedBefore, n);
    const calls = new Map(merge(this.callsNow, this.callsBefore, this.size).map((c) => [c.key, c]));
    // A key the calls sketches do not hold made at most their minimum (Space-Saving): up to that, unknown.
    const unseen = this.callsNow.minimumIfFull() + this.callsBefore.minimumIfFull();
    const storeCalls = this.callsNow.total + this.callsBefore.total;
    return {
      rejected,
      nearLimit: merge(this.nearNow, this.nearBefore, n),
      busy: merge(this.busyNow, this.busyBefore, n).map((b) => {
        const c = calls.get(b.key) ?? { count: unseen, error: unseen };
        // A count with an error is an upper bound, and no key waited for more calls than it made decisions;
        // an exact count (error 0) is the truth, kept whatever `decisions` says: once sampled, that is an
        // estimate, and may read below it (6,000 round trips read 5,632 with an error of 0).
        const made = c.error === 0 ? c.count : Math.min(c.count, b.count);
        return {
          key: b.key,
          decisions: b.count,
          error: b.error,
          storeCalls: made,
          storeCallsError: c.error === 0 ? 0 : Math.min(c.error, made),
          storeShare: storeCalls === 0 ? 0 : made / storeCalls,
        };
      }),
      storeCalls,
      // At least one epoch, also when the clock reads earlier than the epoch's start (a clock that stepped back).
      windowMs: Math.max(now - this.epochStart, 0) + this.epochMs,
      size: this.size,
      errorBound: (this.rejectedNow.total + this.rejectedBefore.total) / this.size,
    };
  }

  private rotate(now: number): void {
    if (this.epochEnd === Number.NEGATIVE_INFINITY) {
      // The first decision (or report) starts the first epoch.
      this.epochEnd = now + this.epochMs;
      return;
    }
    const elapsed = now - this.epochStart;
    if (elapsed < this.epochMs) return;
    const swapR = this.rejectedBefore;
    const swapN = this.nearBefore;
    const swapB = this.busyBefore;
    const swapC = this.callsBefore;
    for (const s of [swapR, swapN, swapB, swapC]) s.clear();
    if (elapsed >= 2 * this.epochMs) {
      // Idle for more than two epochs: both are stale.
      for (const s of [this.rejectedNow, this.nearNow, this.busyNow, this.callsNow]) s.clear();
    }
    this.rejectedBefore = this.rejectedNow;
    this.nearBefore = this.nearNow;
    this.busyBefore = this.busyNow;
    this.callsBefore = this.callsNow;
    this.rejectedNow = swapR;
    this.nearNow = swapN;
    this.busyNow = swapB;
    this.callsNow = swapC;
    this.busySkip = 0;
    this.busyEvery = 1;
    this.epochEnd = now - (elapsed % this.epochMs) + this.epochMs;
    // Nothing of the last epoch's sampling carries over: no pending gap, no weight; the new one counts exactly.
    this.skip = 0;
    this.every = 1;
  }
}

/** Sums two epochs' sketches (counts and errors add), heaviest first. */
function merge(now: SpaceSaving, before: SpaceSaving, n: number): HotKey[] {
  const byKey = new Map<string, { count: number; error: number; latest: SketchEntry }>();
  // A key of the last epoch only may have been counted and evicted in this one: up to the current sketch's
  // minimum more, on both sides of its bound (a key in both then gets that back off).
  for (const e of before.entries())
    byKey.set(e.key, { count: e.count + now.minimumIfFull(), error: e.error + now.minimumIfFull(), latest: e });
  for (const e of now.entries()) {
    const seen = byKey.get(e.key);
    if (seen === undefined)
      byKey.set(e.key, { count: e.count + before.minimumIfFull(), error: e.error + before.minimumIfFull(), latest: e });
    else
      byKey.set(e.key, { count: seen.count - now.minimumIfFull() + e.count, error: seen.error - now.minimumIfFull() + e.error, latest: e });
  }
  return [...byKey.entries()]
    .map(([key, v]) => ({ key, count: v.count, error: v.error, policy: v.latest.label, remaining: v.latest.note }))
    .sort((a, b) => b.count - b.error - (a.count - a.error) || b.count - a.count)
    .slice(0, n);
}
