/**
 * @module What the replies to one process's calls for a hot key tell of the key's count in Redis, for a
 * restore after Redis lost it (failure/restore/budget-restore.ts). A process answering from batches remembers the
 * key as of the batch it spends (what Redis said was left when it took it, less its own spends since), so
 * its memory lacks what the other processes took since; where it is the one that finds a `FLUSHALL` (the
 * others answer the exhausted key from their rejections, asking Redis once a second), it charged the key
 * again only what it had seen, and admitted the rest of the limit again (four processes, an exhausted key:
 * 1,023 to 1,488 of 1,000). Consecutive replies on the process's one connection differ by its own charge and
 * what the others took between them: the others' rate is learnt from that, and at the reply that shows the
 * key emptied (a loss, a reset, a window's end), the count just before is kept: what the last reply before
 * it said was charged (with what this process gave back since), less the units it held unspent, plus what
 * the others take at their last measured pace, over one span of it at most (a lull is no pace), up to the
 * limit. A restore charges at least that, or the same count now for a key no reply showed emptied yet
 * (`LocalBatcher.countAtLoss`).
 */
import { MILLI } from '../../../internal/fixed-point.js';
import { R_REMAINING, R_RESET, RESULT_STRIDE, type StoreResult } from '../../store.js';
import { BUCKET } from './exactness.js';

/** The least time a rate of the others is measured over, ms (replies on one connection come in bursts). */
const RATE_SPAN_MS = 5;

/** How long the count kept at the reply that showed the key emptied answers for a restore, ms. */
const LOSS_COUNT_MS = 2_000;

/** What one key's replies in this process tell of its count in Redis (see the module's comment). */
export class SeenCount {
  /** Per policy: what the last reply said was left (and the units given back since), milli-units. */
  private readonly left: Float64Array;
  /** Per policy: when its window ends, by the last reply (local ms; buckets: Infinity). */
  private readonly ends: Float64Array;
  /** Per policy: milli-units the others took per ms, as last measured, and over how long (ms). */
  private readonly rates: Float64Array;
  private span = 0;
  /** Per policy: what the others took since `since`, milli-units. */
  private readonly took: Float64Array;
  private since: number;
  private lastGot: number;
  /** The count kept at the last reply that showed the key emptied, per policy, when it came, and its windows' ends. */
  private loss: Float64Array | undefined;
  private lossAt = Number.NEGATIVE_INFINITY;
  private readonly lossEnds: Float64Array;

  constructor(
    private readonly kinds: Uint8Array,
    /** Per policy: milli-units refilled per ms (buckets; 0 for windows), and the capacity. */
    private readonly refills: Float64Array,
    private readonly caps: Float64Array,
    r: StoreResult,
    got: number,
  ) {
    const n = kinds.length;
    this.left = new Float64Array(n);
    this.ends = new Float64Array(n);
    this.rates = new Float64Array(n);
    this.took = new Float64Array(n);
    this.lossEnds = new Float64Array(n);
    this.since = got;
    this.lastGot = got;
    this.keep(r, got);
  }

  /**
   * A reply `r` at local time `got` to a call that charged `own` milli-units (0 when it charged nothing),
   * with `held` milli-units this process held unspent, taken before that call.
   */
  replied(r: StoreResult, got: number, own: number, held: number): void {
    const n = this.kinds.length;
    // A reply whose numbers are not all finite (a garbled state) tells nothing: the last one stands.
    for (let i = 0; i < n; i++) if (!Number.isFinite(r[i * RESULT_STRIDE + R_REMAINING])) return;
    let emptied = false;
    for (let i = 0, o = 0; i < n; i++, o += RESULT_STRIDE) {
      const before = this.left[i] as number;
      const others = before - own - (r[o + R_REMAINING] as number);
      // More left than the last reply less this call's charge, by half what the key had counted and a unit
      // beyond a bucket's refill since, at least: the key was emptied (a loss, a reset, a window's end), not
      // given a batch back or slid a little (a sliding window's previous one weighing less).
      const back = -others - (this.refills[i] as number) * (got - this.lastGot + 1);
      if (back >= MILLI && back >= ((this.caps[i] as number) - before) / 2) emptied = true;
      else if (others > 0) this.took[i] = (this.took[i] as number) + others;
    }
    if (emptied) {
      // The count just before (the latest such reply only: a reset from elsewhere is no count of a loss after it).
      this.loss = this.estimate(got, held);
      this.lossAt = got;
      this.lossEnds.set(this.ends);
      this.took.fill(0);
      this.since = got;
    } else if (got - this.since >= RATE_SPAN_MS) {
      this.span = got - this.since;
      for (let i = 0; i < n; i++) this.rates[i] = (this.took[i] as number) / this.span;
      this.took.fill(0);
      this.since = got;
    }
    this.keep(r, got);
  }

  /** This process gave `units` milli-units back to the key (a batch's unspent units): Redis has that much more left. */
  returned(units: number): void {
    for (let i = 0; i < this.left.length; i++) this.left[i] = Math.min(this.caps[i] as number, (this.left[i] as number) + units);
  }

  /**
   * The key's count per policy (milli-units, beside the `held` units this process holds unspent at local
   * time `local`): as kept at the last reply that showed the key emptied, within LOSS_COUNT_MS, else as the
   * replies tell it now (`estimate`); a window that ended since counts nothing of it.
   */
  count(local: number, held: number): Float64Array {
    const loss = this.loss;
    if (loss === undefined || local - this.lossAt > LOSS_COUNT_MS) return this.estimate(local, held);
    return loss.map((c, i) => (local < (this.lossEnds[i] as number) ? c : 0));
  }

  /**
   * The count at `at` by the last reply: what it said was charged, less the `held` units, plus what the
   * others take at the pace last measured, for at most as long as it was measured over (a lull since is no
   * pace: 4 processes pausing a second before a FLUSHALL had the whole limit charged for 360 used).
   */
  private estimate(at: number, held: number): Float64Array {
    const n = this.kinds.length;
    const count = new Float64Array(n);
    const extra = Math.max(0, Math.min(at - this.lastGot, this.span));
    for (let i = 0; i < n; i++) {
      if (at >= (this.ends[i] as number)) continue;
      const before = Math.max(0, (this.caps[i] as number) - (this.left[i] as number) - held);
      count[i] = Math.min(this.caps[i] as number, before + (this.rates[i] as number) * extra);
    }
    return count;
  }

  private keep(r: StoreResult, got: number): void {
    for (let i = 0, o = 0; i < this.kinds.length; i++, o += RESULT_STRIDE) {
      this.left[i] = r[o + R_REMAINING] as number;
      this.ends[i] = this.kinds[i] === BUCKET ? Number.POSITIVE_INFINITY : got + (r[o + R_RESET] as number);
    }
    this.lastGot = got;
  }
}
