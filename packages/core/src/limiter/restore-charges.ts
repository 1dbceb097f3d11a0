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
 */
import { refills } from '../failure/answer-memory.js';
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
  /** Milli-units, as counted at `from`. */
  readonly cost: number;
  /** When it was counted (limiter clock, ms). */
  readonly from: number;
  /** How long after `from` the policy's state is whole again (ms): nothing is owed after. */
  readonly forMs: number;
  /** A bucket's count falls as it refills. */
  readonly fades: boolean;
  /** Sent again at the next turn. */
  waiting: boolean;
}

export class RestoreCharges {
  /** Charges not landed yet: in flight or waiting. */
  private readonly live = new Set<Charge>();
  private readonly wait = new DoublingWait();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

  constructor(
    private readonly guard: StoreGuard,
    private readonly store: StoreTimer,
    private readonly now: Clock,
  ) {}

  /**
   * Charges the store again, policy by policy, what it had counted for a key before it lost its state
   * (`used`, milli-units per enforced policy of `plan`; `until`, ms until each is whole again): all of each
   * when it fits, else what that policy has left, so it ends exhausted. What the store holds of the key in
   * this process (`localBatch`) is told first, so that its answers count it.
   */
  restore(plan: StorePlan, storeKey: StoreKey, used: ArrayLike<number>, until: ArrayLike<number>): void {
    if (!Array.prototype.some.call(used, (u: number) => Math.floor(u) > 0)) return;
    this.store.chargedBeside(storeKey, plan, used);
    const from = this.now();
    for (let i = 0; i < used.length; i++) {
      const cost = Math.floor(used[i] as number);
      if (!(cost > 0)) continue;
      const single = subPlan(plan, [i]);
      const key = keyAt(storeKey, i);
      const p = single.policies[0];
      const fades = p !== undefined && refills(p);
      let node: string;
      try {
        node = this.guard.nodeOfKey(key);
      } catch {
        continue;
      }
      this.send({ key, plan: single, node, cost, from, forMs: until[i] as number, fades, waiting: false });
    }
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
    const cost = this.owedAt(c, at);
    if (cost <= 0 || this.closed) {
      this.live.delete(c);
      return;
    }
    this.live.add(c);
    c.waiting = false;
    if (again && this.guard.refuses(c.node, at)) {
      this.later(c);
      return;
    }
    this.call(c, cost, at).then(
      (r) => (isResultOf(r, c.plan) ? this.landed(c, r) : this.later(c)),
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
