/**
 * @module Charges the limiter makes for itself that a budget depends on, sent until they land: what a
 * store that lost its state is charged again (restore-charges.ts), and what a carry charges each policy
 * on its own after an outage (limiter/carry-owed.ts `chargeRest`). Dropped on failure, such a charge leaves a key
 * budget that nobody charges, and the key admits it twice.
 *
 * A try that fails is sent again after a wait that doubles from 200 ms to 10 s (DoublingWait; one timer for
 * all of them), while the policy's state would still count the charge: a window's count whole until its
 * reset, a bucket's less what it refilled since (as the failure mode's memory counts it: linearly to its
 * reset). The first try goes at once, whatever it owes (checks held for a restore wait for its answer, and
 * for a charge of what is left to be sent: `send`); a try sent again to a node whose breaker is open goes
 * only as that node's one probe, the others waiting for the next turn. At most 100,000 are kept to send
 * again. A try ends when its call settles, not when the watchdog gives up on it (the node's health hears of
 * it as of any call): a slow store's late reply is the charge landing, not a reason to charge twice. A try
 * that failed may still have run (a connection that dropped after sending it): the key is then charged twice,
 * never not at all. Refused for want of room, what the policy has left is charged, so the key ends exhausted
 * (a few times at most, as checks take some meanwhile). A charge may first ask what it is (`ask`: a restore's
 * ledger), asked again alike.
 *
 * A loss of the store's state (`lost`) drops the restore charges waiting on that node: their ledgers went
 * with the keys, and the restore that follows charges all of it again. An ask in flight then is charged
 * all the same once it answers: its raise may have landed on the new ledger, which then owes nothing.
 */
import type { CompiledPolicy } from '../../algorithms/kernel.js';
import { DoublingWait } from '../../internal/doubling-wait.js';
import { MILLI } from '../../internal/fixed-point.js';
import { isPromiseLike } from '../../internal/promise.js';
import { catchRejection } from '../../internal/rejection.js';
import type { StoreTimer } from '../../observability/store-timer.js';
import { R_REMAINING, resultCharged, type StorePlan, type StoreResult } from '../../stores/store.js';
import type { Clock } from '../../types.js';
import { refills } from '../answer-memory.js';
import type { StoreGuard } from '../store-guard.js';
import { isResultOf } from '../store-result-error.js';

/** A charge to send until it lands. */
export interface SureCharge {
  readonly key: string;
  /** The one policy charged. */
  readonly plan: StorePlan;
  /** Milli-units, as counted now (with `ask`: what it answers). */
  readonly cost: number;
  /** How long from now the policy's state is whole again (ms): nothing is owed after. */
  readonly forMs: number;
  /** A restore's charge: dropped at a loss (`lost`), which the next restore charges again. */
  readonly restore: boolean;
  /** Asked first, and again while it fails, given the time left (ms): what to charge. */
  readonly ask?: (ttlMs: number) => Promise<number>;
  /**
   * Told the store's answer once a try lands; `timely`: the first try, answered before the watchdog gave
   * up on it; `cost`: what that try charged, milli-units (a try sent again or a charge of what is left
   * charges less than `cost` above), if its answer says it was charged.
   */
  readonly landed?: (r: StoreResult, timely: boolean, cost: number) => void;
}

/** A charge, as it is sent. */
interface Sending {
  readonly c: SureCharge;
  readonly node: string;
  /** Milli-units, as counted at `from` (once `ask` answered). */
  cost: number;
  /** When it was counted (limiter clock, ms). */
  readonly from: number;
  /** A bucket's count falls as it refills. */
  readonly fades: boolean;
  /** Still to ask what it is. */
  asking: boolean;
  /** A try of its charge was sent. */
  sent: boolean;
  /** Sent again after a failure (its own try, or its ask's): its state may have moved on since `from`. */
  again: boolean;
  /** Charged again, after a refusal for want of room, at most this many more times. */
  readonly lefts: number;
  /** A charge of what a refused one left (`landed`): landed, what it leaves is charged in turn. */
  readonly leftover: boolean;
  /** Sent again at the next turn. */
  waiting: boolean;
  /** Settles `send`'s promise: at the first try's answer (or failure), once a charge of what is left is sent. */
  firstDone: (() => void) | undefined;
}

/** How many times a charge refused for want of room charges what is left, as checks take some meanwhile. */
const LEFT_ATTEMPTS = 8;

/** Below this much left (milli-units), a charge of what is left asks for all of it (`landed`). */
const SMALL_LEFT = 8 * MILLI;

/** The most charges kept to send again: past it, one that fails is dropped (a store failing for long under a key flood). */
const MAX_LIVE = 100_000;

/**
 * How long a charge of `cost` milli-units made now counts in policy `p`'s state, whose answer said it is
 * whole again in `resetMs`: a bucket's shortfall and the charge refill together; a window's state lasts
 * until its reset, or, with no state yet (reset 0), the window the charge opens.
 */
export function countsFor(p: CompiledPolicy, resetMs: number, cost: number): number {
  if (refills(p)) return resetMs + (cost * p.tokenTicks) / p.rate;
  return resetMs > 0 ? resetMs : p.windowMs;
}

/** `n` policies' charges, `cost` for policy `i` alone. */
export function alone(n: number, i: number, cost: number): Float64Array {
  const charged = new Float64Array(n);
  charged[i] = cost;
  return charged;
}

export class SureCharges {
  /** Charges not landed yet: in flight or waiting. */
  private readonly live = new Set<Sending>();
  private readonly wait = new DoublingWait();
  private closed = false;

  constructor(
    private readonly guard: StoreGuard,
    private readonly store: StoreTimer,
    private readonly now: Clock,
  ) {}

  /**
   * Sends `c` now, and again until it lands. The promise settles when the first try is answered (or
   * failed), and, when it was refused for want of room, once the charge of what is left is sent: checks
   * held for it until then (StoreGuard.holdFor) go after both, so none takes what the key had left between
   * the refusal and that charge (a key checked in a tight loop got its whole limit again that way, one
   * check slipping in before each of the charges of what was left).
   */
  send(c: SureCharge): Promise<void> {
    return new Promise((resolve) => this.start(c, c.cost, LEFT_ATTEMPTS, resolve));
  }

  /** The store lost its state (on `node`; undefined: all of it): the restore charges waiting there go, as the ledgers did. */
  lost(node?: string): void {
    for (const s of this.live) if (s.c.restore && (node === undefined || s.node === node)) this.live.delete(s);
  }

  close(): void {
    this.closed = true;
    this.wait.stop();
    for (const s of this.live) settleFirst(s);
    this.live.clear();
  }

  /**
   * Starts sending `cost` of `c`, with `lefts` charges of what is left after a refusal (`leftover`: this is
   * one); `firstDone` told as `send` says.
   */
  private start(c: SureCharge, cost: number, lefts: number, firstDone?: () => void, leftover = false): void {
    let node: string;
    try {
      node = this.guard.nodeOfKey(c.key);
    } catch {
      firstDone?.();
      return;
    }
    const p = c.plan.policies[0];
    const fades = p !== undefined && refills(p);
    const s: Sending = {
      c,
      node,
      cost,
      from: this.now(),
      fades,
      asking: c.ask !== undefined,
      sent: false,
      again: false,
      lefts,
      leftover,
      waiting: false,
      firstDone,
    };
    this.try(s);
  }

  /** What `s` still owes at `at`: all of it at once; sent again, less a bucket's refill since, 0 once its state is whole. */
  private owedAt(s: Sending, at: number): number {
    if (!s.again) return s.cost;
    const left = s.c.forMs - (at - s.from);
    if (!(left > 0)) return 0;
    return s.fades ? Math.floor((s.cost * left) / s.c.forMs) : s.cost;
  }

  /**
   * One try of `s`. Sent again, it goes only while its state would still count it, and, while its node's
   * breaker is open, its charge only as that node's one probe (StoreGuard.allow: the charge's watched call
   * tells the breaker how it went), the others waiting; its ask only once a probe may go, taking none.
   */
  private try(s: Sending): void {
    const at = this.now();
    const again = s.again;
    if (this.closed || (again && !(s.c.forMs - (at - s.from) > 0))) {
      this.live.delete(s);
      settleFirst(s);
      return;
    }
    this.live.add(s);
    s.waiting = false;
    if (s.asking) {
      if (again && this.guard.refuses(s.node, at)) this.later(s);
      else this.ask(s, at);
      return;
    }
    const cost = this.owedAt(s, at);
    if (cost <= 0) {
      this.live.delete(s);
      settleFirst(s);
      return;
    }
    if (again && !this.guard.allow(s.node, at)) {
      this.later(s);
      return;
    }
    const first = !s.sent;
    s.sent = true;
    let timely = false;
    this.call(s, cost, at, () => {
      timely = first;
    }).then(
      (r) => (isResultOf(r, s.c.plan) ? this.landed(s, r, timely, cost) : this.later(s)),
      () => this.later(s),
    );
  }

  /** Asks what `s` is to charge (`SureCharge.ask`), then charges it; asked again at the next turn if it fails. */
  private ask(s: Sending, at: number): void {
    let asked: Promise<number>;
    try {
      asked = (s.c.ask as NonNullable<SureCharge['ask']>)(Math.max(1, s.c.forMs - (at - s.from)));
    } catch {
      this.later(s);
      return;
    }
    asked.then(
      // Charged even if a loss dropped it meanwhile: its raise may have landed on the new ledger, and then
      // the next restore owes nothing for it (charged twice, never not at all).
      (cost) => {
        if (this.closed) return;
        s.asking = false;
        s.cost = cost;
        this.try(s);
      },
      () => this.later(s),
    );
  }

  /**
   * Charges `cost` for `s` at `at`; the call itself, its node's health told how it went, as of a check's
   * (its reply, however late, is what counts here), `timely` told of a reply in time.
   */
  private call(s: Sending, cost: number, at: number, timely: () => void = none): Promise<StoreResult> {
    const seq = this.guard.next();
    try {
      const r = this.store.apply(s.c.key, s.c.plan, cost, at);
      if (!isPromiseLike(r)) {
        this.guard.answered(s.node);
        timely();
        return Promise.resolve(r);
      }
      // The watch's handlers run before this call's own (they were attached first).
      catchRejection(this.guard.watch(s.node, seq, r, timely, none), none);
      return Promise.resolve(r);
    } catch (error) {
      this.guard.failure(s.node, seq, error, false);
      return Promise.reject(error);
    }
  }

  /**
   * `s` was answered: it landed. Refused for want of room, what the policy has left is charged, so it ends
   * exhausted (a restore's charge, or a carry's). Checks from elsewhere take some between a reply and the
   * next charge: asked for all of what was left, the charge was refused again each time (four processes on a GCRA key, a FLUSHALL: refused
   * three times in a row, the key never charged again, 2,800 over its limit). So a charge of what was left
   * that was refused asks for seven eighths of what is left then (all of it below 8 units), and once one
   * lands, what it left is charged in turn. The first asks for all of it: a key left with room takes batches
   * (`localBatch`) that are spent before the next charge comes (30 over a limit of 1,000).
   */
  private landed(s: Sending, r: StoreResult, timely: boolean, cost: number): void {
    // Dropped by a loss meanwhile: it landed on the new state, which the next restore charges; nothing more.
    const live = this.live.delete(s);
    this.wait.succeeded();
    try {
      s.c.landed?.(r, timely, cost);
    } catch {}
    const charged = resultCharged(r, 0);
    const left = charged && !s.leftover ? 0 : Math.floor(r[R_REMAINING] as number);
    if (live && left > 0 && s.lefts > 0) {
      const forMs = s.c.forMs - (this.now() - s.from);
      const next = s.leftover && !charged && left >= SMALL_LEFT ? left - Math.floor(left / 8) : left;
      this.start(
        { key: s.c.key, plan: s.c.plan, cost: next, forMs, restore: s.c.restore, landed: s.c.landed },
        next,
        s.lefts - 1,
        undefined,
        true,
      );
    }
    settleFirst(s);
  }

  /** `s`'s try failed: sent again at the next turn, while it is live (not landed, not dropped by a loss). */
  private later(s: Sending): void {
    // The first try failed: checks held for it wait no more (the charge is sent again meanwhile).
    settleFirst(s);
    if (!this.live.has(s) || this.closed) return;
    if (this.live.size > MAX_LIVE) {
      this.live.delete(s);
      return;
    }
    s.waiting = true;
    this.wait.retry(() => this.turn());
  }

  /** Sends every waiting charge again. */
  private turn(): void {
    this.wait.started();
    for (const s of [...this.live]) {
      if (!s.waiting) continue;
      s.again = true;
      this.try(s);
    }
  }
}

const none = (): void => undefined;

/** Tells `send`'s promise that `s`'s first try is over, once. */
function settleFirst(s: Sending): void {
  const done = s.firstDone;
  s.firstDone = undefined;
  done?.();
}
