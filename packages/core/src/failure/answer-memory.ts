/**
 * @module What the store last said about each key, so that a store back without its data is charged
 * again from it whatever `onStoreError` (failure/restore/budget-restore.ts), and an outage under `'local'`
 * continues a key's budget instead of handing out a fresh one. Per key and enforced policy it keeps the
 * remaining budget the store last reported, when that policy is fully reset again (the answer's time
 * plus its `resetMs`; a bucket refills on the way), and what the failure mode admitted since, within
 * that reset: the failure mode
 * admits a request only while every live record has room for it, so a key the store had exhausted stays
 * exhausted until its reset, and a store that flaps hands out the last reported budget once, not once
 * per outage (local admissions are kept until the reset, and subtracted from the store's next answers,
 * which never saw them).
 *
 * A plan's concurrency policies are not remembered: the leases an outage grants are the local store's.
 *
 * Bounded: at most `capacity` keys per plan (10,000 by default); a new key past that forgets the
 * oldest remembered one, which then starts from the local limiter's `localShare` as before. A record
 * is five numbers per enforced policy. It exists, whatever the failure mode, when the limiter's store
 * can fail (any store but a MemoryStore: Redis, a custom store; its answers, synchronous ones included,
 * are remembered; Fallback.remembers), created on the first answer: a MemoryStore never fails. Only
 * `'local'` answers an outage from it and owes the store what it admits (Fallback's `owed`); `'open'`
 * and `'closed'` answer an outage without it.
 */
import type { CompiledPolicy } from '../algorithms/kernel.js';
import { F_CHARGED, R_FLAGS, R_REMAINING, R_RESET, RESULT_STRIDE, type StoreKey, type StoreResult } from '../stores/store.js';

/** Keys remembered per plan by default. */
export const REMEMBERED_KEYS = 10_000;

/**
 * One key's record: per enforced policy i, at `[5i ...]`: the remaining budget last reported
 * (milli-units), when that policy is fully reset (limiter clock, ms), what the failure mode admitted
 * since (milli-units), when the answer was given (limiter clock, ms), and what the carries of the failure
 * mode's admissions charged the store since (milli-units, `carried`): the store's next answer counts it.
 */
export type Remembered = Float64Array;

const STRIDE = 5;
const REMAINING = 0;
const UNTIL = 1;
const SPENT = 2;
const SINCE = 3;
const CARRIED = 4;

/**
 * An answer tells of a lost state only when it has more budget than the key could have had back by now
 * by this much time's more of refill or sliding (clocks and round trips differ by about that), and only
 * for a policy more than this long from its reset (a key about to start afresh loses next to nothing).
 */
const LOSS_SLACK_MS = 1_000;

/**
 * What record `m`'s policy at `k` has used beyond the store's last answer (milli-units): what the failure
 * mode admitted since, and what the carries of such admissions charged the store since (not in the answer).
 */
function beyond(m: Remembered, k: number): number {
  return (m[k + SPENT] as number) + (m[k + CARRIED] as number);
}

/** Algorithms whose budget comes back gradually (a bucket refills), not all at once at the reset. */
export function refills(p: CompiledPolicy): boolean {
  return p.algorithm === 'gcra' || p.algorithm === 'token-bucket' || p.algorithm === 'leaky-bucket';
}

/** Policy `i`'s own key of a decision of several keys, as `AnswerMemory.byPolicyKey` names it. */
function policyKey(storeKey: readonly string[], i: number): string {
  return `${i}\0${storeKey[i]}`;
}

/** What the store had counted for one key by its last answers (AnswerMemory.counted). */
export interface Counted {
  readonly storeKey: StoreKey;
  /** Per enforced policy, milli-units; 0 for one that has reset. */
  readonly used: Float64Array;
  /** Per enforced policy, ms from the time asked until it is fully reset (its budget whole again). */
  readonly until: Float64Array;
}

/** An answer that could not follow the last one remembered for its key (AnswerMemory.onRegress). */
export interface Regress {
  /** What the key had counted by the memory at the answer's time, before the answer replaced it. */
  readonly was: Counted;
  /** When the remembered answer was given (limiter clock). */
  readonly since: number;
  /** Per enforced policy, what the store held for the key before the new answer's own charge (milli-units). */
  readonly answered: Float64Array;
  /**
   * The answer of a call the failure mode had refused, that the store ran late (its charge goes back,
   * it is not remembered: AnswerMemory.lateRefused): it tells of a loss, and nothing else.
   */
  readonly late?: true;
}

/**
 * Told of an answer that could not follow (AnswerMemory.onRegress, Fallback.watchRegress); returns the
 * verdict of the question out on whether the store lost the key's state (a restore's, with checks held:
 * true when it did), or undefined when none is out: the answer is then taken as it is.
 */
export type RegressListener = (regress: Regress) => Promise<boolean> | undefined;

/**
 * What `AnswerMemory.remember` made of an answer: `false`, remembered (the common case); `true`, the key's
 * record stands against it (the store lost the key: the caller decides by the record, `follow`); or the
 * verdict of the question out, to wait for (true: it stands; false: remember the answer again, it is taken).
 */
export type Remembering = boolean | Promise<boolean>;

export class AnswerMemory {
  private readonly entries = new Map<string, Remembered>();
  /** The store keys of the records whose store key is not their key (several keys, one decision). */
  private readonly storeKeys = new Map<string, StoreKey>();
  /**
   * Several keys per decision: per policy and that policy's own key (`${i}\0${key}`), the record last
   * answered for it. A policy's key is shared by many decisions (one tenant, many users): its budget in an
   * outage is that record's, whichever decision asks (`shared`), not a fresh one for a pair never seen.
   */
  private readonly byPolicyKey = new Map<string, string>();

  /**
   * Told, before the record is replaced, of an answer that could not follow the one remembered
   * (`regressed`): the store may have lost its state (failure/restore/budget-restore.ts).
   */
  onRegress: RegressListener | undefined = undefined;

  /**
   * The keys whose record stands against the store's answers (`remember`), each with the verdict that
   * made it stand: one answered from a key the store may have lost, until an answer follows the record
   * again (the store charged again what the key had) or `release` of that verdict (the store lost nothing).
   */
  private readonly standing = new Map<string, Promise<boolean>>();

  constructor(
    /** The plan's enforced policies, in result order. */
    private readonly policies: readonly CompiledPolicy[],
    private readonly capacity = REMEMBERED_KEYS,
    /**
     * Per enforced policy, the share of its refill this process may admit in an outage (the local
     * policy's limit over the policy's: `localShare`): every process of the limiter sees the bucket
     * refill, and each admitting all of it admitted the refill once per process.
     */
    private readonly shares: readonly number[] = [],
  ) {}

  /** Keys remembered now (for tests). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Notes the store's answer `r` for `key` (`storeKey` in the store), given at `at` (limiter clock), to a
   * call charging `cost` milli-units (0 when not known: `onRegress` then counts it as the store's before).
   * An answer that could not follow the record while the store's loss is judged (`onRegress` gives the
   * verdict) is not remembered: the verdict is returned, and a key found lost has its record stand until
   * an answer follows it again (`true` then; `release` when nothing was lost). The checks in flight when a
   * FLUSHALL is found were answered from an empty key: 16 of them, on a key this process had exhausted,
   * were all admitted, the limit over again. See `Remembering`. `stand` false: an answer no check is
   * decided by (a carry's) never makes the record stand; the verdict is returned all the same.
   */
  remember(key: string, r: StoreResult, at: number, storeKey: StoreKey = key, cost = 0, stand = true): Remembering {
    let m = this.entries.get(key);
    if (m === undefined) {
      if (this.entries.size >= this.capacity) {
        const oldest = this.entries.keys().next().value;
        if (oldest !== undefined) this.forget(oldest);
      }
      m = new Float64Array(STRIDE * this.policies.length);
      this.entries.set(key, m);
      if (storeKey !== key) this.storeKeys.set(key, storeKey);
    } else if (this.onRegress !== undefined && this.regressed(m, r, at, cost)) {
      const verdict = this.onRegress(this.regress(storeKey, m, r, at, cost));
      if (this.standing.has(key)) return true;
      if (verdict !== undefined) return stand ? verdict.then((lost) => this.stands(key, lost, verdict)) : verdict;
    } else if (this.standing.size !== 0) {
      this.standing.delete(key);
    }
    this.record(key, m, r, at, storeKey);
    return false;
  }

  /**
   * Answer `r`, at `at`, of a call charging `cost` that the failure mode had refused and the store ran
   * late: never remembered (the caller was answered without it, and its charge goes back), but told to
   * `onRegress` (as `late`) when it could not follow `key`'s record, whose verdict nothing waits for.
   */
  lateRefused(key: string, r: StoreResult, at: number, storeKey: StoreKey, cost: number): void {
    const m = this.entries.get(key);
    if (m !== undefined && this.onRegress !== undefined && this.regressed(m, r, at, cost)) {
      void this.onRegress({ ...this.regress(storeKey, m, r, at, cost), late: true });
    }
  }

  /** The question found the store kept `key`'s state: its answer `r` at `at` is remembered as it is (no regress asked). */
  accept(key: string, r: StoreResult, at: number, storeKey: StoreKey = key): void {
    const m = this.entries.get(key);
    if (m !== undefined) this.record(key, m, r, at, storeKey);
  }

  /** Writes answer `r` at `at` into `key`'s record `m`. */
  private record(key: string, m: Remembered, r: StoreResult, at: number, storeKey: StoreKey): void {
    if (typeof storeKey !== 'string') for (let i = 0; i < storeKey.length; i++) this.byPolicyKey.set(policyKey(storeKey, i), key);
    for (let i = 0, o = 0, k = 0; i < this.policies.length; i++, o += RESULT_STRIDE, k += STRIDE) {
      // A concurrency policy's budget is the leases held, which the local store's own leases bound in an
      // outage: never live, so it never limits (room is Infinity).
      if ((this.policies[i] as CompiledPolicy).algorithm === 'concurrency') {
        m[k + UNTIL] = Number.NEGATIVE_INFINITY;
        continue;
      }
      // What the failure mode admitted stays owed until the reset it was admitted in has passed.
      if ((m[k + UNTIL] as number) <= at) m[k + SPENT] = 0;
      m[k + REMAINING] = r[o + R_REMAINING] as number;
      m[k + UNTIL] = at + (r[o + R_RESET] as number);
      m[k + SINCE] = at;
      // The answer counts what the carries charged before it.
      m[k + CARRIED] = 0;
    }
  }

  /**
   * An admission that follows `key`'s record, which stood against the store's answer (`remember` returned
   * true): `cost` comes off every policy of it that has not reset, as the store's next answer would have
   * said had it not lost the key.
   */
  follow(key: string, cost: number, at: number): void {
    const m = this.entries.get(key);
    if (m === undefined) return;
    for (let k = 0; k < m.length; k += STRIDE)
      if ((m[k + UNTIL] as number) > at) m[k + REMAINING] = Math.max(0, (m[k + REMAINING] as number) - cost);
  }

  /**
   * True when `r`, an answer at `at`, leaves some policy more budget than record `m` could have had back
   * by then (a bucket's refill, a sliding window's slide, both LOSS_SLACK_MS more): nothing but a lost
   * state (or a refund, a reset from elsewhere) gives that. A sliding log is never asked (its entries may
   * all leave at once), nor a policy within LOSS_SLACK_MS of its reset, nor an answer to a call decided
   * before the remembered one's. `own`: the answer's own charge, taken off what the record allows (an
   * answer that charged a key with nothing left, the last unit over again, does not follow it), as is what
   * the carries of the failure mode's admissions charged since the record's answer (`carried`): a server
   * that came back behind answers the carry with its charge in, and judged without it, the carry hid the
   * loss (four keys, a restart from an older snapshot: the key whose check ended the outage charged again
   * what the server lacked, the three others, carried first, 20 over a limit of 150).
   */
  private regressed(m: Remembered, r: StoreResult, at: number, own: number): boolean {
    for (let i = 0, o = 0, k = 0; i < this.policies.length; i++, o += RESULT_STRIDE, k += STRIDE) {
      const p = this.policies[i] as CompiledPolicy;
      // A call decided before the one remembered, answered after it (in flight together), says less than it.
      if (p.algorithm === 'sliding-log' || at < (m[k + SINCE] as number) || (m[k + UNTIL] as number) - at <= LOSS_SLACK_MS) continue;
      let most = this.left(m, i, at) + 1 - (m[k + CARRIED] as number) - (((r[o + R_FLAGS] as number) & F_CHARGED) !== 0 ? own : 0);
      if (refills(p)) most += (LOSS_SLACK_MS * p.rate) / p.tokenTicks;
      else if (p.algorithm === 'sliding-window') most += (p.capMilli * (at - (m[k + SINCE] as number) + LOSS_SLACK_MS)) / p.windowMs;
      if ((r[o + R_REMAINING] as number) > most) return true;
    }
    return false;
  }

  /**
   * What answer `r` at `at`, to a call charging `cost`, tells beside record `m` (`onRegress`): what the store
   * held before that charge and those the carries made since the record's answer (`carried`), beside what
   * the record counts without them, so that the difference charged is the loss alone, and the outage's
   * admissions the carries charged stay on top of it.
   */
  private regress(storeKey: StoreKey, m: Remembered, r: StoreResult, at: number, cost: number): Regress {
    const n = this.policies.length;
    const answered = new Float64Array(n);
    for (let i = 0, o = 0; i < n; i++, o += RESULT_STRIDE) {
      const own = ((r[o + R_FLAGS] as number) & F_CHARGED) !== 0 ? cost : 0;
      const carried = m[STRIDE * i + CARRIED] as number;
      answered[i] = (this.policies[i] as CompiledPolicy).capMilli - (r[o + R_REMAINING] as number) - own - carried;
    }
    const was = this.countOf(storeKey, m, at) ?? { storeKey, used: new Float64Array(n), until: new Float64Array(n) };
    let since = Number.NEGATIVE_INFINITY;
    for (let k = SINCE; k < m.length; k += STRIDE) since = Math.max(since, m[k] as number);
    return { was, since, answered };
  }

  /**
   * A refund gave `cost` back to `key` at `at` (a key of one string): its record has that much more left,
   * so that the next answer is not taken for a lost state, and an outage continues from the budget given
   * back. A bucket's record starts again from `at`, refilling at the rate it had.
   */
  refunded(key: StoreKey, cost: number, at: number): void {
    const m = typeof key === 'string' ? this.entries.get(key) : undefined;
    if (m === undefined) return;
    for (let i = 0; i < this.policies.length; i++) {
      if ((m[STRIDE * i + UNTIL] as number) > at) this.leave(m, i, this.left(m, i, at) + cost, at);
    }
  }

  /**
   * The store counted at least `used[i]` milli-units of policy `i` of `key` at `at` (a store that lost it, by
   * what its replies told: Store.countAtLoss): its record has that much used at least, so that decisions
   * against it (Fallback.againstRecord) do not admit what other processes took (a process answering from
   * batches remembered 968 of 1,000 used, and admitted 32 against its record after the loss).
   */
  atLeast(key: string, used: ArrayLike<number>, at: number): void {
    const m = this.entries.get(key);
    if (m === undefined) return;
    for (let i = 0; i < this.policies.length; i++) {
      const left = (this.policies[i] as CompiledPolicy).capMilli - (used[i] ?? 0);
      if ((m[STRIDE * i + UNTIL] as number) > at && left < this.left(m, i, at)) this.leave(m, i, left, at);
    }
  }

  /** Sets what policy `i` of record `m` has left at `at`; a bucket's record refills from then at the rate it had. */
  private leave(m: Remembered, i: number, left: number, at: number): void {
    const k = STRIDE * i;
    const p = this.policies[i] as CompiledPolicy;
    const to = Math.max(0, Math.min(p.capMilli, left));
    if (!refills(p)) {
      m[k + REMAINING] = to;
      return;
    }
    const until = m[k + UNTIL] as number;
    const since = m[k + SINCE] as number;
    const perMs = until > since ? (p.capMilli - (m[k + REMAINING] as number)) / (until - since) : 0;
    m[k + REMAINING] = to;
    m[k + SINCE] = at;
    m[k + UNTIL] = perMs > 0 ? at + (p.capMilli - to) / perMs : at;
  }

  /** The record of `key` while some policy of it has not reset at `at`; undefined otherwise. */
  live(key: string, at: number): Remembered | undefined {
    const m = this.entries.get(key);
    if (m === undefined) return undefined;
    for (let k = UNTIL; k < m.length; k += STRIDE) if ((m[k] as number) > at) return m;
    this.forget(key);
    return undefined;
  }

  /** `verdict` on `key`'s state: when the store lost it, its record stands against the answers from then on. Returns `lost`. */
  private stands(key: string, lost: boolean, verdict: Promise<boolean>): boolean {
    if (!lost || !this.entries.has(key)) return false;
    if (this.standing.size >= this.capacity) this.standing.clear();
    this.standing.set(key, verdict);
    return true;
  }

  /**
   * The store lost nothing after all, by the question whose `verdict` (a bound on it: true once it took
   * too long) made records stand: the store's answers replace them. Those a loss found before made stand
   * keep standing: a later question finds the mark as the first set it again, while a key's charge, left
   * to the process that raised its ledger first, is still on its way (four processes with `localBatch`
   * after a `FLUSHALL`: two took a batch each from the emptied key, 3,592 of 3,000).
   */
  release(verdict: Promise<boolean>): void {
    for (const [key, stood] of this.standing) if (stood === verdict) this.standing.delete(key);
  }

  private forget(key: string): void {
    this.entries.delete(key);
    this.standing.delete(key);
    if (this.storeKeys.size === 0) return;
    const storeKey = this.storeKeys.get(key);
    this.storeKeys.delete(key);
    if (storeKey === undefined || typeof storeKey === 'string') return;
    for (let i = 0; i < storeKey.length; i++) {
      const at = policyKey(storeKey, i);
      if (this.byPolicyKey.get(at) === key) this.byPolicyKey.delete(at);
    }
  }

  /**
   * For a decision of several keys, the live record last answered for policy `i`'s own key (by this
   * decision or another sharing that key), if any: where that policy's budget stands in an outage.
   */
  shared(storeKey: readonly string[], i: number, at: number): Remembered | undefined {
    const key = this.byPolicyKey.get(policyKey(storeKey, i));
    return key === undefined ? undefined : this.live(key, at);
  }

  /** The failure mode admitted `cost` on policy `i` of `m`: owed by it while it has not reset at `at`. */
  spendOne(m: Remembered, i: number, cost: number, at: number): void {
    const k = STRIDE * i;
    if ((m[k + UNTIL] as number) > at) m[k + SPENT] = (m[k + SPENT] as number) + cost;
  }

  /**
   * What the store had counted for each key by its last answers, and still counts at `at` (per enforced
   * policy: its capacity less what it had left, a bucket's refill since taken off), for the keys where some
   * policy has not reset: what a store that lost its state has to be charged again (failure/restore/budget-restore.ts).
   */
  counted(at: number): Counted[] {
    const out: Counted[] = [];
    for (const [key, m] of this.entries) {
      const c = this.countOf(this.storeKeys.get(key) ?? key, m, at);
      if (c !== undefined) out.push(c);
    }
    return out;
  }

  /** What record `m` (of `storeKey`) counts at `at`; undefined when nothing (every policy reset, or unused). */
  private countOf(storeKey: StoreKey, m: Remembered, at: number): Counted | undefined {
    const n = this.policies.length;
    const used = new Float64Array(n);
    const until = new Float64Array(n);
    let some = false;
    for (let i = 0; i < n; i++) {
      if ((m[STRIDE * i + UNTIL] as number) <= at) continue;
      used[i] = (this.policies[i] as CompiledPolicy).capMilli - this.left(m, i, at);
      until[i] = (m[STRIDE * i + UNTIL] as number) - at;
      if ((used[i] as number) > 0) some = true;
    }
    return some ? { storeKey, used, until } : undefined;
  }

  /**
   * The budget policy `i` of record `m` has left at `at` for this process (milli-units): the store's last
   * remaining (plus, for a bucket, this process's share of what refilled since at the rate that fills it
   * by the reset) less what the failure mode admitted since (`beyond`); Infinity once that policy has reset.
   */
  room(m: Remembered, i: number, at: number): number {
    const k = STRIDE * i;
    if ((m[k + UNTIL] as number) <= at) return Number.POSITIVE_INFINITY;
    return this.left(m, i, at, this.shares[i] ?? 1) - beyond(m, k);
  }

  /**
   * The store's last remaining of policy `i` of `m`, plus what a bucket refilled since (`share` of it),
   * at `at` (milli-units).
   */
  private left(m: Remembered, i: number, at: number, share = 1): number {
    const k = STRIDE * i;
    const until = m[k + UNTIL] as number;
    const p = this.policies[i] as CompiledPolicy;
    const remaining = m[k + REMAINING] as number;
    const since = m[k + SINCE] as number;
    const refilled = refills(p) && until > since ? ((p.capMilli - remaining) * (at - since) * share) / (until - since) : 0;
    return Math.min(p.capMilli, remaining + refilled);
  }

  /**
   * How long the queue policy `i` of `m` holds at `at` takes to drain, ms: what the store last reported
   * it held, less what has drained since, plus what the failure mode admitted since, at the rate the
   * record refills (a leaky bucket's: one request per interval). 0 without a rate to drain at.
   */
  drainMs(m: Remembered, i: number, at: number): number {
    const k = STRIDE * i;
    const until = m[k + UNTIL] as number;
    const since = m[k + SINCE] as number;
    const cap = (this.policies[i] as CompiledPolicy).capMilli;
    const remaining = m[k + REMAINING] as number;
    if (!(until > since) || cap <= remaining) return 0;
    const queued = cap - this.left(m, i, at) + beyond(m, k);
    return Math.max(0, Math.ceil((queued * (until - since)) / (cap - remaining)));
  }

  /** How long after `at` policy `i` of `m` has room for `cost` again (`room`), ms (at least 1). */
  waitFor(m: Remembered, i: number, cost: number, at: number): number {
    const k = STRIDE * i;
    const until = m[k + UNTIL] as number;
    const p = this.policies[i] as CompiledPolicy;
    const remaining = m[k + REMAINING] as number;
    const since = m[k + SINCE] as number;
    let t = until;
    if (refills(p) && p.capMilli > remaining && until > since) {
      const need = cost + beyond(m, k) - remaining;
      t = Math.min(until, since + (need * (until - since)) / ((p.capMilli - remaining) * (this.shares[i] ?? 1)));
    }
    return Math.max(1, Math.ceil(t - at));
  }

  /** What the failure mode admitted for `key` is charged to the store now: its next answers count it, so it is no longer taken off them. */
  told(key: string): void {
    const m = this.entries.get(key);
    if (m === undefined) return;
    for (let k = SPENT; k < m.length; k += STRIDE) m[k] = 0;
  }

  /**
   * A carry of what the failure mode admitted for `key` landed, charging `charged[i]` milli-units to policy
   * `i` (its answer just came): until an answer is remembered, which counts it, the record has that much
   * less (`room`), and an answer is judged, and what the store held measured, without it (`regressed`,
   * `regress`). Counted apart from what the failure mode admitted (`told` forgets that): the store's
   * answers do not count an admission before its carry lands.
   */
  carried(key: string, charged: ArrayLike<number>): void {
    const m = this.entries.get(key);
    if (m === undefined) return;
    for (let i = 0; i < this.policies.length; i++) {
      const k = STRIDE * i + CARRIED;
      m[k] = (m[k] as number) + (charged[i] ?? 0);
    }
  }

  /** How long after `at` policy `i` of `key`'s record counts what it counted, ms; 0 when it has reset (or no record). */
  resetsIn(key: string, i: number, at: number): number {
    const until = this.entries.get(key)?.[STRIDE * i + UNTIL];
    return until !== undefined && until > at ? until - at : 0;
  }

  /** The store counts `cost` the failure mode admitted for `key` after all (it ran the call late): no longer taken off its answers. */
  unspend(key: string, cost: number): void {
    const m = this.entries.get(key);
    if (m === undefined) return;
    for (let k = SPENT; k < m.length; k += STRIDE) m[k] = Math.max(0, (m[k] as number) - cost);
  }

  reset(key: string): void {
    this.forget(key);
  }
}
