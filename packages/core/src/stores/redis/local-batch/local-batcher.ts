/**
 * @module Batched budgets for hot keys (RedisStore `localBatch`): a key this process decides often takes
 * a batch of its budget from Redis in one atomic call (the plan's own script, charged as that many
 * requests would be), answers from it in memory until it is spent or stale, and gives what is left back
 * through the refund script. A rejection Redis gave is answered here until its wait is over. Keys not
 * seen often, plans with a policy that cannot be batched exactly (exactness.ts) and keys given as
 * several keys go on as before: one round trip, exact.
 *
 * Batches adapt: a batch is the key's rate in this process times `holdMs`, at most `maxShare` of each
 * policy's limit, at most half of what Redis said was left (so near the limit batches shrink to one
 * unit, the round trip), and for the bucket algorithms at most what this process spends before the
 * batch's slots pass. When a batch runs low, the next is taken in the background, so a hot key's
 * checks stay synchronous. When Redis is unreachable, what is held keeps being spent; nothing else is
 * (the call for a new batch fails, and the limiter's failure mode answers).
 */
import { performance } from 'node:perf_hooks';
import { F_CHARGED, F_EXCEEDS, R_FLAGS, RESULT_STRIDE, type StorePlan, type StoreResult } from '../../store.js';
import { Batch, Block, HELD_POSITION, newResult, replyNow, Unspent } from './batch.js';
import { BUCKET } from './exactness.js';
import { KeyEntry, RATE_INTERVAL_MS } from './key-entry.js';
import type { LocalBatchConfig } from './options.js';
import { type PlanState, PlanStates } from './plan-states.js';
import { SeenCount } from './seen-count.js';

/** How long `close` waits for Redis to take back what is held, ms. */
export const CLOSE_WAIT_MS = 1_000;

/** What the batcher needs of the store: one charge (the plan's script) and one give-back (its refund script). */
export interface BatchCalls {
  charge(key: string, plan: StorePlan, cost: number, now: number): Promise<StoreResult>;
  /** Resolves to one flag per policy: 1 when its state took the units back. */
  giveBack(key: string, plan: StorePlan, cost: number, marks: readonly number[], now: number): Promise<ArrayLike<number>>;
}

/** Counts since the store was created (`RedisStore.localBatchStats`). */
export interface LocalBatchStats {
  /** Decisions answered in memory from a batch. */
  batched: number;
  /** Rejections answered in memory until Redis' wait was over. */
  blocked: number;
  /** Calls that took a batch (or, sized to one unit, the request alone), and the milli-units they charged. */
  charges: number;
  chargedMilli: number;
  /**
   * Milli-units given back to Redis unspent, counted once every policy took them. Not counted: a bucket's
   * held units dropped once their slot passed, and a window's once it ended (those went back with their
   * state, with no call), and a bucket batch charged before another charge of the key, which Redis does
   * not take back (see `giveBack`).
   */
  givenBackMilli: number;
}

/**
 * Hash slots of a plan's doorway, at most (a power of two; 128 KiB of counts). A doorway starts at
 * DOORWAY_FIRST_SLOTS (2 KiB) and grows to the untracked decisions of an interval: 500 plans (per-customer
 * overrides) of a few cold keys each once took 64 MB, 128 KiB each.
 */
const DOORWAY_SLOTS = 65_536;

/** FNV-1a over the key's UTF-16 code units, to a doorway slot. */
function slotOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 0) & (DOORWAY_SLOTS - 1);
}

export class LocalBatcher {
  readonly stats: LocalBatchStats = { batched: 0, blocked: 0, charges: 0, chargedMilli: 0, givenBackMilli: 0 };
  /** Per plan, its state; the states of the plans that reach the same Redis keys are found from it (plan-states.ts). */
  private readonly states: PlanStates;
  /** Entries holding batches, with their plan: what the sweep and `close` give back. */
  private readonly holding = new Map<KeyEntry, StorePlan>();
  private readonly slack: number;
  private readonly minPerInterval: number;
  private sweeper: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly config: LocalBatchConfig,
    private readonly calls: BatchCalls,
    /** `timeSource: 'limiter'`: the limiter's `now` is the clock (virtual time in tests); else performance.now(). */
    private readonly limiterTime: boolean,
  ) {
    this.slack = limiterTime ? 0 : 1;
    this.states = new PlanStates(config.maxShare);
    this.minPerInterval = Math.max(1, Math.ceil((config.minRate * RATE_INTERVAL_MS) / 1000));
    this.doorwayAt = Math.min(this.minPerInterval, 4);
  }

  /** Decisions a key's doorway slot must see in an interval before the key is tracked. */
  private readonly doorwayAt: number;

  /**
   * The decision for `cost` on `key` from what this process holds (synchronous), after the call for a
   * batch (a promise), or undefined: not batched, send the round trip as usual.
   */
  apply(key: string, plan: StorePlan, cost: number, now: number): StoreResult | Promise<StoreResult> | undefined {
    // A cold key costs the plan's state (the last plan's, without a lookup), one Map miss and the doorway:
    // no clock read, no allocation. The doorway counts on the limiter's `now`, already read for this check.
    const ps = plan === this.lastPlan ? this.lastState : this.planState(plan);
    if (ps === undefined) return undefined;
    let e = ps.entries.get(key);
    let local: number;
    if (e === undefined) {
      const seen = this.doorway(ps, key, now);
      if (seen < this.doorwayAt) return undefined;
      local = this.limiterTime ? now : performance.now();
      e = this.entry(ps, plan, key, local, seen - 1);
    } else {
      e.used = true;
      local = this.limiterTime ? now : performance.now();
    }
    e.seen(local, this.minPerInterval);
    e.lastNow = now;
    return this.answer(ps, e, plan, cost, now, local, e.out);
  }

  private answer(
    ps: PlanState,
    e: KeyEntry,
    plan: StorePlan,
    cost: number,
    now: number,
    local: number,
    out: number[],
  ): StoreResult | Promise<StoreResult> | undefined {
    if (e.batches.length > 0 && this.spend(ps, e, plan, cost, now, local, out)) return out;
    if (e.block !== undefined) {
      if (e.block.answers(cost, local)) {
        this.stats.blocked += 1;
        return e.block.answer(local, out);
      }
      e.block = undefined;
    }
    if (!e.hot) return undefined;
    if (e.pending !== undefined) {
      const again = () => this.later(ps, e, plan, cost, now);
      return e.pending.then(again, again);
    }
    return this.take(ps, e, plan, cost, now, local);
  }

  /** `Store.held`: the answer from a batch or a standing rejection only (the store is not to be called). */
  held(key: string, plan: StorePlan, cost: number, now: number): StoreResult | undefined {
    const ps = this.planState(plan);
    const e = ps?.entries.get(key);
    if (ps === undefined || e === undefined) return undefined;
    const local = this.limiterTime ? now : performance.now();
    e.lastNow = now;
    // Fresh arrays: the limiter reads them at once, but a prefetch is not started while the store is away.
    const out = newResult(ps.kinds.length);
    for (const b of e.batches) {
      if (b.usable(local) >= cost) {
        this.stats.batched += 1;
        return b.spend(cost, local, out);
      }
    }
    if (e.block?.holds(cost, local)) {
      this.stats.blocked += 1;
      return e.block.answer(local, out);
    }
    return undefined;
  }

  /**
   * `store.peek` of `key`: the units this process holds and could spend now (Unspent), which Redis counts
   * as spent since the batch was taken, and those of its calls still in flight, which Redis may count
   * already; undefined when there are none. What every plan that reaches the key's Redis keys holds counts,
   * per policy (plan-states.ts: a limiter of the same name beside this one); a batch pays the peeked cost
   * where a check of this plan's policies and limits would spend it (this plan's, or a twin's).
   */
  unspent(key: string, plan: StorePlan, now: number): Unspent | undefined {
    const ps = this.planState(plan);
    if (ps === undefined) return undefined;
    const local = this.limiterTime ? now : performance.now();
    const total = new Float64Array(ps.kinds.length);
    let largest = 0;
    for (const [e, at, state] of this.entriesOf(key, plan)) {
      const twin = state.identity === ps.identity;
      // A call in flight: Redis may have charged it already, and a batch it brings is this process's to spend.
      let held = e.flying;
      for (const b of e.batches) {
        const usable = b.usable(local);
        held += usable;
        // As `spend`: a batch held past 2 x holdMs is given back, not spent (its units are not spent either).
        if (twin && usable > largest && local - b.got <= 2 * this.config.holdMs) largest = usable;
      }
      for (let i = 0; i < total.length; i++) if (at === undefined || (at[i] as number) >= 0) total[i] = (total[i] as number) + held;
    }
    return total.some((x) => x > 0) ? new Unspent(total, largest, ps.rates, ps.caps) : undefined;
  }

  /** A check that waited for the call in flight: answered from what it brought, or by its own call. */
  private later(ps: PlanState, e: KeyEntry, plan: StorePlan, cost: number, now: number): StoreResult | Promise<StoreResult> {
    const local = this.limiterTime ? now : performance.now();
    return this.answer(ps, e, plan, cost, now, local, newResult(ps.kinds.length)) ?? this.send(e, plan, cost, now);
  }

  /** Spends `cost` from the first batch that can, into `out`; drops (and gives back) the batches that cannot. */
  private spend(ps: PlanState, e: KeyEntry, plan: StorePlan, cost: number, now: number, local: number, out: number[]): boolean {
    const batches = e.batches;
    while (batches.length > 0) {
      const b = batches[0] as Batch;
      const usable = b.usable(local);
      if (usable >= cost && local - b.got <= 2 * this.config.holdMs) {
        b.spend(cost, local, out);
        this.stats.batched += 1;
        if (e.pending === undefined && this.low(e, local)) this.prefetch(ps, e, plan, cost, now, local);
        return true;
      }
      batches.shift();
      this.giveBack(e, plan, b, local, now);
    }
    this.holding.delete(e);
    return false;
  }

  /** Whether what is held has fallen under a quarter of the last batch. */
  private low(e: KeyEntry, local: number): boolean {
    return e.usable(local) * 4 <= e.lastCharge;
  }

  /**
   * The next batch's size for `cost`, milli-units (one `cost` at least: then it is the round trip). With
   * what is still `held`, never more than `maxShare` in all: a prefetch while a quarter of the last batch
   * is left took a whole share beside it (1.25 x `maxShare` held).
   */
  private size(ps: PlanState, e: KeyEntry, cost: number, local: number, held = 0): number {
    const rate = e.rate(local);
    let n = Math.floor(rate * this.config.holdMs);
    const share = Math.floor((ps.shareMilli - held) / cost);
    if (share < n) n = share;
    // Near the limit: at most half of what Redis said was left, so few units strand in this process.
    const half = Math.floor(e.lastLeft / (2 * cost));
    if (half < n) n = half;
    if (ps.hasBucket) {
      // Buckets: only the units this process spends before their slots pass (exactness.ts), judged as
      // `Batch.usable` will judge them once the reply is read: from the bucket's debt in the last reply
      // less the time since, the ms its rounding up may add, the store clock's slack and a round trip. A
      // busy bucket near full owes a fraction of a ms, read as 1: before, that asked 3 to 4 units, none
      // spendable by the time the reply came, and the key's checks waited on that call one by one.
      const ahead = Math.floor(rate * (e.lastDebt - 1 - this.slack - (local - e.lastGot) - e.lastRtt));
      if (ahead < n) n = ahead;
    }
    return n > 1 ? n * cost : cost;
  }

  /**
   * Takes a batch (or sends the request alone) for a check that found nothing held. Only a batch makes
   * the key's next checks wait for it (`pending`: it may bring their units); a request sized to itself
   * (near the limit, over a bucket's rate, a bucket near full) is the round trip, sent at once beside any
   * others as without `localBatch`, not one after another.
   */
  private take(ps: PlanState, e: KeyEntry, plan: StorePlan, cost: number, now: number, sent: number): Promise<StoreResult> {
    const charge = this.size(ps, e, cost, sent);
    this.counted(charge);
    const resets = e.resets;
    const beside = e.beside;
    const p = this.send(e, plan, charge, now).then((r) => {
      // Sent before a reset of the key: decided on the state the reset deleted. This check keeps its
      // answer (it came first); the rest of a batch went with that state: neither kept nor given back.
      if (e.resets !== resets) return charge === cost || !charged(r) ? r : this.unkept(ps, plan, r, charge, cost, sent, now);
      const got = this.learn(ps, e, r, now, charge, sent);
      if (charge === cost) return this.single(ps, e, r, cost, sent, got);
      if (charged(r)) {
        const b = this.keep(ps, e, plan, r, charge, sent, got, beside);
        // The check that asked is admitted at the script's time, from the batch's first units.
        return b.spend(cost, got, newResult(ps.kinds.length));
      }
      // The batch did not fit: this request alone, as the round trip would.
      this.counted(cost);
      const again = this.limiterTime ? now : performance.now();
      return this.send(e, plan, cost, now).then((r2) => this.single(ps, e, r2, cost, again, this.learn(ps, e, r2, now, cost, again)));
    });
    if (charge !== cost) this.await(e, p);
    return p;
  }

  /** Takes the next batch in the background while the current one is still being spent. */
  private prefetch(ps: PlanState, e: KeyEntry, plan: StorePlan, cost: number, now: number, sent: number): void {
    const charge = this.size(ps, e, cost, sent, e.usable(sent));
    if (charge < 2 * cost) return;
    this.counted(charge);
    const resets = e.resets;
    const beside = e.beside;
    const p = this.send(e, plan, charge, now).then((r) => {
      // Sent before a reset of the key: its units went with the deleted state (see `take`).
      if (e.resets !== resets) return;
      const got = this.learn(ps, e, r, now, charge, sent);
      if (charged(r)) this.keep(ps, e, plan, r, charge, sent, got, beside);
    }, ignore);
    this.await(e, p);
  }

  /** Sends the charge of `charge` milli-units for `e`'s key, counted in flight until it settles (before its reply is read). */
  private send(e: KeyEntry, plan: StorePlan, charge: number, now: number): Promise<StoreResult> {
    const call = this.calls.charge(e.key, plan, charge, now);
    e.flying += charge;
    const landed = () => {
      e.flying -= charge;
    };
    call.then(landed, landed);
    return call;
  }

  private await(e: KeyEntry, p: Promise<unknown>): void {
    e.pending = p;
    const clear = () => {
      if (e.pending === p) e.pending = undefined;
    };
    p.then(clear, clear);
  }

  private counted(charge: number): void {
    this.stats.charges += 1;
    this.stats.chargedMilli += charge;
  }

  /** A reply for the request alone: passed on as it is; a rejection is kept to answer until its wait is over. */
  private single(ps: PlanState, e: KeyEntry, r: StoreResult, cost: number, sent: number, got: number): StoreResult {
    const flags = r[R_FLAGS] as number;
    if ((flags & (F_CHARGED | F_EXCEEDS)) === 0) {
      const n = ps.kinds.length;
      e.block = new Block(Array.from(r), n, ps.rates, ps.caps, cost, replyNow(r, n), sent, got, this.slack, ps.anyCost);
    }
    return r;
  }

  /** The first units of a batch charged on a state a reset deleted, for the check that asked; the rest are dropped. */
  private unkept(ps: PlanState, plan: StorePlan, r: StoreResult, charge: number, cost: number, sent: number, now: number): StoreResult {
    const got = this.limiterTime ? now : performance.now();
    return this.batch(ps, plan, r, charge, sent, got).spend(cost, got, newResult(ps.kinds.length));
  }

  /** The batch a charged reply holds. */
  private batch(ps: PlanState, plan: StorePlan, r: StoreResult, charge: number, sent: number, got: number): Batch {
    return new Batch(ps.kinds, plan, r, charge, replyNow(r, ps.kinds.length), sent, got, this.slack);
  }

  /**
   * A charged batch, kept for spending; returns it. A call sent before a charge made beside the key
   * (`beside`, what had been charged beside it when the call was sent, behind the entry's) may have been
   * charged before it: its batch counts those charges too.
   */
  private keep(
    ps: PlanState,
    e: KeyEntry,
    plan: StorePlan,
    r: StoreResult,
    charge: number,
    sent: number,
    got: number,
    beside: ArrayLike<number>,
  ): Batch {
    const b = this.batch(ps, plan, r, charge, sent, got);
    if (e.beside !== beside) b.lower(Array.from(e.beside, (x, i) => x - (beside[i] ?? 0)));
    e.batches.push(b);
    e.lastCharge = charge;
    this.holding.set(e, plan);
    this.sweep();
    return b;
  }

  /**
   * What a reply to a call that asked `charge` milli-units says for sizing the next batch, and of the key's
   * count for a restore (SeenCount); returns the local time it came.
   */
  private learn(ps: PlanState, e: KeyEntry, r: StoreResult, now: number, charge: number, sent: number): number {
    const got = this.limiterTime ? now : performance.now();
    e.lastRtt = got - sent;
    if (e.seenCount === undefined) e.seenCount = new SeenCount(ps.kinds, ps.rates, ps.caps, r, got);
    else e.seenCount.replied(r, got, charged(r) ? charge : 0, e.held());
    let left = Number.POSITIVE_INFINITY;
    let debt = Number.POSITIVE_INFINITY;
    for (let i = 0, o = 0; i < ps.kinds.length; i++, o += RESULT_STRIDE) {
      const remaining = r[o + 1] as number;
      if (remaining < left) left = remaining;
      if (ps.kinds[i] === BUCKET && (r[o + 3] as number) < debt) debt = r[o + 3] as number;
    }
    e.lastLeft = left;
    e.lastDebt = debt;
    e.lastGot = got;
    return got;
  }

  /**
   * Gives the units `b` can still spend back to Redis (best effort: a give-back that fails leaves them to
   * expire with their state). A window that has ended takes nothing back; a bucket's units whose slot has
   * passed are already back. A bucket takes them back only while nothing was charged after the batch
   * (the refund script's newest-only give-back): moving it back under a later charge would move it under
   * units another batch (this process's or another's) still holds in later slots, and those would then be
   * spent over the burst. Refused, the units come back as their slots pass.
   */
  private giveBack(e: KeyEntry, plan: StorePlan, b: Batch, local: number, now: number): Promise<unknown> | undefined {
    const held = b.ended(local) ? 0 : b.usable(local);
    b.held = 0;
    if (held <= 0) return undefined;
    e.seenCount?.returned(held);
    return this.calls.giveBack(e.key, plan, held, b.marks(), now).then((took) => {
      if (Array.prototype.every.call(took, (x: number) => x === 1)) this.stats.givenBackMilli += held;
    }, ignore);
  }

  /** The plan `apply` saw last and its state: a limiter with one plan finds it without the WeakMap. */
  private lastPlan: StorePlan | undefined;
  private lastState: PlanState | undefined;

  private planState(plan: StorePlan): PlanState | undefined {
    const ps = this.states.of(plan);
    this.lastPlan = plan;
    this.lastState = ps;
    return ps;
  }

  /**
   * Counts a decision of an untracked key in its doorway slot; returns the slot's decisions in this
   * interval less the margin the cold traffic sets: 4 times the decisions a slot saw on average in the
   * interval before, so that a slot shared by many cold keys does not let them in (each would cost an
   * entry), while a key at `minRate` still stands out. Its intervals run on the limiter's `now` (read
   * for the check anyway): a clock that jumps back starts a new interval, and one that stands still (a
   * test's) only lets more keys in; what counts a tracked key's rate is the entry's own (key-entry.ts).
   */
  private doorway(ps: PlanState, key: string, now: number): number {
    if (now - ps.doorSince >= RATE_INTERVAL_MS || now < ps.doorSince) this.newInterval(ps, now);
    ps.doorSeen += 1;
    // A burst of cold keys after a quiet interval: more decisions than slots, so most slots would reach
    // `doorwayAt` and let every cold key in (100,000 keys after a quiet second: 10,000 entries, 25x the cost).
    if (ps.doorSeen > ps.slotCounts.length && ps.slotCounts.length < DOORWAY_SLOTS) this.widen(ps);
    const s = slotOf(key) & (ps.slotCounts.length - 1);
    const n = (ps.slotCounts[s] as number) + 1;
    if (n < 65_535) ps.slotCounts[s] = n;
    return n - ps.doorMargin;
  }

  /**
   * Starts a doorway interval: the slots grow (to DOORWAY_SLOTS at most) to hold the interval before's
   * untracked decisions one per slot, and the margin is 4 times what a slot saw on average then.
   */
  private newInterval(ps: PlanState, now: number): void {
    let slots = ps.slotCounts.length;
    while (slots < ps.doorSeen && slots < DOORWAY_SLOTS) slots *= 2;
    ps.doorMargin = Math.ceil((4 * ps.doorSeen) / slots);
    if (slots !== ps.slotCounts.length) ps.slotCounts = new Uint16Array(slots);
    else ps.slotCounts.fill(0);
    ps.doorSince = now;
    ps.doorSeen = 0;
  }

  /**
   * Mid-interval: four times the slots (DOORWAY_SLOTS at most), counted afresh, with the margin the
   * interval's decisions so far set, as `newInterval` would: a key stands out by what it adds from now on.
   */
  private widen(ps: PlanState): void {
    const slots = Math.min(DOORWAY_SLOTS, ps.slotCounts.length * 4);
    ps.doorMargin = Math.max(ps.doorMargin, Math.ceil((4 * ps.doorSeen) / slots));
    ps.slotCounts = new Uint16Array(slots);
  }

  /** A new entry for `key`, counting `before` decisions already seen this interval; it may push out another (`evict`). */
  private entry(ps: PlanState, plan: StorePlan, key: string, local: number, before: number): KeyEntry {
    if (ps.entries.size >= this.config.maxKeys) this.evict(ps, plan, local);
    const e = new KeyEntry(key, local, newResult(ps.kinds.length));
    e.seed(before);
    ps.entries.set(key, e);
    return e;
  }

  /**
   * Drops the entry least recently seen, near enough (second chance, as a CLOCK page cache does): from the
   * oldest entry on, one decided since it was last passed over goes to the back, the first that was not
   * goes, its units given back. Exact LRU would move a hot key's entry on every decision.
   */
  private evict(ps: PlanState, plan: StorePlan, local: number): void {
    for (const e of ps.entries.values()) {
      ps.entries.delete(e.key);
      if (e.used) {
        e.used = false;
        ps.entries.set(e.key, e);
        continue;
      }
      this.release(e, plan, local, e.lastNow);
      return;
    }
  }

  /** Gives back everything `e` holds and forgets its batches and rejection. */
  private release(e: KeyEntry, plan: StorePlan, local: number, now: number): void {
    for (const b of e.batches.splice(0)) this.giveBack(e, plan, b, local, now);
    e.block = undefined;
    this.holding.delete(e);
  }

  /**
   * `Store.chargedBeside`: the key is about to be charged `charged` (milli-units per policy) beside what this
   * process holds (a restore after Redis lost its state). Its units stay this process's to spend (Redis
   * counts them), but what each batch says is left is that much less, as the round trip would now say; a
   * batch a call in flight brings alike (`keep`). Where the charge does not fit in what the latest batch
   * left, the key ends exhausted with the units held in it: what it lacks is dropped from them, latest
   * first, or they were spent beyond the limit (a batch taken from a key a FLUSHALL emptied, the key
   * exhausted before: 3,296 of 3,000).
   */
  chargedBeside(key: string, plan: StorePlan, charged: ArrayLike<number>): void {
    for (const [e, at, state] of this.entriesOf(key, plan)) {
      const mine = at === undefined ? charged : inPeer(charged, at, state.kinds.length);
      const before = e.beside;
      e.beside = Array.from({ length: Math.max(before.length, mine.length) }, (_, i) => (before[i] ?? 0) + (mine[i] ?? 0));
      let short = e.batches.at(-1)?.shortBy(mine) ?? 0;
      for (let i = e.batches.length - 1; i >= 0; i--) short = (e.batches[i] as Batch).forfeit(short);
      for (const b of e.batches) b.lower(mine);
    }
  }

  /**
   * `Store.countAtLoss`: the count of `key` in Redis just before its last reply that showed it emptied (a
   * few seconds ago at most), else now, as this process's replies tell it (SeenCount), beside the units it
   * holds; undefined for a key it has not seen two replies of.
   */
  countAtLoss(key: string, plan: StorePlan, now: number): Float64Array | undefined {
    const e = this.planState(plan)?.entries.get(key);
    return e?.seenCount?.count(this.limiterTime ? now : performance.now(), e.held());
  }

  /**
   * A refund of a round-trip decision is on its way to Redis: the key's rejection, answered in process
   * while nothing changed, no longer holds (the refunded budget would stay unused until the window ends,
   * and a check would refuse what a peek says is left), in every plan that reaches its keys. The next
   * check goes to Redis, after the refund.
   */
  unblock(key: string, plan: StorePlan): void {
    for (const [e] of this.entriesOf(key, plan)) e.block = undefined;
  }

  /**
   * `store.reset(key)`, or a loss (Store.lostHeld): what this process held for the key belonged to a state
   * deleted, whichever of its limiters took it (plan-states.ts): the batches and rejections are dropped, and
   * a call in flight brings nothing to spend.
   */
  forget(key: string, plan: StorePlan): void {
    for (const [e] of this.entriesOf(key, plan)) {
      e.batches.length = 0;
      e.block = undefined;
      e.resets += 1;
      e.seenCount = undefined;
      this.holding.delete(e);
    }
  }

  /**
   * The entries of `key` in every plan state that reaches its Redis keys under `plan` (plan-states.ts),
   * each with where `plan`'s policies are in it (undefined: `plan`'s own state) and the state.
   */
  private *entriesOf(key: string, plan: StorePlan): Generator<readonly [KeyEntry, Int16Array | undefined, PlanState]> {
    const ps = this.planState(plan);
    if (ps === undefined) return;
    for (const [state, at] of this.states.reaching(ps)) {
      const e = state.entries.get(key);
      if (e !== undefined) yield [e, at, state];
    }
  }

  /** Starts the timer that gives back batches held past `2 * holdMs` (real time only; virtual time gives back on use). */
  private sweep(): void {
    if (this.sweeper !== undefined || this.limiterTime) return;
    this.sweeper = setInterval(() => {
      const local = performance.now();
      for (const [e, plan] of this.holding) {
        const keep = e.batches.filter((b) => local - b.got <= 2 * this.config.holdMs && !b.ended(local));
        if (keep.length === e.batches.length) continue;
        for (const b of e.batches) if (!keep.includes(b)) this.giveBack(e, plan, b, local, e.lastNow);
        e.batches.splice(0, e.batches.length, ...keep);
        if (keep.length === 0) this.holding.delete(e);
      }
      if (this.holding.size === 0 && this.sweeper !== undefined) {
        clearInterval(this.sweeper);
        this.sweeper = undefined;
      }
    }, this.config.holdMs);
    this.sweeper.unref?.();
  }

  /** Milli-units held now over all keys (for tests and the capacity guide's under-admission figure). */
  heldMilli(): number {
    let h = 0;
    for (const e of this.holding.keys()) h += e.held();
    return h;
  }

  /**
   * Gives back everything held; resolves once Redis answered each give-back (or failed to), or after
   * CLOSE_WAIT_MS: units a silent Redis does not take back by then come back when their state passes.
   */
  close(): Promise<void> {
    if (this.sweeper !== undefined) clearInterval(this.sweeper);
    this.sweeper = undefined;
    const calls: Promise<unknown>[] = [];
    for (const [e, plan] of this.holding) {
      const local = this.limiterTime ? e.lastNow : performance.now();
      for (const b of e.batches.splice(0)) {
        const call = this.giveBack(e, plan, b, local, e.lastNow);
        if (call !== undefined) calls.push(call);
      }
    }
    this.holding.clear();
    if (calls.length === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, CLOSE_WAIT_MS);
      void Promise.all(calls).then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/** Whether a refund's marks name a batched bucket decision (its receipt is not given back; see batch.ts). */
export function heldReceipt(marks: readonly number[], n: number): boolean {
  for (let i = n; i < 2 * n; i++) if (marks[i] === HELD_POSITION) return true;
  return false;
}

/** `charged` (per policy of a plan) as a peer's policies see it: `at[i]` is where policy `i` is in the peer (-1: not). */
function inPeer(charged: ArrayLike<number>, at: Int16Array, n: number): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < at.length; i++) {
    const j = at[i] as number;
    if (j >= 0) out[j] = (out[j] as number) + (charged[i] ?? 0);
  }
  return out;
}

function charged(r: StoreResult): boolean {
  return ((r[R_FLAGS] as number) & F_CHARGED) !== 0;
}

function ignore(): void {}
