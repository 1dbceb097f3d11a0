/**
 * @module What the replies to one process's calls for a hot key tell of the key's count in Redis, for a
 * restore after Redis lost it (limiter/budget-restore.ts). A process answering from batches remembers the
 * key as of the batch it spends (what Redis said was left when it took it, less its own spends since), so
 * its memory lacks what the other processes took since; where it is the one that finds a `FLUSHALL` (the
 * others answer the exhausted key from their rejections, asking Redis once a second), it charged the key
 * again only what it had seen, and admitted the rest of the limit again (four processes, an exhausted key:
 * 1,023 to 1,488 of 1,000). Consecutive replies on the process's one connection differ by its own charge and
 * what the others took between them: the others' rate is learnt from that, and at the reply that shows the
 * key emptied (a loss, a reset, a window's end), the count just before is kept: what the last reply before
 * it said was charged, less the units this process held unspent, plus what the others took at their rate
 * since, up to the limit. A restore charges at least that (`LocalBatcher.countAtLoss`).
 */
import { MILLI } from '../../../internal/fixed-point.js';
import { R_REMAINING, R_RESET, RESULT_STRIDE, type StoreResult } from '../../store.js';
import { BUCKET } from './exactness.js';

/** The least time a rate of the others is measured over, ms (replies on one connection come in bursts). */
const RATE_SPAN_MS = 5;

/** How long a count kept at the reply that showed the key emptied answers for a restore, ms. */
const LOSS_COUNT_MS = 2_000;

/** What one key's replies in this process tell of its count in Redis (see the module's comment). */
export class SeenCount {
  /** Per policy: what the last reply said was left, milli-units. */
  private readonly left: Float64Array;
  /** Per policy: when its window ends, by the last reply (local ms; buckets: Infinity). */
  private readonly ends: Float64Array;
  /** Per policy: milli-units the others took per ms, as last measured. */
  private readonly rates: Float64Array;
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
    if (emptied) this.lost(got, held);
    else if (got - this.since >= RATE_SPAN_MS) {
      for (let i = 0; i < n; i++) this.rates[i] = (this.took[i] as number) / (got - this.since);
      this.took.fill(0);
      this.since = got;
    }
    this.keep(r, got);
  }

  /**
   * The count of the key kept at the last reply that showed it emptied, per policy (milli-units, beside
   * the units this process held then), while that came within LOSS_COUNT_MS of `local`; else undefined.
   */
  atLoss(local: number): Float64Array | undefined {
    const loss = this.loss;
    if (loss === undefined || local - this.lossAt > LOSS_COUNT_MS) return undefined;
    // A window that ended since counts nothing of it.
    return loss.map((c, i) => (local < (this.lossEnds[i] as number) ? c : 0));
  }

  /** The key showed emptied at `got`: its count just before, as the replies and the others' rate tell it. */
  private lost(got: number, held: number): void {
    const n = this.kinds.length;
    const count = new Float64Array(n);
    const gone = got - this.lastGot;
    // The largest of the losses shown within LOSS_COUNT_MS: a give-back shown after a loss is no count of it.
    const kept = this.atLoss(got);
    for (let i = 0; i < n; i++) {
      if (got >= (this.ends[i] as number)) continue;
      const before = (this.caps[i] as number) - (this.left[i] as number) - held;
      const c = Math.min(this.caps[i] as number, Math.max(0, before) + (this.rates[i] as number) * gone);
      count[i] = Math.max(c, kept?.[i] ?? 0);
    }
    this.loss = count;
    this.lossAt = got;
    this.lossEnds.set(this.ends);
    this.took.fill(0);
    this.since = got;
  }

  private keep(r: StoreResult, got: number): void {
    for (let i = 0, o = 0; i < this.kinds.length; i++, o += RESULT_STRIDE) {
      this.left[i] = r[o + R_REMAINING] as number;
      this.ends[i] = this.kinds[i] === BUCKET ? Number.POSITIVE_INFINITY : got + (r[o + R_RESET] as number);
    }
    this.lastGot = got;
  }
}
