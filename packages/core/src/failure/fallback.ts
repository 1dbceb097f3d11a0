/**
 * @module The failure mode's answers, when a check cannot be decided by the store (its node is down or
 * silent, or the key's state gave an error): `'local'` decides with an in-process MemoryStore holding
 * `localShare` of each limit (created on first use); `'open'` admits as if every policy had room;
 * `'closed'` refuses with `reason: 'store-error'`, which is not a quota verdict (adapters answer 503).
 * A cost above a policy's capacity stays `cost-exceeds-capacity` whatever the mode.
 *
 * On a store that can fail, whatever the mode, the store's last answer about each key is remembered
 * (answer-memory.ts, `remembers`), so that a store back without its data is charged again
 * (failure/restore/budget-restore.ts). Only `'local'` answers an outage from it: a key the store had exhausted
 * stays exhausted until its reset, whatever the local limiter would allow. What `'local'` admits is owed
 * to the store (`owed`), which is charged it with the key's next answer or when its node answers again
 * (`takeOwed`/`takeAllOwed`; Decider.remember and Decider.carryAllOwed in limiter/decide.ts, the charge
 * in limiter/carry-owed.ts): a window that began in the outage gets its limit once, not the store's whole
 * limit beside the local admissions.
 */

import type { CompiledPolicy } from '../algorithms/kernel.js';
import { costUnits, DecisionImpl, Group, readGroup } from '../decision.js';
import { MILLI } from '../internal/fixed-point.js';
import type { LimiterConfig } from '../options.js';
import { MemoryStore } from '../stores/memory-store.js';
import {
  F_ALLOWED,
  F_CHARGED,
  F_EXCEEDS,
  R_DELAY,
  R_FLAGS,
  R_REMAINING,
  R_RESET,
  R_RETRY_AFTER,
  RESULT_STRIDE,
  resultCharged,
  type StoreKey,
  type StorePlan,
  type StoreResult,
} from '../stores/store.js';
import type { Decision, DecisionReason, PolicyResult } from '../types.js';
import { AnswerMemory, type Counted, REMEMBERED_KEYS, type RegressListener, type Remembered, type Remembering } from './answer-memory.js';

/** Builds a decision from a store result over `policies` (the limiter's DecisionBuilder.build, limiter/build-decision.ts). */
export type Finish = (key: string, cost: number, r: StoreResult, policies: readonly CompiledPolicy[], degraded: boolean) => Decision;

/** Policy `i`'s entry for `key` in `Fallback.slots`. */
function slotOf(i: number, key: string): string {
  return `${i}\0${key}`;
}

/** The longest a leaky bucket's admission may wait, ms (its `maxDelayMs`; Infinity without one, or for another algorithm). */
function maxWaitMs(p: CompiledPolicy): number {
  return p.algorithm !== 'leaky-bucket' || p.maxDelayTicks === Number.POSITIVE_INFINITY
    ? Number.POSITIVE_INFINITY
    : (p.maxDelayTicks - p.delayTicks) / p.rate;
}

/** What the failure mode admitted for one key that the store has not heard of (Fallback.takeOwed). */
export interface Owed {
  readonly key: string;
  readonly storeKey: StoreKey;
  /** Milli-units. */
  cost: number;
  /**
   * When the last of it was admitted (limiter clock): the entry counts until that is a window old. Not
   * the first: an outage that spans a window's end owes the new window what it admitted there, which an
   * entry dropped (or replaced) a window after its first admission lost, and the new window then got the
   * store's whole limit beside them (16 of 10). Admissions older than the window ride along, charging
   * the key at most to exhausted: a longer refusal, never a second budget.
   */
  last: number;
  /** Taken to be charged to the store (`takeOwed`); a late reply to an earlier charge of it must not count it again. */
  carried: boolean;
  /**
   * Per enforced policy, once the carry that took it ended: whether that policy was charged all of it. A
   * policy charged only what it had left (the key ends exhausted) counts a late run of a call among what
   * it used: giving that back would free budget the outage's admissions spent (limiter/carry-owed.ts).
   */
  full?: readonly boolean[];
  /** What waits for `full` (OwedCarry.afterCarry). */
  waiting?: ((full: readonly boolean[]) => void)[];
}

/** What became of owed admissions the store ran late after all (Fallback.ranLate). */
export type LateRun = 'unowed' | 'carried' | 'gone';

export class Fallback {
  private local: MemoryStore | undefined;
  private readonly localPlan: StorePlan;
  private readonly all: readonly CompiledPolicy[];
  private readonly group = new Group();
  private readonly synthetic: Float64Array;
  /**
   * On a store that can fail, whatever the failure mode: the store's last answers (its rate policies'),
   * created on the first one. A store that lost its state is charged again from them (failure/restore/budget-restore.ts:
   * a login limiter `'closed'` keeps its count through a Redis restarted empty), and `'local'` continues keys
   * from them in an outage. A MemoryStore never fails, so nothing is remembered of it.
   */
  readonly remembers: boolean;
  private memory: AnswerMemory | undefined;
  /** Told of an answer that could not follow the key's last (AnswerMemory.onRegress); set by `watchRegress`. */
  private regress: RegressListener | undefined = undefined;
  private readonly carry: Float64Array;
  /**
   * `'local'` on a store that can fail, for a plan without concurrency policies: per key, what the
   * failure mode admitted that the store has not heard of (milli-units), and when the first of it was
   * admitted; handed to the store with the key's next answer (`takeOwed`). Bounded like the answers.
   */
  private owed: Map<string, Owed> | undefined;
  /** Per key, the last entry a carry took (`takeOwed`), while its late runs may still come; bounded like `owed`. */
  private readonly taken = new Map<string, Owed>();
  /** Entries taken whose carry has not ended (`settle`): while none is and nothing is owed, no answer is `overdrawn`. */
  private carrying = 0;
  /**
   * Per leaky-bucket policy and key (`${i}\0${key}`), when the next admission in an outage may go: one
   * interval after the slot of the last (queuedBehind). At most REMEMBERED_KEYS, the oldest dropped first.
   */
  private readonly slots = new Map<string, number>();
  /** Whether the plan has a leaky-bucket policy (`slots`). */
  private readonly hasLeaky: boolean;
  /** The plan's longest window: admissions older than that count in no window the store still keeps. */
  private readonly horizonMs: number;
  /**
   * Per enforced policy, this process's share of its rate in an outage (the local policy's limit over
   * the policy's: `localShare`): the refill a bucket's record grants it (AnswerMemory), and the spacing
   * of a leaky bucket's slots, `1 / share` intervals apart, so that the processes together keep one.
   */
  private readonly shares: readonly number[];

  constructor(
    private readonly config: LimiterConfig,
    private readonly finish: Finish,
  ) {
    this.all = [...config.policies, ...config.shadowPolicies];
    this.localPlan = Object.freeze({ policies: config.localPolicies, enforcedCount: config.policies.length });
    this.synthetic = new Float64Array(this.all.length * RESULT_STRIDE);
    this.carry = new Float64Array(config.localPolicies.length * RESULT_STRIDE);
    this.remembers = !(config.store instanceof MemoryStore);
    this.horizonMs = Math.max(...config.policies.map((p) => p.windowMs));
    this.hasLeaky = config.policies.some((p) => p.algorithm === 'leaky-bucket');
    this.shares = config.policies.map((p, i) => Math.min(1, (config.localPolicies[i]?.limit ?? p.limit) / p.limit));
    // A plan with a concurrency policy owes its rate policies (carried each on its own: carry-owed.ts).
    if (this.remembers && config.onStoreError === 'local' && config.policies.some((p) => p.algorithm !== 'concurrency'))
      this.owed = new Map();
  }

  /**
   * What the failure mode admitted for `key` since the store last heard of it, in milli-units, if any
   * lies within the plan's longest window of `at`; taken (a carry that fails owes it again). The limiter charges it to the
   * store (Decider.remember in limiter/decide.ts, OwedCarry.carry in limiter/carry-owed.ts) when the store answers for the key again, so that a window
   * that began in the outage does not get the store's whole limit on top of the local admissions.
   */
  takeOwed(key: string, at: number): Owed | undefined {
    const owed = this.owed;
    if (owed === undefined || owed.size === 0) return undefined;
    const o = owed.get(key);
    if (o === undefined) return undefined;
    owed.delete(key);
    if (at - o.last >= this.horizonMs) return undefined;
    this.take(o);
    return o;
  }

  /** `o` is taken to be carried; kept as the key's last carried entry. */
  private take(o: Owed): void {
    o.carried = true;
    this.carrying += 1;
    const taken = this.taken;
    taken.delete(o.key);
    if (taken.size >= REMEMBERED_KEYS) {
      const oldest = taken.keys().next().value;
      if (oldest !== undefined) taken.delete(oldest);
    }
    taken.set(o.key, o);
  }

  /**
   * What a late run of a call for `key` at `at` is to be weighed against: what the key owes now, else what
   * a carry took of it last (within the plan's longest window of its first admission), if anything.
   */
  lateEntry(key: string, at: number): Owed | undefined {
    const o = this.owed?.get(key) ?? this.taken.get(key);
    return o !== undefined && at - o.last < this.horizonMs ? o : undefined;
  }

  /** `takeOwed` of every key `which` picks (those a node that answers again serves: Decider.carryAllOwed in limiter/decide.ts). */
  takeAllOwed(at: number, which: (o: Owed) => boolean): Owed[] {
    const owed = this.owed;
    if (owed === undefined || owed.size === 0) return [];
    const taken: Owed[] = [];
    for (const o of owed.values()) {
      if (!which(o)) continue;
      owed.delete(o.key);
      if (at - o.last >= this.horizonMs) continue;
      this.take(o);
      taken.push(o);
    }
    return taken;
  }

  /** What `key` owes the store now (its entry, which `owe` adds to), if anything. */
  owedFor(key: string): Owed | undefined {
    return this.owed?.get(key);
  }

  /**
   * The store ran a call after all, charging `cost` that the failure mode owes it into `entry` (its reply
   * `r` came late, at `at`: a check it admitted, a charge of owed admissions given up, or a check it
   * refused, whose charge stands for that much of what the key owes): `'unowed'` when the entry still
   * waits and owes that much, which it now owes less (`r` is remembered, and the store's answers count it,
   * so it is no longer taken off them); `'carried'` when a carry took the entry since (the caller weighs
   * this call's charge against it: OwedCarry.afterCarry); `'gone'` when there is nothing to take it off.
   */
  ranLate(entry: Owed | undefined, cost: number, r: StoreResult, at: number): LateRun {
    const owed = this.owed;
    if (entry === undefined || owed === undefined) return 'gone';
    if (owed.get(entry.key) !== entry) return entry.carried ? 'carried' : 'gone';
    if (entry.cost < cost) return 'gone';
    entry.cost -= cost;
    if (entry.cost <= 0) owed.delete(entry.key);
    // Its answer `r` counts it: the key's latest, as any answer the store gives.
    this.remember(entry.key, r, at, entry.storeKey);
    this.memory?.unspend(entry.key, cost);
    return 'unowed';
  }

  /** The store ran late a call for `key` the failure mode refused (AnswerMemory.lateRefused). */
  lateRefused(key: string, r: StoreResult, at: number, storeKey: StoreKey, cost: number): void {
    this.memory?.lateRefused(key, r, at, storeKey, cost);
  }

  /**
   * The store took what was owed for `key` (its answer `r` at `at`, which counts it): remembered as the
   * key's last answer, and no longer taken off the store's answers.
   */
  told(key: string, r: StoreResult, at: number, storeKey: StoreKey = key): void {
    this.carryAnswered(key, r, at, storeKey);
    this.memory?.told(key);
  }

  /**
   * The store's answer `r` at `at` to a carry's charge for `key` (the carries count in it: `carryLanded`),
   * remembered. No check is decided by it, so one that could not follow the key's record (a server that
   * came back behind, budget given back elsewhere meanwhile) does not make the record stand (the checks'
   * own answers do, AnswerMemory.remember); it is remembered once the question out finds the store kept
   * the key, as a check's answer is (Decider.judged): left unremembered, the record expected the carries
   * on top of an older answer, and the key's next answers could not follow it.
   */
  carryAnswered(key: string, r: StoreResult, at: number, storeKey: StoreKey = key): void {
    const held = this.remember(key, r, at, storeKey, 0, false);
    if (typeof held === 'boolean') return;
    const answer = Float64Array.from(r);
    void held.then((lost) => {
      if (!lost) this.accept(key, answer, at, storeKey);
    });
  }

  /**
   * A charge of what the failure mode admitted for `key` landed (its answer just came), `charged[i]`
   * milli-units on enforced policy `i`: until the store's next answer is remembered, which counts it, an
   * answer is judged without it (AnswerMemory.carried).
   */
  carryLanded(key: string, charged: ArrayLike<number>): void {
    this.memory?.carried(key, charged);
  }

  /**
   * The store took what was owed for `key` policy by policy, in calls of their own (a plan with a
   * concurrency policy: OwedCarry.carryRates): no longer taken off its answers.
   */
  toldApart(key: string): void {
    this.memory?.told(key);
  }

  /** How long after `at` policy `i` of `key`'s record counts what it counted (ms; 0 when it has reset, or none is kept). */
  resetsIn(key: string, i: number, at: number): number {
    return this.memory?.resetsIn(key, i, at) ?? 0;
  }

  /**
   * The store's answer `r` for `key` at `at` charged `cost`, but leaves some enforced policy less than
   * what the failure mode admitted that the store has not counted yet (its carry is on the way: `r` was
   * sent before it, as the call that ended an outage is): that admission would be over the limit. Returns
   * `r` as a refusal by those policies (a copy; the charge stays in the store, it stands for the
   * admissions the carry cannot fit), else undefined. A policy that had room still admits in the copy.
   */
  overdrawn(key: string, r: StoreResult, cost: number, at: number): StoreResult | undefined {
    // Nothing admitted that the store has not been told of (or is being told of): the common case, at once.
    if (this.carrying === 0 && (this.owed === undefined || this.owed.size === 0)) return undefined;
    const rooms = this.roomsFor(key, r, at);
    if (rooms === undefined || !rooms.some((room) => room < 0)) return undefined;
    const memory = this.memory as AnswerMemory;
    const m = memory.live(key, at) as Remembered;
    // `room` counts this answer's charge already (the store's remaining less the owed): a policy lacks room below 0.
    return this.refusedBy(r, rooms, 0, cost, m, at);
  }

  /** The carry that took `e` ended, charging all of it to the policies `full` marks: what waited for that runs (OwedCarry.afterCarry). */
  settle(e: Owed, full: readonly boolean[]): void {
    if (e.full !== undefined) return;
    e.full = full;
    this.carrying -= 1;
    const waiting = e.waiting;
    e.waiting = undefined;
    if (waiting !== undefined) for (const then of waiting) then(full);
  }

  /** `cost` admitted for `key` (`storeKey` in the store) at `at` without the store (only with `owed`): owed to it, in the entry returned. */
  owe(key: string, storeKey: StoreKey, cost: number, at: number): Owed {
    const owed = this.owed as Map<string, Owed>;
    const o = owed.get(key);
    if (o !== undefined && at - o.last < this.horizonMs) {
      o.cost += cost;
      if (at > o.last) o.last = at;
      return o;
    }
    if (o === undefined && owed.size >= REMEMBERED_KEYS) {
      const oldest = owed.keys().next().value;
      if (oldest !== undefined) owed.delete(oldest);
    }
    const entry: Owed = { key, storeKey, cost, last: at, carried: false };
    owed.set(key, entry);
    return entry;
  }

  /**
   * The store answered `r` for `key` (`storeKey` in the store) at `at` (only when `remembers`), to a call
   * charging `cost` (0: unknown). See `Remembering`: when the key's record stands against it,
   * `againstRecord` decides.
   */
  remember(key: string, r: StoreResult, at: number, storeKey: StoreKey = key, cost = 0, stand = true): Remembering {
    if (this.memory === undefined) {
      this.memory = new AnswerMemory(this.config.policies, REMEMBERED_KEYS, this.shares);
      this.memory.onRegress = this.regress;
    }
    return this.memory.remember(key, r, at, storeKey, cost, stand);
  }

  /** The question found the store kept `key`'s state: its answer `r` at `at` is remembered as it is (AnswerMemory.accept). */
  accept(key: string, r: StoreResult, at: number, storeKey: StoreKey = key): void {
    this.memory?.accept(key, r, at, storeKey);
  }

  /** The store lost nothing after all, by the question whose verdict is `verdict` (failure/restore/budget-restore.ts): the records it made stand go (AnswerMemory.release). */
  releaseRecords(verdict: Promise<boolean>): void {
    this.memory?.release(verdict);
  }

  /**
   * The store's answer `r` for `key` at `at`, charging `cost`, could not follow the key's record, which
   * stands (`remember`: the store lost the key): the answer came from a key the store lost, and the
   * record says what the key has. Admitted when the record has room for `cost` on every
   * policy (taken off the record, AnswerMemory.follow): `r`, saying what the record has left (a copy: the
   * emptied key's own said 1,999 of 2,000 left after 1,200 were used). Else `r` as a refusal by the policies
   * without room (a copy, as `overdrawn` makes; the charge stays in the store, where the restore then
   * charges what is left). An answer that charged nothing is its own refusal: `r`.
   */
  againstRecord(key: string, r: StoreResult, cost: number, at: number): StoreResult {
    const rooms = this.roomsFor(key, r, at);
    if (rooms === undefined) return r;
    const memory = this.memory as AnswerMemory;
    const m = memory.live(key, at) as Remembered;
    if (rooms.every((room) => room >= cost)) {
      memory.follow(key, cost, at);
      const x = Float64Array.from(r);
      for (let i = 0; i < rooms.length; i++) {
        const room = rooms[i] as number;
        if (room !== Number.POSITIVE_INFINITY) x[i * RESULT_STRIDE + R_REMAINING] = Math.max(0, Math.floor(room - cost));
      }
      return x;
    }
    return this.refusedBy(r, rooms, cost, cost, m, at);
  }

  /**
   * `r`, an answer charging `cost`, as a refusal by the policies whose room (`rooms`) is less than `need`;
   * their waits from record `m`.
   */
  private refusedBy(r: StoreResult, rooms: readonly number[], need: number, cost: number, m: Remembered, at: number): StoreResult {
    const memory = this.memory as AnswerMemory;
    const x = Float64Array.from(r);
    for (let i = 0, o = 0; i < rooms.length; i++, o += RESULT_STRIDE) {
      const room = rooms[i] as number;
      let flags = (x[o + R_FLAGS] as number) & ~F_CHARGED;
      if (room < need) {
        flags &= ~F_ALLOWED;
        x[o + R_RETRY_AFTER] = memory.waitFor(m, i, cost, at);
      }
      x[o + R_FLAGS] = flags;
      if (room !== Number.POSITIVE_INFINITY) x[o + R_REMAINING] = Math.max(0, Math.floor(room));
    }
    return x;
  }

  /**
   * Calls `listener`, before the answer is remembered, when the store answers a key with more budget than
   * the key could have had back since its last answer (AnswerMemory.onRegress); undefined stops the calls.
   */
  watchRegress(listener: RegressListener | undefined): void {
    this.regress = listener;
    if (this.memory !== undefined) this.memory.onRegress = listener;
  }

  /** A refund gave `cost` back to `storeKey` at `at`: remembered (AnswerMemory.refunded). */
  refunded(storeKey: StoreKey, cost: number, at: number): void {
    this.memory?.refunded(storeKey, cost, at);
  }

  /** The store counted at least `used` (per policy) of `key` at `at`: its record has that much used at least (AnswerMemory.atLeast). */
  countedAtLeast(key: string, used: ArrayLike<number>, at: number): void {
    this.memory?.atLeast(key, used, at);
  }

  /** What the store had counted for each remembered key, by its last answers, still counted at `at` (AnswerMemory.counted). */
  counted(at: number): Counted[] {
    return this.memory?.counted(at) ?? [];
  }

  /** Keys whose last answer is remembered (for tests). */
  get remembered(): number {
    return this.memory?.size ?? 0;
  }

  /**
   * The failure mode's decision for a request of `cost` on `key` at `at`; `retryMs` is how long until
   * the store may be tried again (a hint for `'closed'`, at least one second).
   */
  answer(key: string, cost: number, at: number, retryMs: number, storeKey: StoreKey = key, lease?: number): Decision {
    const { onStoreError, mode } = this.config;
    if (onStoreError === 'local') {
      if (this.local === undefined) this.local = new MemoryStore();
      const memory = this.memory;
      const records = memory === undefined ? undefined : this.recordsOf(memory, key, storeKey, at);
      const d =
        records !== undefined
          ? this.carried(memory as AnswerMemory, key, cost, at, storeKey, records, lease)
          : this.fresh(key, cost, at, storeKey, lease);
      if (this.owed !== undefined && d.allowed && !d.limited) this.owe(key, storeKey, cost, at);
      return d;
    }
    const open = onStoreError === 'open';
    const retry = open ? 0 : Math.max(1000, retryMs);
    const all = this.all;
    const synthetic = this.synthetic;
    for (let i = 0; i < all.length; i++) {
      const p = all[i] as CompiledPolicy;
      const o = i * RESULT_STRIDE;
      // A lease is one slot whatever the cost.
      const exceeds = p.algorithm !== 'concurrency' && cost > p.capMilli;
      synthetic[o + R_FLAGS] = exceeds ? F_EXCEEDS : open ? F_ALLOWED | F_CHARGED : 0;
      synthetic[o + R_REMAINING] = open && !exceeds ? p.capMilli - cost : 0;
      synthetic[o + R_RETRY_AFTER] = exceeds ? 0 : retry;
    }
    const g = readGroup(this.group, synthetic, all, 0, this.config.policies.length);
    const b = g.binding as PolicyResult;
    const exceeded = g.reason === 'cost-exceeds-capacity';
    const reason: DecisionReason = exceeded ? 'cost-exceeds-capacity' : 'store-error';
    return new DecisionImpl(
      mode === 'shadow' || (open && !exceeded),
      exceeded,
      reason,
      mode,
      key,
      costUnits(cost),
      b.name,
      b.remaining,
      exceeded || open ? 0 : retry,
      0,
      0,
      g.results,
      undefined,
      true,
    );
  }

  /**
   * Per enforced policy, the record its budget stands in: the key's own, or with several keys per
   * decision, the one last answered for that policy's own key (AnswerMemory.shared: a tenant Redis had
   * exhausted stays exhausted for a user never seen with it); undefined when no policy has one.
   */
  private recordsOf(memory: AnswerMemory, key: string, storeKey: StoreKey, at: number): (Remembered | undefined)[] | undefined {
    const m = memory.live(key, at);
    const n = this.config.policies.length;
    if (typeof storeKey === 'string') return m === undefined ? undefined : new Array<Remembered>(n).fill(m);
    const records = Array.from({ length: n }, (_, i) => memory.shared(storeKey, i, at) ?? m);
    return records.some((r) => r !== undefined) ? records : undefined;
  }

  /**
   * An admission in an outage of a leaky bucket: it waits behind the queue the store last reported (and
   * the outage's admissions before it), not behind the local bucket's, which starts empty, and behind the
   * slot the failure mode gave the admission before it (`slots`), after that record has reset too: a full
   * queue of 10 a second and a 1.5 s outage scheduled up to 19 into one second, beside the store's queue.
   */
  private queuedBehind(key: string, cost: number, waits: readonly number[], r: Float64Array, at: number): void {
    const policies = this.config.policies;
    for (let i = 0, o = 0; i < policies.length; i++, o += RESULT_STRIDE) {
      const p = policies[i] as CompiledPolicy;
      if (p.algorithm !== 'leaky-bucket') continue;
      const delay = Math.max(r[o + R_DELAY] as number, waits[i] as number);
      r[o + R_DELAY] = delay;
      // The next admission goes one interval (per unit of cost) after this one, over this process's share.
      const slot = slotOf(i, key);
      this.slots.delete(slot);
      if (this.slots.size >= REMEMBERED_KEYS) this.slots.delete(this.slots.keys().next().value as string);
      this.slots.set(slot, at + delay + Math.ceil((cost * p.windowMs) / (MILLI * p.limit * (this.shares[i] ?? 1))));
    }
  }

  /**
   * Per policy, how long an admission now would wait in a leaky bucket's queue: behind the queue the
   * store last reported (`records`, while live) and the slot the failure mode gave the admission before
   * (`slots`); 0 for the other policies; undefined for a plan without a leaky bucket.
   */
  private queueWaits(
    memory: AnswerMemory | undefined,
    key: string,
    records: readonly (Remembered | undefined)[],
    at: number,
  ): number[] | undefined {
    if (!this.hasLeaky) return undefined;
    return this.config.policies.map((p, i) => {
      if (p.algorithm !== 'leaky-bucket') return 0;
      let wait = Math.max(0, (this.slots.get(slotOf(i, key)) ?? at) - at);
      const m = records[i];
      if (m !== undefined && memory !== undefined && memory.room(m, i, at) !== Number.POSITIVE_INFINITY)
        wait = Math.max(wait, memory.drainMs(m, i, at));
      return wait;
    });
  }

  /** `flags` of policy `i` of `r` (at offset `o`) refused when its queue (`waits`) is past its `maxDelayMs`: the retry is the excess. */
  private refusedIfQueueFull(r: Float64Array, o: number, flags: number, waits: readonly number[] | undefined, i: number): number {
    const over = waits === undefined ? 0 : (waits[i] as number) - maxWaitMs(this.config.policies[i] as CompiledPolicy);
    if (over <= 0) return flags;
    r[o + R_RETRY_AFTER] = Math.max(r[o + R_RETRY_AFTER] as number, Math.ceil(over));
    return flags & ~F_ALLOWED & ~F_CHARGED;
  }

  /** Per enforced policy, the room `key`'s live record has at `at` (AnswerMemory.room); undefined without a record, or when `r` charged not every policy. */
  private roomsFor(key: string, r: StoreResult, at: number): number[] | undefined {
    const memory = this.memory;
    const m = memory?.live(key, at);
    if (memory === undefined || m === undefined) return undefined;
    const rooms: number[] = [];
    for (let i = 0; i < this.config.policies.length; i++) {
      if (!resultCharged(r, i)) return undefined;
      rooms.push(memory.room(m, i, at));
    }
    return rooms;
  }

  /** Whether every enforced policy of `r` charged it. */
  private chargedAll(r: StoreResult): boolean {
    for (let i = 0; i < this.config.policies.length; i++) if (!resultCharged(r, i)) return false;
    return true;
  }

  /** The local limiter's answer for a key the store told nothing of that still counts (no live record); a leaky bucket's admission keeps its slot (`queuedBehind`). */
  private fresh(key: string, cost: number, at: number, storeKey: StoreKey, lease: number | undefined): Decision {
    const local = this.local as MemoryStore;
    const waits = this.queueWaits(undefined, key, [], at);
    const policies = this.config.policies;
    const r = this.carry;
    if (waits === undefined)
      return this.finish(key, cost, local.apply(storeKey, this.localPlan, cost, at, lease), this.config.localPolicies, true);
    if (policies.some((p, i) => (waits[i] as number) > maxWaitMs(p))) {
      // The queue the outage scheduled is full: refused, nothing charged.
      r.set(local.peek(storeKey, this.localPlan, cost, at));
      for (let i = 0, o = 0; i < policies.length; i++, o += RESULT_STRIDE)
        r[o + R_FLAGS] = this.refusedIfQueueFull(r, o, (r[o + R_FLAGS] as number) & ~F_CHARGED, waits, i);
      return this.finish(key, cost, r, this.config.localPolicies, true);
    }
    r.set(local.apply(storeKey, this.localPlan, cost, at, lease));
    if (this.chargedAll(r)) this.queuedBehind(key, cost, waits, r, at);
    return this.finish(key, cost, r, this.config.localPolicies, true);
  }

  /**
   * `'local'` for a key the store answered before: admitted only if every enforced policy still has room
   * by the store's last answer (less what the failure mode admitted since) and the local limiter admits;
   * the decision's numbers are the tighter of the two. A policy without a record (`records[i]`) has the
   * local limiter's room only.
   */
  private carried(
    memory: AnswerMemory,
    key: string,
    cost: number,
    at: number,
    storeKey: StoreKey,
    records: readonly (Remembered | undefined)[],
    lease: number | undefined,
  ): Decision {
    const local = this.local as MemoryStore;
    const policies = this.config.policies;
    const room = (i: number): number => {
      const m = records[i];
      return m === undefined ? Number.POSITIVE_INFINITY : memory.room(m, i, at);
    };
    const waits = this.queueWaits(memory, key, records, at);
    let blocked = false;
    for (let i = 0; i < policies.length; i++) {
      if (cost <= (policies[i] as CompiledPolicy).capMilli && cost > room(i)) blocked = true;
      if (waits !== undefined && (waits[i] as number) > maxWaitMs(policies[i] as CompiledPolicy)) blocked = true;
    }
    const r = this.carry;
    r.set(blocked ? local.peek(storeKey, this.localPlan, cost, at) : local.apply(storeKey, this.localPlan, cost, at, lease));
    if (!blocked && this.chargedAll(r)) {
      if (waits !== undefined) this.queuedBehind(key, cost, waits, r, at);
      for (let i = 0; i < policies.length; i++) if (records[i] !== undefined) memory.spendOne(records[i] as Remembered, i, cost, at);
    }
    for (let i = 0, o = 0; i < policies.length; i++, o += RESULT_STRIDE) {
      const left = room(i);
      if (left !== Number.POSITIVE_INFINITY) r[o + R_REMAINING] = Math.max(0, Math.min(r[o + R_REMAINING] as number, Math.floor(left)));
      if (!blocked) continue;
      // Nothing is charged; the policies without room refuse until their reset.
      let flags = (r[o + R_FLAGS] as number) & ~F_CHARGED;
      const cap = (policies[i] as CompiledPolicy).capMilli;
      if (cost > left && cost <= cap) {
        const m = records[i] as Remembered;
        flags &= ~F_ALLOWED;
        r[o + R_RETRY_AFTER] = memory.waitFor(m, i, cost, at);
        r[o + R_RESET] = Math.max(r[o + R_RESET] as number, memory.waitFor(m, i, cap, at));
      }
      flags = this.refusedIfQueueFull(r, o, flags, waits, i);
      r[o + R_FLAGS] = flags;
    }
    return this.finish(key, cost, r, this.config.localPolicies, true);
  }

  /** `onStoreError: 'local'`: the in-process store and plan whose leases a degraded decision holds. */
  get leases(): { readonly store: MemoryStore; readonly plan: StorePlan } | undefined {
    return this.local === undefined ? undefined : { store: this.local, plan: this.localPlan };
  }

  reset(key: string): void {
    this.local?.reset(key, this.localPlan);
    this.memory?.reset(key);
    this.owed?.delete(key);
    this.taken.delete(key);
  }

  close(): void {
    this.local?.close();
  }
}
