/**
 * @module What the batcher knows of one key in this process: how often it is decided (hot or not, and
 * its rate), the batches it holds, the rejection it answers, the call in flight, and what the last
 * reply said (what was left, how long until a bucket is full) so the next batch is sized to it.
 */
import type { Batch, Block } from './batch.js';
import type { SeenCount } from './seen-count.js';

/** Decisions are counted per interval of this many ms; the key's rate is that of the last one. */
export const RATE_INTERVAL_MS = 1000;

export class KeyEntry {
  /** Start of the current counting interval (local ms) and the decisions in it. */
  private since: number;
  private count = 0;
  /** Decisions per ms in the last full interval. */
  private lastRate = 0;
  hot = false;
  readonly batches: Batch[] = [];
  block: Block | undefined;
  /** The call in flight for this key (a batch being taken): the checks that find nothing held wait for it. */
  pending: Promise<unknown> | undefined;
  /** Moves on with every `store.reset(key)`: a reply to a call sent before it belongs to the deleted state. */
  resets = 0;
  /**
   * What was charged beside the key's batches (`LocalBatcher.chargedBeside`), milli-units per policy, in
   * all: a new array at each charge, so a call holds the one of its time, and a batch it brings counts the
   * difference (every charge made since it was sent, not only the last).
   */
  beside: ArrayLike<number> = [];
  /**
   * Milli-units charged by the calls sent for the key and not answered yet: Redis may count them already,
   * and a batch among them becomes this process's to spend (`LocalBatcher.unspent` counts them so).
   */
  flying = 0;
  /** The smallest remaining of the last reply (milli-units); Infinity before the first. */
  lastLeft = Number.POSITIVE_INFINITY;
  /** The shortest time to a full bucket in the last reply (ms), the local time it came, and how long its call took (ms). */
  lastDebt = 0;
  lastGot = 0;
  lastRtt = 0;
  /**
   * What the replies tell of the key's count beside this process's own charges (`LocalBatcher.learn`), for a
   * restore after Redis lost the key (`LocalBatcher.countAtLoss`); undefined before the second reply.
   */
  seenCount: SeenCount | undefined;
  /** Milli-units the last batch took: the low-water mark for the next one is a quarter of it. */
  lastCharge = 0;
  /** Set by every decision of the key, cleared by the eviction's second chance (local-batcher.ts `evict`). */
  used = false;
  /** The limiter's `now` at the last decision, for give-backs in virtual time. */
  lastNow = 0;
  /** The result array synchronous answers reuse (the limiter reads it at once). */
  readonly out: number[];

  constructor(
    readonly key: string,
    local: number,
    out: number[],
  ) {
    this.since = local;
    this.out = out;
  }

  /** Counts `n` decisions seen before the entry was made (in the batcher's doorway). */
  seed(n: number): void {
    this.count = n;
  }

  /** Counts one decision at local time `local`; hot once it reaches `minRate` per second. */
  seen(local: number, minPerInterval: number): void {
    const gone = local - this.since;
    if (gone >= RATE_INTERVAL_MS) {
      this.lastRate = this.count / gone;
      this.count = 0;
      this.since = local;
    }
    this.count += 1;
    this.hot = this.count >= minPerInterval || this.lastRate * RATE_INTERVAL_MS >= minPerInterval;
  }

  /** Decisions per ms: the last interval's rate, or the current one's once it is at least 50 ms old and faster. */
  rate(local: number): number {
    const gone = local - this.since;
    const current = gone >= 50 ? this.count / gone : 0;
    return Math.max(current, this.lastRate);
  }

  /** Milli-units its batches can still spend at `local` (the batcher's time). */
  usable(local: number): number {
    let h = 0;
    for (const b of this.batches) h += b.usable(local);
    return h;
  }

  /** Milli-units held in all batches (spendable or not). */
  held(): number {
    let h = 0;
    for (const b of this.batches) h += b.held;
    return h;
  }
}
