/**
 * @module The charges that give a store back what it lost (limiter/budget-restore.ts), sent until they
 * land. Before a key is charged, its ledger (`Store.restored`) is raised to what this process counts,
 * and from then on every other process owes nothing for it: a charge that failed (a dropped connection,
 * a store error) would leave the key with budget nobody charges. So a try that fails is sent again after
 * a wait that doubles from 200 ms to 10 s (DoublingWait; one timer for all of them), while the policy's
 * state would still count it: a window's count whole until its reset, a bucket's less what it refilled
 * since (as the failure mode's memory counts it: linearly to its reset). The first try goes at once (the
 * checks held for the restore wait for it to be sent); a try sent again whose node's breaker is open waits
 * for the next turn. A try ends when its call settles, not when the watchdog gives up on it (the node's
 * health hears of it as of any call): a slow store's late reply is the charge landing, not a reason to
 * charge twice. A try that failed may still have run (a connection that dropped after sending it): the key
 * is then charged twice, never not at all. A loss found again (`lost`: the ledgers went with the keys)
 * drops what waits on that node: the restore that follows charges all of it again.
 *
 * The ledger's own raise can fail alike, before it ran (nothing raised: this process's count would be
 * charged by nobody) or after (raised, its reply lost). It is asked again the same way, under the same id
 * (`Store.restored`'s `raise`): the store answers what it held before that raise the first time, so the
 * key is charged what it owes, not nothing because of its own raise.
 */
import { type Counted, refills } from '../failure/answer-memory.js';
import type { StoreGuard } from '../failure/store-guard.js';
import { isResultOf } from '../failure/store-result-error.js';
import { DoublingWait } from '../internal/doubling-wait.js';
import { catchRejection } from '../internal/rejection.js';
import type { StoreTimer } from '../observability/store-timer.js';
import {
  isPromiseLike,
  keyAt,
  R_REMAINING,
  resultCharged,
  type Store,
  type StoreKey,
  type StorePlan,
  type StoreResult,
  subPlan,
} from '../stores/store.js';
import type { Clock } from '../types.js';

/** One policy's restore charge, until it lands, its state resets, or a new loss drops it. */
interface Charge {
  readonly key: string;
  /** The one policy charged. */
  readonly plan: StorePlan;
  readonly node: string;
  /** Milli-units, as counted at `from`; known once the ledger answered (`ledger` undefined). */
  cost: number;
  /** When it was counted (limiter clock, ms). */
  readonly from: number;
  /** How long after `from` the policy's state is whole again (ms): nothing is owed after. */
  readonly forMs: number;
  /** A bucket's count falls as it refills. */
  readonly fades: boolean;
  /** Sent again at the next turn. */
  waiting: boolean;
  /** A ledger raise to ask (again) before the charge: its reply lost, or never sent. */
  ledger?: LedgerAsk;
}

/** A policy's ledger raise (`Store.restored`): to what it raises, under which id, and what the store holds of the key beside it. */
interface LedgerAsk {
  readonly used: number;
  readonly floor: number;
  readonly raise: string;
  /** Tells the store's batches of the charge (`Store.chargedBeside`), once the ledger says what it is. */
  readonly beside: (cost: number) => void;
}

export class RestoreCharges {
  /** Charges not landed yet: in flight or waiting. */
  private readonly live = new Set<Charge>();
  private readonly wait = new DoublingWait();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

  /** Ids of the raises this process sends: a random text of its own, and a count. */
  private readonly raiseHead = Math.random().toString(36).slice(2, 10);
  private raises = 0;

  constructor(
    private readonly guard: StoreGuard,
    private readonly store: StoreTimer,
    /** The store's ledger (`Store.restored`), if it keeps one. */
    private readonly ledger: Store['restored'],
    private readonly now: Clock,
  ) {}

  /**
   * Charges `c`'s key again what it had counted, policy by policy (`plan`'s), less what other processes of
   * the limiter charged it again since the loss (the ledger, which this raises to what `c` counts) and, with
   * `holds` (per policy, milli-units), what the store holds of it now: all of each when it fits, else what
   * that policy has left, so it ends exhausted. Settles once the first tries are sent; true when something
   * was charged then. A policy whose ledger could not be asked is asked again, then charged.
   */
  async recharge(plan: StorePlan, c: Counted, holds?: Float64Array): Promise<boolean> {
    const from = this.now();
    const raise = `${this.raiseHead}.${++this.raises}`;
    const owed = await Promise.all(Array.from(c.used, (_, i) => this.owedBy(plan, c, i, holds?.[i] ?? 0, raise)));
    const now = owed.map((x) => (typeof x === 'number' ? x : 0));
    if (now.some((x) => x > 0)) this.store.chargedBeside(c.storeKey, plan, now);
    owed.forEach((x, i) => {
      if (typeof x !== 'number') this.track(plan, c, i, from, 0, x);
      else if (x > 0) this.track(plan, c, i, from, x, undefined);
    });
    return now.some((x) => x > 0);
  }

  /**
   * What policy `i` of `c`'s key owes: what it had counted less what the store holds (`floor`) and what the
   * ledger held before this raise (`raise`); or, when the ledger could not be asked, the raise to ask again.
   */
  private async owedBy(plan: StorePlan, c: Counted, i: number, floor: number, raise: string): Promise<number | LedgerAsk> {
    const used = Math.floor(c.used[i] as number);
    if (!(used > 0)) return 0;
    if (this.ledger === undefined) return Math.max(0, used - floor);
    try {
      const before = await this.ledger(keyAt(c.storeKey, i), subPlan(plan, [i]), used, Math.max(1, c.until[i] as number), raise);
      return Math.max(0, used - Math.max(before, floor));
    } catch {
      const beside = (cost: number) => this.store.chargedBeside(c.storeKey, plan, alone(c.used.length, i, cost));
      return { used, floor, raise, beside };
    }
  }

  /** Sends policy `i`'s charge of `cost` for `c`'s key (after `ledger`, if given), counted at `from`. */
  private track(plan: StorePlan, c: Counted, i: number, from: number, cost: number, ledger: LedgerAsk | undefined): void {
    const single = subPlan(plan, [i]);
    const key = keyAt(c.storeKey, i);
    const p = single.policies[0];
    let node: string;
    try {
      node = this.guard.nodeOfKey(key);
    } catch {
      return;
    }
    const forMs = c.until[i] as number;
    this.send({ key, plan: single, node, cost, from, forMs, fades: p !== undefined && refills(p), waiting: false, ledger });
  }

  /** The store lost its state again (on `node`; undefined: all of it): what waits there goes, as the ledgers did. */
  lost(node?: string): void {
    for (const c of this.live) if (node === undefined || c.node === node) this.live.delete(c);
  }

  close(): void {
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.live.clear();
  }

  /** What `c` still owes at `at`: all of it, less a bucket's refill since; 0 once its state is whole. */
  private owedAt(c: Charge, at: number): number {
    const left = c.forMs - (at - c.from);
    if (!(left > 0)) return 0;
    return c.fades ? Math.floor((c.cost * left) / c.forMs) : c.cost;
  }

  /**
   * One try of `c`: what it owes now. A try sent again waits while its node's breaker is open (the checks
   * do not go there either); the first goes at once, as the checks held for it wait for it to be sent.
   */
  private send(c: Charge, again = false): void {
    const at = this.now();
    if (this.closed || !(c.forMs - (at - c.from) > 0)) {
      this.live.delete(c);
      return;
    }
    this.live.add(c);
    c.waiting = false;
    if (again && this.guard.refuses(c.node, at)) {
      this.later(c);
      return;
    }
    if (c.ledger !== undefined) {
      this.askLedger(c, c.ledger, at);
      return;
    }
    const cost = this.owedAt(c, at);
    if (cost <= 0) {
      this.live.delete(c);
      return;
    }
    this.call(c, cost, at).then(
      (r) => (isResultOf(r, c.plan) ? this.landed(c, r) : this.later(c)),
      () => this.later(c),
    );
  }

  /**
   * Asks `c`'s ledger raise `l` (again, under its id) at `at`; then charges what it says `c` owes, or asks
   * again at the next turn if it fails too.
   */
  private askLedger(c: Charge, l: LedgerAsk, at: number): void {
    let asked: Promise<number> | undefined;
    try {
      asked = this.ledger?.(c.key, c.plan, l.used, Math.max(1, c.forMs - (at - c.from)), l.raise);
    } catch {}
    if (asked === undefined) {
      this.later(c);
      return;
    }
    asked.then(
      (before) => {
        if (!this.live.has(c)) return;
        c.ledger = undefined;
        c.cost = Math.max(0, l.used - Math.max(before, l.floor));
        if (c.cost > 0) l.beside(c.cost);
        this.send(c);
      },
      () => this.later(c),
    );
  }

  /** Charges `cost` for `c` at `at`; the call itself, watched for its node's health only (its reply, however late, is what counts). */
  private call(c: Charge, cost: number, at: number): Promise<StoreResult> {
    const seq = this.guard.next();
    try {
      const r = this.store.apply(c.key, c.plan, cost, at);
      if (!isPromiseLike(r)) return Promise.resolve(r);
      catchRejection(this.guard.watch(c.node, seq, r, none, none), none);
      return Promise.resolve(r);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** `c` was answered: it landed. Refused for want of room, what the policy has left is charged (once), so it ends exhausted. */
  private landed(c: Charge, r: StoreResult): void {
    this.live.delete(c);
    this.wait.succeeded();
    const left = resultCharged(r, 0) ? 0 : Math.floor(r[R_REMAINING] as number);
    if (left > 0) this.call(c, left, this.now()).then(none, none);
  }

  /** `c`'s try failed: sent again at the next turn, while it is live (not landed, not dropped by a loss). */
  private later(c: Charge): void {
    if (!this.live.has(c) || this.closed) return;
    c.waiting = true;
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => this.turn(), this.wait.failed());
    this.timer.unref?.();
  }

  /** Sends every waiting charge again. */
  private turn(): void {
    this.timer = undefined;
    this.wait.started();
    for (const c of [...this.live]) if (c.waiting) this.send(c, true);
  }
}

const none = (): void => undefined;

/** `n` policies' charges, `cost` for policy `i` alone. */
function alone(n: number, i: number, cost: number): Float64Array {
  const charged = new Float64Array(n);
  charged[i] = cost;
  return charged;
}
