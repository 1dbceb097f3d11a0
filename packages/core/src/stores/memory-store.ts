/**
 * @module MemoryStore: the embedded default. State for every (key, policy) pair lives in typed arrays,
 * one table per policy; a key maps to a row with one Map lookup. Memory is bounded by `maxKeys`
 * entries: when full, an O(1) CLOCK sweep (second chance, an approximation of least-recently-used)
 * first drops entries whose state has expired, then entries not used since the hand last passed.
 * Expired entries are also purged by one unref'd timer for the whole store, in bounded batches;
 * there is no timer per key and nothing keeps the process alive.
 */

import { releaseLease, renewLease } from '../algorithms/concurrency.js';
import type { AlgorithmKernel, CompiledPolicy, LogRing, Outcome, StateTable } from '../algorithms/kernel.js';
import { createOutcome } from '../algorithms/kernel.js';
import { REFUND_KERNELS } from '../algorithms/refund-kernels.js';
import { RateLimitConfigError } from '../errors.js';
import { type KeysEnum, readOptions } from '../internal/read-options.js';
import { counterCell, exporters } from '../observability/metric-store.js';
import {
  F_ALLOWED,
  F_CHARGED,
  F_EXCEEDS,
  keyAt,
  R_DELAY,
  R_FLAGS,
  R_POSITION,
  R_REMAINING,
  R_RESET,
  R_RETRY_AFTER,
  RESULT_STRIDE,
  type Store,
  type StoreKey,
  type StorePlan,
} from './store.js';

/** Options of `new MemoryStore(options)`: the most keys kept, and how often expired keys are swept. */
export interface MemoryStoreOptions {
  /**
   * Most (key, policy) entries kept at once; a limiter with two policies uses two entries per key.
   * Defaults to `1_000_000`.
   */
  maxKeys?: number;
  /** How often expired entries are purged, in ms; `0` turns the timer off. Defaults to `10_000`. */
  sweepIntervalMs?: number;
  /** Most entries examined per purge. Defaults to `50_000`. */
  sweepBatch?: number;
}

const INITIAL_SLOTS = 64;

/** Every option, so a typo (`maxKey`) is an error instead of a silent default. */
const STORE_KEYS: KeysEnum<MemoryStoreOptions> = { maxKeys: true, sweepIntervalMs: true, sweepBatch: true };

/**
 * The rows of one policy. Slot 0 is scratch, used to evaluate keys that have no row yet. A row holds the
 * kernel's words, then the CLOCK reference word (1 when used since the hand last passed), so one cache
 * line serves both the decision and the eviction bookkeeping.
 */
class Table implements StateTable {
  f: Float64Array;
  readonly stride: number;
  /** Offset of the reference word within a row. */
  readonly refAt: number;
  logs: (LogRing | undefined)[] = [];
  readonly index = new Map<string, number>();
  keys: (string | undefined)[] = [undefined];
  readonly free: number[] = [];
  /** Slots ever handed out, including scratch slot 0. */
  used = 1;
  hand = 1;
  sweepCursor = 1;
  readonly kernel: AlgorithmKernel;
  /** The lease an apply takes (concurrency tables; set by `apply`). */
  lease = 0;

  constructor(
    readonly policy: CompiledPolicy,
    private readonly maxSlots: number,
  ) {
    this.kernel = policy.kernel;
    this.refAt = policy.kernel.stride;
    this.stride = policy.kernel.stride + 1;
    this.f = new Float64Array(Math.min(INITIAL_SLOTS, maxSlots) * this.stride);
  }

  get size(): number {
    return this.index.size;
  }

  /** A free row for `key`, state initialised. */
  allocate(key: string): number {
    const slot = this.take(key);
    this.kernel.init(this, slot);
    return slot;
  }

  /** A free row for `key` holding the state left in scratch slot 0 (decided there before the row existed). */
  adoptScratch(key: string): number {
    const slot = this.take(key);
    const o = slot * this.stride;
    this.f.copyWithin(o, 0, this.refAt);
    if (this.logs[0] !== undefined) {
      this.logs[slot] = this.logs[0];
      this.logs[0] = undefined;
    }
    return slot;
  }

  private take(key: string): number {
    let slot = this.free.pop();
    if (slot === undefined) {
      if (this.used * this.stride >= this.f.length) this.grow();
      slot = this.used++;
    }
    this.index.set(key, slot);
    this.keys[slot] = key;
    this.f[slot * this.stride + this.refAt] = 0;
    return slot;
  }

  private grow(): void {
    const slots = Math.min(this.maxSlots, (this.f.length / this.stride) * 2);
    const f = new Float64Array(slots * this.stride);
    f.set(this.f);
    this.f = f;
  }

  /** Marks a row as used since the hand last passed. */
  touch(slot: number): void {
    this.f[slot * this.stride + this.refAt] = 1;
  }

  remove(slot: number): void {
    const key = this.keys[slot];
    if (key === undefined) return;
    this.index.delete(key);
    this.keys[slot] = undefined;
    if (this.logs.length > slot) this.logs[slot] = undefined;
    this.free.push(slot);
  }

  /**
   * Drops one entry: the first expired one the hand meets, else the first not used since its last pass.
   * Never the row of `spare` (the key being decided); the caller makes sure another row exists. Returns
   * what it dropped: `'expired'` (state past its expiry, as a sweep would have), `'live'` (an eviction),
   * or undefined (the table was empty).
   */
  evictOne(now: number, spare?: string): 'expired' | 'live' | undefined {
    if (this.index.size === 0) return undefined;
    for (;;) {
      const slot = this.hand;
      this.hand = slot + 1 >= this.used ? 1 : slot + 1;
      const key = this.keys[slot];
      if (key === undefined || key === spare) continue;
      const ref = slot * this.stride + this.refAt;
      const expired = this.kernel.expiresAt(this, slot, this.policy) <= now;
      if (expired || this.f[ref] === 0) {
        this.remove(slot);
        return expired ? 'expired' : 'live';
      }
      this.f[ref] = 0;
    }
  }

  /** Purges expired entries among the next `budget` slots; returns how many it looked at. */
  sweep(now: number, budget: number): number {
    let seen = 0;
    while (seen < budget && this.used > 1) {
      const slot = this.sweepCursor;
      this.sweepCursor = slot + 1 >= this.used ? 1 : slot + 1;
      seen += 1;
      if (this.keys[slot] !== undefined && this.kernel.expiresAt(this, slot, this.policy) <= now) this.remove(slot);
      if (this.sweepCursor === 1) break;
    }
    return seen;
  }
}

/** Per-plan scratch, reused across calls: results, outcomes and the slot found for each policy. */
interface Bound {
  readonly tables: Table[];
  /**
   * The plan's policies, which the kernels read: a table is shared by every policy of its identity, and
   * policies that differ only in a window algorithm's limit (two plans, or a deploy) share one.
   */
  readonly policies: readonly CompiledPolicy[];
  readonly outcomes: Outcome[];
  readonly slots: Int32Array;
  readonly result: Float64Array;
}

/** Sets the lease an apply takes on each of `b`'s tables; out of `apply`, for the decision path's inlining budget (limiter/decide.ts, `Decider.decideAt`). */
function holdLease(b: Bound, lease: number): void {
  for (const t of b.tables) t.lease = lease;
}

/** `tollgate_store_evictions_total{store="memory"}`: every MemoryStore of the process, from the start at 0. */
const EVICTIONS = counterCell('storeEvictions', { storeKind: 'memory' });

/** The in-process store (the default): every policy of a request applied at once, bounded memory, expired keys swept. */
export class MemoryStore implements Store {
  readonly kind = 'memory';
  readonly maxKeys: number;
  private readonly tables = new Map<string, Table>();
  private bindings = new WeakMap<StorePlan, Bound>();
  private count = 0;
  private lastNow = Number.NEGATIVE_INFINITY;
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly sweepBatch: number;
  /** One-entry cache in front of `bindings`: a store usually serves one limiter. */
  private lastPlan: StorePlan | undefined;
  private lastBound: Bound | undefined;
  /** Live entries dropped to stay within `maxKeys` (an expired one making room counts in `purged`). */
  evictions = 0;
  /** Expired entries purged: by the sweep, or to make room for a new key when the store is full. */
  purged = 0;
  /**
   * Counts the calls that may have changed a key's state: charges, refunds, lease releases and renewals,
   * resets, sweeps and clears (a rejection by `applyOne` changes nothing it would answer differently at the
   * same ms). The solo path (limiter/solo.ts) answers a key rejected again at the same ms with the same
   * Decision while this stays the same.
   */
  changes = 0;

  constructor(options: MemoryStoreOptions = {}) {
    const {
      maxKeys = 1_000_000,
      sweepIntervalMs = 10_000,
      sweepBatch = 50_000,
    } = readOptions(options, STORE_KEYS, 'options', '{ maxKeys: 100_000 }');
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      throw new RateLimitConfigError('ERR_RL_INVALID_MAX_KEYS', 'maxKeys', 'must be a positive integer', maxKeys);
    }
    if (!Number.isSafeInteger(sweepIntervalMs) || sweepIntervalMs < 0) {
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_SWEEP_INTERVAL',
        'sweepIntervalMs',
        'must be a non-negative integer number of ms (0 turns the sweep off)',
        sweepIntervalMs,
      );
    }
    if (!Number.isSafeInteger(sweepBatch) || sweepBatch < 1) {
      throw new RateLimitConfigError('ERR_RL_INVALID_SWEEP_BATCH', 'sweepBatch', 'must be a positive integer', sweepBatch);
    }
    this.maxKeys = maxKeys;
    this.sweepBatch = sweepBatch;
    if (sweepIntervalMs > 0) {
      this.timer = setInterval(() => this.sweep(), sweepIntervalMs);
      this.timer.unref();
    }
  }

  /** Counts one call that may have changed a key's state (`changes`). */
  private changed(): void {
    // Stryker disable next-line AssignmentOperator: equivalent, `-=` at every call moves the count as surely, never back to a value it had
    this.changes += 1;
  }

  /** Entries held, over all policies. */
  get size(): number {
    return this.count;
  }

  private bind(plan: StorePlan): Bound {
    let bound = this.bindings.get(plan);
    if (bound === undefined) {
      const tables = plan.policies.map((p) => this.table(p));
      const n = plan.policies.length;
      bound = {
        tables,
        policies: plan.policies,
        outcomes: tables.map(() => createOutcome()),
        slots: new Int32Array(n),
        result: new Float64Array(n * RESULT_STRIDE),
      };
      this.bindings.set(plan, bound);
    }
    this.lastPlan = plan;
    this.lastBound = bound;
    return bound;
  }

  private table(p: CompiledPolicy): Table {
    let t = this.tables.get(p.id);
    if (t === undefined) {
      t = new Table(p, this.maxKeys + 1);
      this.tables.set(p.id, t);
    }
    return t;
  }

  apply(key: StoreKey, plan: StorePlan, cost: number, now: number, lease?: number): Float64Array {
    this.changed();
    // Stryker disable next-line EqualityOperator: equivalent, `>` -> `>=`: it writes the value it read
    if (now > this.lastNow) this.lastNow = now;
    // Stryker disable next-line ConditionalExpression: equivalent, -> `false`: `bind` returns the plan's binding, only slower
    const b = plan === this.lastPlan ? (this.lastBound as Bound) : this.bind(plan);
    // Stryker disable next-line ConditionalExpression: equivalent, -> `true`: a concurrency plan's apply always has a lease, and no other kernel reads it
    if (lease !== undefined) holdLease(b, lease);
    // Stryker disable next-line ConditionalExpression: equivalent, -> `false`: the group path answers one policy as applySingle does, only slower
    return plan.policies.length === 1 ? this.applySingle(keyAt(key, 0), b, cost, now) : this.applyGroups(key, plan, b, cost, now, true);
  }

  /** `apply` of a plan of one policy, without a lease, for a string key: the common limiter's decision path (limiter/solo.ts). */
  applyOne(key: string, plan: StorePlan, cost: number, now: number): Float64Array {
    // Stryker disable next-line EqualityOperator: equivalent, `>` -> `>=`: it writes the value it read
    if (now > this.lastNow) this.lastNow = now;
    // Stryker disable next-line ConditionalExpression: equivalent, -> `false`: `bind` returns the plan's binding, only slower
    const b = plan === this.lastPlan ? (this.lastBound as Bound) : this.bind(plan);
    return this.applySingle(key, b, cost, now);
  }

  /** `apply` without the charge: the same numbers, `F_CHARGED` on each group that would be charged. */
  peek(key: StoreKey, plan: StorePlan, cost: number, now: number): Float64Array {
    // Stryker disable next-line ConditionalExpression: equivalent, -> `false`: `bind` returns the plan's binding, only slower
    const b = plan === this.lastPlan ? (this.lastBound as Bound) : this.bind(plan);
    return this.applyGroups(key, plan, b, cost, now, false);
  }

  /** Gives back `cost` to each policy whose mark is a number (see `Store.refund`), synchronously. */
  refund(key: StoreKey, plan: StorePlan, cost: number, marks: readonly number[], now: number): Uint8Array {
    this.changed();
    // Stryker disable next-line EqualityOperator: equivalent, `>` -> `>=`: it writes the value it read
    if (now > this.lastNow) this.lastNow = now;
    // Stryker disable next-line ConditionalExpression: equivalent, -> `false`: `bind` returns the plan's binding, only slower
    const b = plan === this.lastPlan ? (this.lastBound as Bound) : this.bind(plan);
    const n = plan.policies.length;
    const done = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      const mark = marks[i] as number;
      // Stryker disable next-line ConditionalExpression: equivalent, -> `false`: every refund kernel refuses a NaN mark, so the answer stays 0
      if (Number.isNaN(mark)) continue;
      const t = b.tables[i] as Table;
      const p = plan.policies[i] as CompiledPolicy;
      const slot = t.index.get(keyAt(key, i));
      const position = (marks[n + i] ?? Number.NaN) - (marks[2 * n] ?? 0) * p.tokenTicks;
      // Stryker disable next-line ConditionalExpression: equivalent, `slot !== undefined` -> `true`: every refund kernel refuses a row it cannot read
      if (slot !== undefined && REFUND_KERNELS[p.algorithm](t, slot, now, cost, mark, position, p)) done[i] = 1;
    }
    return done;
  }

  /** Ends `lease` in the plan's concurrency policies (algorithms/concurrency.ts). */
  release(key: StoreKey, plan: StorePlan, lease: number, now: number): void {
    this.changed();
    this.leases(key, plan, (t, slot) => releaseLease(t, slot, lease, now));
  }

  /**
   * Renews `lease` in the plan's concurrency policies, or takes its slot again where it ended by its
   * deadline and still fits (algorithms/concurrency.ts `renewLease`); true when it holds a slot in all of
   * them. A row swept or evicted since is made again: it held no lease, so the renewal fits there.
   */
  renew(key: StoreKey, plan: StorePlan, lease: number, now: number): boolean {
    this.changed();
    if (now > this.lastNow) this.lastNow = now;
    return this.leases(
      key,
      plan,
      (t, slot, p) => {
        // A renewed lease is in use: its row is not the eviction sweep's to take.
        t.touch(slot);
        return renewLease(t, slot, lease, now, p);
      },
      now,
    );
  }

  /**
   * `op` on the row of `key` in each concurrency policy of `plan`; true when it answered true in all.
   * `madeAt`: a row missing (swept or evicted) is made at that time, as a renewal may take its slot again
   * there; without it, a missing row answers false.
   */
  private leases(key: StoreKey, plan: StorePlan, op: (t: Table, slot: number, p: CompiledPolicy) => boolean, madeAt?: number): boolean {
    let all = true;
    plan.policies.forEach((p, i) => {
      if (p.algorithm !== 'concurrency') return;
      const t = madeAt === undefined ? this.tables.get(p.id) : this.table(p);
      const k = keyAt(key, i);
      let slot = t?.index.get(k);
      if (t !== undefined && slot === undefined && madeAt !== undefined) {
        if (this.count >= this.maxKeys) this.evict(t, madeAt, k, this.bind(plan).tables);
        slot = t.allocate(k);
        this.count += 1;
      }
      if (t === undefined || slot === undefined || !op(t, slot, p)) all = false;
    });
    return all;
  }

  /**
   * One policy, no shadow: the policy is its own group, so it decides and charges in one pass. A key
   * without a row is decided in scratch slot 0 and gets a row only when admitted: a request that
   * charges nothing never takes memory (nor evicts anyone).
   */
  private applySingle(key: string, b: Bound, cost: number, now: number): Float64Array {
    const t = b.tables[0] as Table;
    const out = b.outcomes[0] as Outcome;
    const p = b.policies[0] as CompiledPolicy;
    let slot = t.index.get(key);
    if (slot === undefined) {
      slot = this.applyNew(key, b, t, p, out, cost, now);
    } else {
      t.touch(slot);
      t.kernel.consume(t, slot, now, cost, p, out);
    }
    const r = b.result;
    if (out.allowed) {
      this.changed();
      r[R_FLAGS] = F_ALLOWED | F_CHARGED;
      r[R_POSITION] = t.kernel.position?.(t, slot as number, now, p) ?? 0;
    } else {
      r[R_FLAGS] = out.exceeds ? F_EXCEEDS : 0;
      r[R_RETRY_AFTER] = out.retryAfterMs;
    }
    r[R_REMAINING] = out.remaining;
    r[R_RESET] = out.resetMs;
    r[R_DELAY] = out.delayMs;
    return r;
  }

  /**
   * `applySingle` for a key the table does not hold: decided in the scratch slot, which it is adopted
   * from when admitted (evicting first when the store is full); returns the slot, or undefined when
   * refused. Out of `applySingle` (a busy key never takes it), for the decision path's inlining budget (limiter/decide.ts, `Decider.decideAt`).
   */
  private applyNew(key: string, b: Bound, t: Table, p: CompiledPolicy, out: Outcome, cost: number, now: number): number | undefined {
    t.kernel.init(t, 0);
    t.kernel.consume(t, 0, now, cost, p, out);
    if (!out.allowed) return undefined;
    if (this.count >= this.maxKeys) this.evict(t, now, key, b.tables);
    const slot = t.adoptScratch(key);
    this.count += 1;
    return slot;
  }

  /**
   * The enforced policies as one group, then the shadow policies as another (each all-or-nothing). Out of
   * `apply` (a one-policy plan never takes it), for the decision path's inlining budget (limiter/decide.ts, `Decider.decideAt`).
   */
  private applyGroups(key: StoreKey, plan: StorePlan, b: Bound, cost: number, now: number, charge: boolean): Float64Array {
    const n = plan.policies.length;
    this.applyGroup(key, b, 0, plan.enforcedCount, cost, now, charge);
    // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, -> `true`, `>=`: the shadow group is then empty and its loops do nothing
    if (n > plan.enforcedCount) this.applyGroup(key, b, plan.enforcedCount, n, cost, now, charge);
    return b.result;
  }

  private applyGroup(key: StoreKey, b: Bound, from: number, to: number, cost: number, now: number, charge: boolean): void {
    let all = true;
    for (let i = from; i < to; i++) {
      const t = b.tables[i] as Table;
      let slot = t.index.get(keyAt(key, i));
      if (slot === undefined) {
        slot = 0;
        t.kernel.init(t, 0);
      }
      b.slots[i] = slot;
      const out = b.outcomes[i] as Outcome;
      t.kernel.evaluate(t, slot, now, cost, b.policies[i] as CompiledPolicy, out);
      if (!out.allowed) all = false;
    }
    const r = b.result;
    for (let i = from; i < to; i++) {
      const t = b.tables[i] as Table;
      const out = b.outcomes[i] as Outcome;
      const o = i * RESULT_STRIDE;
      if (all && !charge) {
        // A peek: admitted with the charge's delay, but nothing is charged, so what is left and the
        // reset are those of the state as it stands (as for a policy that admitted, below).
        // Stryker disable next-line ArithmeticOperator: equivalent, `o + R_FLAGS` -> `-`: R_FLAGS is 0
        r[o + R_FLAGS] = F_ALLOWED | F_CHARGED;
        r[o + R_RETRY_AFTER] = 0;
        r[o + R_DELAY] = out.delayMs;
        t.kernel.evaluate(t, b.slots[i] as number, now, Number.POSITIVE_INFINITY, b.policies[i] as CompiledPolicy, out);
        r[o + R_REMAINING] = out.remaining;
        r[o + R_RESET] = out.resetMs;
      } else if (all) {
        let slot = b.slots[i] as number;
        if (slot === 0) {
          const k = keyAt(key, i);
          if (this.count >= this.maxKeys) this.evict(t, now, k, b.tables);
          slot = t.allocate(k);
          this.count += 1;
        } else {
          t.touch(slot);
        }
        const p = b.policies[i] as CompiledPolicy;
        t.kernel.commit(t, slot, now, cost, p);
        // Stryker disable next-line ArithmeticOperator: equivalent, `o + R_FLAGS` -> `-`: R_FLAGS is 0
        r[o + R_FLAGS] = F_ALLOWED | F_CHARGED;
        r[o + R_REMAINING] = out.remaining;
        r[o + R_POSITION] = t.kernel.position?.(t, slot, now, p) ?? 0;
        r[o + R_RESET] = out.resetMs;
        r[o + R_DELAY] = out.delayMs;
      } else {
        const slot = b.slots[i] as number;
        // Stryker disable next-line ConditionalExpression: equivalent, -> `true`: it also marks the scratch row 0, which no key owns and eviction never takes
        if (slot !== 0) t.touch(slot);
        // Stryker disable next-line ArithmeticOperator: equivalent, `o + R_FLAGS` -> `-`: R_FLAGS is 0
        r[o + R_FLAGS] = (out.allowed ? F_ALLOWED : 0) | (out.exceeds ? F_EXCEEDS : 0);
        r[o + R_RETRY_AFTER] = out.retryAfterMs;
        r[o + R_DELAY] = 0;
        // Stryker disable next-line ConditionalExpression: equivalent, -> `true`: a rejected outcome reports the state as it stands, as a cost that never fits
        if (out.allowed) {
          // Admitted here but not charged: report the state as it stands (a cost that can never fit does).
          t.kernel.evaluate(t, slot, now, Number.POSITIVE_INFINITY, b.policies[i] as CompiledPolicy, out);
        }
        r[o + R_REMAINING] = out.remaining;
        r[o + R_RESET] = out.resetMs;
      }
    }
  }

  /**
   * Makes room for one entry: from the table that needs it (which has no row for `key`), else from the
   * table with the most rows that this request does not charge, so the rows it charges stay.
   */
  private evict(preferred: Table, now: number, key: string, mine: readonly Table[]): void {
    let victim = preferred;
    let spare: string | undefined;
    if (victim.size === 0) {
      let others = 0;
      for (const t of this.tables.values()) {
        const n = t.size - (t.index.has(key) && mine.includes(t) ? 1 : 0);
        if (n > others) {
          others = n;
          victim = t;
        }
      }
      if (others === 0) {
        // maxKeys is below the number of policies: only this request's own rows are left, one goes.
        for (const t of this.tables.values()) if (t.size > victim.size) victim = t;
      } else if (mine.includes(victim)) {
        spare = key;
      }
    }
    const dropped = victim.evictOne(now, spare);
    if (dropped === undefined) return;
    this.count -= 1;
    // An entry past its expiry was dead already (the sweep would have purged it): not an eviction.
    if (dropped === 'expired') {
      this.purged += 1;
      return;
    }
    this.evictions += 1;
    if (exporters.attached) EVICTIONS.value += 1;
  }

  reset(key: string, plan: StorePlan): void {
    this.changed();
    for (const p of plan.policies) {
      const t = this.tables.get(p.id);
      const slot = t?.index.get(key);
      if (t !== undefined && slot !== undefined) {
        t.remove(slot);
        this.count -= 1;
      }
    }
  }

  /**
   * Purges expired entries, at most `sweepBatch` per table, as of the latest time the store has seen
   * (or `now`). The timer calls it; tests and hosts without timers may call it directly.
   */
  sweep(now: number = this.lastNow): number {
    this.changed();
    let removed = 0;
    for (const t of this.tables.values()) {
      const before = t.size;
      t.sweep(now, this.sweepBatch);
      removed += before - t.size;
    }
    this.count -= removed;
    this.purged += removed;
    return removed;
  }

  /** Drops every entry. */
  clear(): void {
    this.changed();
    this.tables.clear();
    this.bindings = new WeakMap();
    this.count = 0;
    this.lastPlan = undefined;
    this.lastBound = undefined;
  }

  close(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}
