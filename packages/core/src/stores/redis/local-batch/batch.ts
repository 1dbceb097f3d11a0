/**
 * @module One batch: units of a key's budget that Redis charged in one call, spent here in memory, and
 * the decision each spend reports; and one rejection Redis gave, answered here until its wait is over.
 *
 * Times: `base` is the store's clock when the script ran (the `now` of its reply); `sent` and `got`
 * are this process's clock when the call went out and when the reply came. The store's clock at a
 * local time `l` is at most `base + slack + (l - sent)` (the script ran after the call went out;
 * `slack` covers Redis' TIME rounded down to the ms): staleness is judged on that, so a unit is never
 * spent after its state has passed. The fields a decision reports use `base + (l - got)` instead, which
 * is never ahead of the store's clock: a reset or a wait is never announced shorter than it is.
 */
import type { CompiledPolicy } from '../../../algorithms/kernel.js';
import {
  F_ALLOWED,
  F_CHARGED,
  R_DELAY,
  R_FLAGS,
  R_POSITION,
  R_REMAINING,
  R_RESET,
  R_RETRY_AFTER,
  RESULT_STRIDE,
  type StorePlan,
  type StoreResult,
} from '../../store.js';
import { BUCKET, FIXED_WINDOW, milliPerMs, SLIDING_WINDOW } from './exactness.js';

/**
 * The position a batched bucket decision reports (R_POSITION): its receipt is not given back to Redis,
 * since a refund there would move the bucket under units other batches still hold (local-batcher.ts).
 */
export const HELD_POSITION = -(2 ** 52);

/** The store's `now` in a reply for `n` policies. */
export function replyNow(r: StoreResult, n: number): number {
  return r[n * RESULT_STRIDE] as number;
}

/** A result array for `n` policies (5 numbers each, then now). */
export function newResult(n: number): number[] {
  return new Array<number>(n * RESULT_STRIDE + 1).fill(0);
}

export class Batch {
  /** Milli-units charged and not yet spent. */
  held: number;
  /** Per policy: the window's end (windows) or when the bucket would be full again (buckets), store time. */
  private readonly ends: Float64Array;
  /** Per policy: the remaining Redis reported after the charge, milli-units. */
  private readonly left: Float64Array;
  private readonly positions: Float64Array;
  private readonly policies: readonly CompiledPolicy[];

  constructor(
    private readonly kinds: Uint8Array,
    plan: StorePlan,
    r: StoreResult,
    /** Milli-units the call charged. */
    readonly charged: number,
    readonly base: number,
    readonly sent: number,
    readonly got: number,
    private readonly slack: number,
  ) {
    const n = kinds.length;
    this.policies = plan.policies;
    this.ends = new Float64Array(n);
    this.left = new Float64Array(n);
    this.positions = new Float64Array(n);
    for (let i = 0, o = 0; i < n; i++, o += RESULT_STRIDE) {
      const reset = r[o + R_RESET] as number;
      const p = plan.policies[i] as CompiledPolicy;
      // sliding-window: an admitted charge reports its reset as the window's start + 2 windows.
      this.ends[i] = base + reset - (kinds[i] === SLIDING_WINDOW ? p.windowMs : 0);
      this.left[i] = r[o + R_REMAINING] as number;
      this.positions[i] = r[o + R_POSITION] as number;
    }
    this.held = charged;
  }

  /**
   * How much of `charged` (milli-units per policy), charged beside this batch, did not fit in what Redis
   * said was left at its charge: the most any policy lacks.
   */
  shortBy(charged: ArrayLike<number>): number {
    let short = 0;
    for (let i = 0; i < this.left.length; i++) short = Math.max(short, Math.floor(charged[i] ?? 0) - (this.left[i] as number));
    return short;
  }

  /** Drops up to `n` of the units held, unspent (they stay charged); returns what it could not drop. */
  forfeit(n: number): number {
    const dropped = Math.min(this.held, Math.max(0, n));
    this.held -= dropped;
    return n - dropped;
  }

  /**
   * The key was charged `charged` (milli-units per policy) beside this batch: each policy has that much less
   * left than Redis said at the batch's charge, none below nothing (a charge that does not fit takes what is left).
   */
  lower(charged: ArrayLike<number>): void {
    for (let i = 0; i < this.left.length; i++) this.left[i] = Math.max(0, (this.left[i] as number) - Math.floor(charged[i] ?? 0));
  }

  /** True once some window policy's window has ended: nothing more is spent from this batch. */
  ended(local: number): boolean {
    const t = this.base + this.slack + (local - this.sent);
    for (let i = 0; i < this.kinds.length; i++) if (this.kinds[i] !== BUCKET && t >= (this.ends[i] as number)) return true;
    return false;
  }

  /**
   * The milli-units that may be spent at local time `local`: 0 once a window has ended; for the bucket
   * policies only the units whose slot still lies ahead (the others are dropped for good).
   */
  usable(local: number): number {
    const t = this.base + this.slack + (local - this.sent);
    let h = this.held;
    for (let i = 0; i < this.kinds.length; i++) {
      const end = this.ends[i] as number;
      if (this.kinds[i] !== BUCKET) {
        if (t >= end) return 0;
        continue;
      }
      // The reported reset is rounded up to the ms: one ms less keeps every slot ahead of `t`.
      const ahead = Math.floor((end - 1 - t) * milliPerMs(this.policies[i] as CompiledPolicy));
      if (ahead < h) h = Math.max(ahead, 0);
    }
    this.held = h;
    return h;
  }

  /**
   * Spends `cost` (the caller checked `usable`) and writes the decision into `out`: what the round trip
   * would answer had this process's held units not been taken yet.
   */
  spend(cost: number, local: number, out: number[]): number[] {
    this.held -= cost;
    const held = this.held;
    let now = this.base + (local - this.got);
    if (now < this.base) now = this.base;
    const elapsed = now - this.base;
    for (let i = 0, o = 0; i < this.kinds.length; i++, o += RESULT_STRIDE) {
      const p = this.policies[i] as CompiledPolicy;
      const end = this.ends[i] as number;
      let remaining = (this.left[i] as number) + held;
      let reset: number;
      let position = this.positions[i] as number;
      if (this.kinds[i] === FIXED_WINDOW) reset = end - now;
      else if (this.kinds[i] === SLIDING_WINDOW) reset = end + p.windowMs - now;
      else {
        const rate = milliPerMs(p);
        remaining += Math.floor(elapsed * rate);
        if (remaining > p.capMilli) remaining = p.capMilli;
        reset = Math.ceil(end - now - held / rate);
        position = HELD_POSITION;
      }
      out[o + R_FLAGS] = F_ALLOWED | F_CHARGED;
      out[o + R_REMAINING] = remaining;
      out[o + R_POSITION] = position;
      out[o + R_RESET] = Math.max(reset, 0);
      out[o + R_DELAY] = 0;
    }
    out[this.kinds.length * RESULT_STRIDE] = now;
    return out;
  }

  /**
   * Store.refund's marks that give the held units back: per policy the charge's mark and position, then
   * nothing given before (the receipt of the whole batch).
   */
  marks(): number[] {
    const n = this.kinds.length;
    const marks = new Array<number>(2 * n + 1).fill(0);
    for (let i = 0; i < n; i++) {
      const p = this.policies[i] as CompiledPolicy;
      marks[i] = (this.ends[i] as number) + (this.kinds[i] === SLIDING_WINDOW ? p.windowMs : 0);
      marks[n + i] = this.positions[i] as number;
    }
    return marks;
  }
}

/**
 * The longest a rejection is answered in memory before one check asks Redis again, ms (local time): a
 * FLUSHALL, a refund or a reset by another process are found within it (Block.answers).
 */
export const BLOCK_RECHECK_MS = 1_000;

/** A rejection Redis gave for `cost`: answered here until the shortest wait among the refusing policies is over. */
export class Block {
  private readonly until: number;

  constructor(
    private readonly r: readonly number[],
    private readonly n: number,
    /** Per policy: milli-units it refills per ms (the bucket algorithms), else 0; and its capacity. */
    private readonly rates: Float64Array,
    private readonly caps: Float64Array,
    readonly cost: number,
    private readonly base: number,
    private readonly sent: number,
    private readonly got: number,
    private readonly slack: number,
    /** One fixed-window policy: any cost above what was left (up to the capacity) is refused until the window ends. */
    private readonly anyCost: boolean,
  ) {
    let wait = Number.POSITIVE_INFINITY;
    for (let i = 0, o = 0; i < n; i++, o += RESULT_STRIDE) {
      if (((r[o + R_FLAGS] as number) & F_ALLOWED) === 0) wait = Math.min(wait, r[o + R_RETRY_AFTER] as number);
    }
    this.until = base + (wait === Number.POSITIVE_INFINITY ? 0 : wait);
  }

  /**
   * Whether Redis would still refuse `cost` at local time `local` (nothing else given back meanwhile),
   * with the same numbers: the cost refused, or on one fixed-window policy any cost above what was left
   * that the policy could ever admit (a larger one is answered `exceeds`, not held). While Redis is away
   * (Store.held), for as long as that holds.
   */
  holds(cost: number, local: number): boolean {
    const same = cost === this.cost || (this.anyCost && cost > (this.r[R_REMAINING] as number) && cost <= (this.caps[0] as number));
    return same && this.base + this.slack + (local - this.sent) < this.until;
  }

  /**
   * `holds`, and a check may be answered from it instead of asking Redis: at most BLOCK_RECHECK_MS after
   * the rejection came; then a check goes to Redis, which may have been given budget back (a refund or a
   * reset by another process) or lost the key (a FLUSHALL, found by that answer). Before, a fixed window
   * exhausted early was answered in memory until it ended: a FLUSHALL went unseen for the rest of the
   * window, and a process started meanwhile got the whole limit again.
   */
  answers(cost: number, local: number): boolean {
    return local - this.got < BLOCK_RECHECK_MS && this.holds(cost, local);
  }

  /** The rejection as it stands at `local`: the same numbers, the waits and resets shorter by the time gone. */
  answer(local: number, out: number[]): number[] {
    let now = this.base + (local - this.got);
    if (now < this.base) now = this.base;
    const e = now - this.base;
    for (let i = 0, o = 0; i < this.n; i++, o += RESULT_STRIDE) {
      out[o + R_FLAGS] = this.r[o + R_FLAGS] as number;
      const remaining = (this.r[o + R_REMAINING] as number) + Math.floor(e * (this.rates[i] as number));
      out[o + R_REMAINING] = Math.min(remaining, this.caps[i] as number);
      const retry = (this.r[o + R_RETRY_AFTER] as number) - e;
      const reset = (this.r[o + R_RESET] as number) - e;
      out[o + R_RETRY_AFTER] = ((this.r[o + R_FLAGS] as number) & F_ALLOWED) === 0 ? Math.max(retry, 0) : 0;
      out[o + R_RESET] = Math.max(reset, 0);
      out[o + R_DELAY] = 0;
    }
    out[this.n * RESULT_STRIDE] = now;
    return out;
  }
}

/**
 * What this process holds for one key when it is peeked (local-batcher.ts `unspent`): units charged in
 * Redis that this process's checks will spend, so a peek counts them as not spent, as those checks do.
 */
export class Unspent {
  constructor(
    /** Per policy: milli-units held over the key's batches; and held in the largest one (a check spends from one batch). */
    private readonly total: Float64Array,
    private readonly largest: number,
    /** Per policy: milli-units refilled per ms (the bucket algorithms), else 0; and its capacity. */
    private readonly rates: Float64Array,
    private readonly caps: Float64Array,
  ) {}

  /**
   * Redis' peek `r` for `cost` with the held units given back: each policy's remaining higher by them (up
   * to its capacity), a bucket's reset shorter by their refill (rounded up: never announced shorter than
   * it is), and admitted, with no wait, when one batch can pay `cost`, as the check would be.
   */
  addTo(r: StoreResult, cost: number): StoreResult {
    const n = this.rates.length;
    const out = Array.from(r);
    const admits = this.largest >= cost;
    for (let i = 0, o = 0; i < n; i++, o += RESULT_STRIDE) {
      const rate = this.rates[i] as number;
      const total = this.total[i] as number;
      out[o + R_REMAINING] = Math.min((out[o + R_REMAINING] as number) + total, this.caps[i] as number);
      if (rate > 0) out[o + R_RESET] = Math.max(Math.ceil((out[o + R_RESET] as number) - total / rate), 0);
      if (admits) {
        out[o + R_FLAGS] = F_ALLOWED | F_CHARGED;
        out[o + R_RETRY_AFTER] = 0;
        out[o + R_DELAY] = 0;
      }
    }
    return out;
  }
}
