/**
 * @module What `'local'` admitted for a key while the store could not be asked (Fallback.takeOwed),
 * charged to the store when it answers again, so that a window that began in the outage gets its limit
 * once, not the store's whole limit beside the local admissions. All of it when the plan takes it. Else
 * the plan is charged what its tightest policy has left, and each other policy the rest on its own (a
 * plan of that policy alone: the same store key), up to what it has left: in a plan of a short and a long
 * window, an outage longer than the short window admits more than the short one has left when the store
 * is back, and the long one is charged all of it, not only what the short one could take.
 */
import type { CompiledPolicy } from '../algorithms/kernel.js';
import type { Fallback, Owed } from '../failure/fallback.js';
import { alone, countsFor, type SureCharges } from '../failure/restore/sure-charges.js';
import type { StoreGuard } from '../failure/store-guard.js';
import { isResultOf } from '../failure/store-result-error.js';
import { isPromiseLike } from '../internal/promise.js';
import { catchRejection } from '../internal/rejection.js';
import type { StoreTimer } from '../observability/store-timer.js';
import {
  keyAt,
  R_REMAINING,
  R_RESET,
  RESULT_STRIDE,
  resultCharged,
  type StoreKey,
  type StorePlan,
  type StoreResult,
  subPlan,
} from '../stores/store.js';
import type { Clock } from '../types.js';
import type { Target } from './target.js';

/**
 * Gives back a charge the store ran late after a carry charged the same admissions (Decider.giveBack);
 * `full`: only from the policies it marks (undefined: from all).
 */
export type GiveBack = (t: Target, cost: number, r: StoreResult, at: number, full?: readonly boolean[]) => void;

/** How many times a carry charges what is left when checks keep taking some of it (OwedCarry.chargeLeft). */
const LEFT_ATTEMPTS = 4;

export class OwedCarry {
  constructor(
    private readonly guard: StoreGuard,
    private readonly store: StoreTimer,
    private readonly sure: SureCharges,
    private readonly now: Clock,
    private readonly giveBack: GiveBack,
  ) {}

  /**
   * Charges the store, best effort, what entry `e` owes (milli-units `f` admitted for `t`): all of it when
   * the plan takes it; else what its tightest policy has left (so the key ends exhausted rather than
   * admitting its whole limit again beside the outage's admissions), then the rest to each policy that has
   * room for it (`chargeRest`). A plan charge that fails owes what is left of it again (the key's next
   * answer tries again; the failure mode keeps counting it). A charge is a watched call (StoreGuard.watch), as a check
   * is: the checks sent behind thousands of them (a breaker closing on an outage's many keys) are given the
   * time the node needs to answer the charges first, and a node that does not answer them fails as it would
   * for checks. Resolves (never rejects) once the carry is over: charged, refused, or owed again; then
   * `e.full` says which policies took all of it (`afterCarry`).
   */
  carry(t: Target, f: Fallback, e: Owed): Promise<void> {
    if (t.cp.leases) return this.carryRates(t, f, e);
    return new Promise<void>((done) => {
      this.chargePlan(t, f, e, e.cost, e.cost, done, (r) => {
        if (!allCharged(r, t.cp.enforcedCount)) return this.chargeLeft(t, f, e, e.cost, r, LEFT_ATTEMPTS, done);
        this.end(t, f, e, r, 0, done);
      });
    });
  }

  /**
   * `carry` for a plan with a concurrency policy: a charge of the whole plan would take a lease, so each
   * enforced rate policy is charged what `e` owes on its own (its key, one call of that policy alone),
   * sent until it lands, and what it has left when that does not fit (SureCharges), for as long as its
   * window counts the outage's admissions. Before, such a plan was charged nothing: the window admitted
   * its limit again beside the outage's admissions (6,000 per 20 s and 50 at once, Redis stopped 2 s:
   * 2,634 over). Resolves once the first tries are answered (the checks held for it go after them);
   * `e.full` then marks the rate policies.
   */
  private carryRates(t: Target, f: Fallback, e: Owed): Promise<void> {
    const plan = t.cp.storePlan;
    const at = this.now();
    const full: boolean[] = [];
    const sent: Promise<void>[] = [];
    for (let i = 0; i < t.cp.enforcedCount; i++) {
      const p = plan.policies[i] as CompiledPolicy;
      full.push(p.algorithm !== 'concurrency');
      if (p.algorithm === 'concurrency') continue;
      // As long as its record counts (a window begun in the outage, with no record of it: a whole window).
      const forMs = countsFor(p, f.resetsIn(t.key, i, at), e.cost);
      const landed = (r: StoreResult, _timely: boolean, cost: number): void => {
        if (resultCharged(r, 0)) f.carryLanded(t.key, alone(t.cp.enforcedCount, i, cost));
      };
      sent.push(this.sure.send({ key: keyAt(t.storeKey, i), plan: subPlan(plan, [i]), cost: e.cost, forMs, restore: false, landed }));
    }
    return Promise.all(sent).then(() => {
      f.toldApart(t.key);
      f.settle(e, full);
    });
  }

  /**
   * Runs `then` with which policies the carry that took `e` charged all of it (Owed.full), now if it ended,
   * else when it ends: a late run of a call whose charge the carry also made goes back from those only.
   */
  afterCarry(e: Owed, then: (full: readonly boolean[]) => void): void {
    if (e.full !== undefined) then(e.full);
    else if (e.waiting === undefined) e.waiting = [then];
    else e.waiting.push(then);
  }

  /**
   * A call for `t` at `at` the watchdog gave up on, that the store ran after all (its reply `r`, charging `cost`):
   * `admitted` by the failure mode (owed into `entry`), or refused. What the key owes is that much less
   * while it waits (Fallback.ranLate); once a carry took it, the charge goes back from the policies the
   * carry charged in full (`afterCarry`), and stays on those it left exhausted; with nothing owed, a
   * refused one's charge goes back. A reply whose enforced policies charged nothing takes nothing off
   * (a refused one's other charges, of shadow policies, go back).
   */
  ranLate(t: Target, f: Fallback, entry: Owed | undefined, admitted: boolean, cost: number, r: StoreResult, at: number): void {
    // From a key the store lost, it is a witness of the loss (failure/restore/budget-restore.ts `agree`).
    if (!admitted) f.lateRefused(t.key, r, at, t.storeKey, cost);
    if (!allCharged(r, t.cp.enforcedCount)) {
      if (!admitted) this.giveBack(t, cost, r, at);
      return;
    }
    const now = this.now();
    const e = admitted ? entry : f.lateEntry(t.key, now);
    const run = f.ranLate(e, cost, r, now);
    if (run === 'carried') this.afterCarry(e as Owed, (full) => this.giveBack(t, cost, r, at, full));
    else if (run === 'gone' && !admitted) this.giveBack(t, cost, r, at);
  }

  /**
   * After a plan charge refused for want of room (`r`, its answer), with `owed` still to charge: charges
   * what the tightest policy has left, so the key ends exhausted, and again (at most `attempts` times in
   * all) while the key has room and some is still owed: checks from elsewhere took some of it meanwhile, or
   * budget came back (a give-back landing, a bucket refilling), so that neither a key checked without
   * pause keeps its whole budget beside the outage's admissions, nor budget given back after the first
   * charge stays free. Then the rest to each policy on its own (`chargeRest`). `done` when it ends.
   */
  private chargeLeft(t: Target, f: Fallback, e: Owed, owed: number, r: StoreResult, attempts: number, done: () => void): void {
    const enforced = t.cp.enforcedCount;
    const left = Math.min(owed, leastRemaining(r, enforced));
    if (left <= 0) {
      this.end(t, f, e, r, owed, done, attempts);
      return;
    }
    this.chargePlan(t, f, e, owed, left, done, (last) => {
      const rest = allCharged(last, enforced) ? owed - left : owed;
      if (rest > 0 && attempts > 1 && leastRemaining(last, enforced) > 0) {
        return this.chargeLeft(t, f, e, rest, last, attempts - 1, done);
      }
      this.end(t, f, e, last, rest, done, attempts);
    });
  }

  /**
   * Ends the carry of `e` on the store's last answer `r`, `rest` not charged to the whole plan. Cut short
   * (`rest` left): give-backs of the key still on their way (Store.returning: a refund, a batch's unspent
   * units, sent before but landing after the charges read its room) are waited for and what they gave
   * back is charged (while `attempts` last): the outage's admissions spent that budget. Then the failure
   * mode is told of it, `rest` is charged to each policy on its own (`chargeRest`), and `e.full` set.
   */
  private end(t: Target, f: Fallback, e: Owed, r: StoreResult, rest: number, done: () => void, attempts = 0): void {
    const n = t.cp.enforcedCount;
    const back = rest > 0 && attempts > 1 ? this.store.returning(t.storeKey) : undefined;
    if (back !== undefined) {
      back.then(() =>
        this.chargePlan(t, f, e, rest, rest, done, (x) =>
          allCharged(x, n) ? this.end(t, f, e, x, 0, done) : this.chargeLeft(t, f, e, rest, x, attempts - 1, done),
        ),
      );
      return;
    }
    f.told(t.key, r, this.now(), t.storeKey);
    this.chargeRest(t, f, rest, r);
    // A policy takes all of it when nothing was left over, or when chargeRest charges it the rest in full.
    const full: boolean[] = [];
    for (let i = 0; i < n; i++) full.push(rest <= 0 || (n > 1 && Math.floor(r[i * RESULT_STRIDE + R_REMAINING] as number) >= rest));
    f.settle(e, full);
    done();
  }

  /**
   * One charge of `cost` to the whole plan, toward `owed` of entry `e`; `then` gets the store's answer,
   * `failed` (`owed` owed again) ends the carry.
   */
  private chargePlan(t: Target, f: Fallback, e: Owed, owed: number, cost: number, done: () => void, then: (r: StoreResult) => void): void {
    const plan = t.cp.storePlan;
    const at = this.now();
    // Owed again as it was: until its last admission is a window old, so it never outlives the window.
    let again: Owed | undefined;
    const failed = (): void => {
      again = f.owe(t.key, t.storeKey, owed, e.last);
      // Charged again by the next carry: a late run of this one's charge doubles it, as after a full carry.
      f.settle(e, new Array<boolean>(t.cp.enforcedCount).fill(true));
      done();
    };
    // A charge the watchdog gave up on that the store ran after all: not owed a second time. If a
    // later carry took what was owed again, that carry charges it too: this one goes back.
    const late = (x: StoreResult): void => {
      if (isResultOf(x, plan)) this.ranLate(t, f, again, true, cost, x, at);
    };
    const answered = (x: StoreResult): void => {
      if (!isResultOf(x, plan)) {
        failed();
        return;
      }
      // Landed: the answers after this one count it, this one's included (Fallback.carryLanded), so that a
      // server that came back behind is measured without it.
      const n = t.cp.enforcedCount;
      f.carryLanded(
        t.key,
        Array.from({ length: n }, (_, i) => (resultCharged(x, i) ? cost : 0)),
      );
      then(x);
    };
    this.send(t.storeKey, plan, cost, at, answered, failed, late);
  }

  /**
   * After a plan charge that could not take all that was owed (a policy had less room), `rest` still owed:
   * each enforced policy with room is charged it on its own, up to its room (`x`, the plan charge's answer,
   * holds each one's remaining and reset), sent until it lands (failure/restore/sure-charges.ts): dropped, the key would
   * keep that budget in the longer windows beside the outage's admissions. Not owed again as a whole (the
   * plan charge is taken; owing the whole again would charge the tightest policy twice). What the store
   * answers is remembered, so a second outage continues each policy from it.
   */
  private chargeRest(t: Target, f: Fallback, rest: number, x: StoreResult): void {
    const plan = t.cp.storePlan;
    const n = t.cp.enforcedCount;
    if (n < 2 || rest <= 0) return;
    // The store may reuse its result buffer: the key's latest answer, each policy's slot as it is charged.
    const latest = Float64Array.from({ length: plan.policies.length * RESULT_STRIDE }, (_, k) => x[k] as number);
    for (let i = 0, o = 0; i < n; i++, o += RESULT_STRIDE) {
      const cost = Math.min(rest, Math.floor(x[o + R_REMAINING] as number));
      if (!(cost > 0)) continue;
      const single = subPlan(plan, [i]);
      // Remembered only when answered in time: a later answer would put the plan charge's numbers for the
      // other policies over fresher ones. Landed, the answers after it count it (Fallback.carryLanded).
      const landed = (r: StoreResult, timely: boolean, charged: number): void => {
        if (!isResultOf(r, single) || !allCharged(r, 1)) return;
        f.carryLanded(t.key, alone(n, i, charged));
        if (!timely) return;
        for (let k = 0; k < RESULT_STRIDE; k++) latest[o + k] = r[k] as number;
        f.carryAnswered(t.key, latest, this.now(), t.storeKey);
      };
      const forMs = countsFor(single.policies[0] as CompiledPolicy, x[o + R_RESET] as number, cost);
      void this.sure.send({ key: keyAt(t.storeKey, i), plan: single, cost, forMs, restore: false, landed });
    }
  }

  /** A watched store call charging `cost` to `key` under `plan`; a call that throws is a failure. */
  private send(
    key: StoreKey,
    plan: StorePlan,
    cost: number,
    at: number,
    answered: (r: StoreResult) => void,
    failed: () => void,
    late: (r: StoreResult) => void,
  ): void {
    const guard = this.guard;
    const seq = guard.next();
    try {
      const r = this.store.apply(key, plan, cost, at);
      if (!isPromiseLike(r)) answered(r);
      else catchRejection(guard.watch(guard.nodeOfKey(key), seq, r, answered, failed, late), failed);
    } catch {
      failed();
    }
  }
}

/** Whether every enforced policy of `r` (the first `enforced`) charged. */
function allCharged(r: StoreResult, enforced: number): boolean {
  for (let i = 0; i < enforced; i++) if (!resultCharged(r, i)) return false;
  return true;
}

/** The least remaining among the enforced policies of `r` (milli-units); 0 when it is not a finite number. */
function leastRemaining(r: StoreResult, enforced: number): number {
  let least = Number.POSITIVE_INFINITY;
  for (let i = 0, o = 0; i < enforced; i++, o += RESULT_STRIDE) least = Math.min(least, r[o + R_REMAINING] as number);
  return Number.isFinite(least) ? least : 0;
}
