/**
 * @module GCRA (generic cell rate algorithm): one timestamp per key, the theoretical arrival time (TAT).
 * Emission interval `T = windowMs / limit`, tolerance `burst * T` (burst defaults to limit). A request of
 * cost c is admitted iff `max(now, tat) + c * T <= now + burst * T`; then `tat = max(now, tat) + c * T`.
 *
 * Pro: the token bucket's exact decisions (same admissions, remaining and waits) in one number per key;
 * smooth, no boundary bursts, exact `retryAfterMs`.
 * Con: no calendar reset to show users; "reset" means "bucket full again".
 *
 * Fixed point: time is kept as integer ms plus a fraction in ticks (`rate` ticks per ms), and one
 * milli-unit of cost is `tokenTicks` ticks, so `T` is exact even for 1000 / 3 ms.
 * State: [tat ms, tat fraction in ticks (0 <= fraction < the writer's rate), the writer's limit, the
 * writer's burst, then the refund frame (refund-frame.ts)]. A key never seen: tat = -Infinity. The debt
 * `max(0, tat - now)` in ticks plays the part of (capacity - tokens) of a token bucket.
 *
 * A change of limit (or plan) keeps the state: the key is named without limit or burst, and the state
 * records the limit and burst it was written under. A reader under other ones converts the debt (what
 * was consumed and has not leaked yet) from the writer's ticks to its own, rounding up, clamped to its
 * capacity: no fresh budget on a downgrade, none lost on an upgrade. A charge rewrites the state in its
 * own scale (adoptGcra, then the charge); a refusal writes nothing, whatever room the debt left: the state
 * leaks at the writer's rate and the refusal's waits are read in it (foreignRefusal), so a refusal never
 * forgets what is owed nor changes the rate it is paid back at. The window is part of the key name.
 */

import { ceilDiv, floorDiv, MILLI, ticksToMilli } from '../internal/fixed-point.js';
import type { AlgorithmKernel, CompiledPolicy, Outcome, StateTable } from './kernel.js';
import { waitToConvertTo, writeExceeds, writerScale } from './kernel.js';
import { closeFrame, FRAME_AT, horizonAt, initFrame, noteMark, refundedAt } from './refund-frame.js';

/**
 * What is left at a debt of `debt` ticks, in milli-units: the room to the capacity, and for a leaky-bucket
 * `maxDelayMs` no more than requests of cost 1 can still take before one would wait longer: each is
 * admitted while the debt it finds is at most `maxDelayTicks`, so as many as fit from `debt` to there, and
 * none past it. Without it, the room to the capacity (gcra, a leaky bucket that queues every admitted
 * request). A check and a peek of the same state read the same number.
 */
export function gcraLeft(debt: number, p: CompiledPolicy): number {
  const cap = p.capTicks;
  const max = p.maxDelayTicks;
  if (
    // Stryker disable next-line EqualityOperator: equivalent, `debt >= cap` -> `>`: at debt = cap, a bound past it gives ticksToMilli(0), 0, and a bound short of it is passed (`debt > max`), 0
    debt >= cap ||
    debt > max
  )
    return 0;
  // A bound at or past the capacity (none: Infinity) never cuts the room: gcra and most leaky buckets.
  // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, `max >= cap` -> `false`, `>`: a shortcut; with max >= cap the queue's count below is past cap - debt, so the min is cap - debt
  if (max >= cap) return ticksToMilli(cap - debt, p.tokenTicks);
  // Requests of cost 1 (`unit` ticks each) are admitted at debts debt, debt + unit, ... up to `max`.
  const unit = MILLI * p.tokenTicks;
  const queue = (floorDiv(max - debt, unit) + 1) * unit;
  return ticksToMilli(Math.min(cap - debt, queue), p.tokenTicks);
}

/**
 * `max(0, tat - now)` in the ticks of `p`. State written under another limit or burst (same window) is
 * converted: the writer's debt in milli-units, `debtW / tokenTicksW`, times `p.tokenTicks`, rounded up and
 * clamped to `p.capTicks` (stores/redis/kernels/gcra.ts load does the same operations in the same order).
 */
export function gcraDebt(t: StateTable, o: number, now: number, p: CompiledPolicy): number {
  const tatMs = t.f[o] as number;
  if (tatMs < now) return 0;
  const limit = t.f[o + 2] as number;
  const burst = t.f[o + 3] as number;
  if (
    limit === p.limit &&
    // Stryker disable next-line ConditionalExpression: equivalent, `burst === p.capacity` -> `true`: the scale depends on limit and window only, so it skips the clamp alone, and a debt at or past capTicks answers as capTicks (nothing left, refused, waits from foreignRefusal)
    burst === p.capacity
  )
    return (tatMs - now) * p.rate + (t.f[o + 1] as number);
  const [rateW, tokenTicksW] = writerScale(limit, burst, p.windowMs);
  const debtW = (tatMs - now) * rateW + (t.f[o + 1] as number);
  return Math.min(p.capTicks, ceilDiv(debtW * p.tokenTicks, tokenTicksW));
}

/**
 * A refusal of `need` ticks on state written under another limit or burst that still owes something: a
 * refusal writes nothing (only a charge adopts the state, adoptGcra), so the state leaks at the writer's
 * rate, and the waits are read in the writer's scale: the retry until the writer's debt converts to at
 * most `capTicks - need` (and, for leaky-bucket `maxDelayMs`, to at most `maxDelayTicks`), the reset until
 * it is gone. Writes them into `out` and returns true (`need` undefined: a cost that can never fit, or a
 * policy admitted but not charged, only its reset); false (nothing written) for state in `p`'s own scale
 * or owing nothing, which the caller answers in `p`'s scale.
 */
function foreignRefusal(t: StateTable, o: number, now: number, p: CompiledPolicy, need: number | undefined, out: Outcome): boolean {
  const limit = t.f[o + 2] as number;
  const burst = t.f[o + 3] as number;
  if (
    // Stryker disable next-line ConditionalExpression: equivalent, `limit === p.limit && burst === p.capacity` -> `false`: in `p`'s own scale the writer's waits are `p`'s, ceilDiv(after - cap, rate) and ceilDiv(debt - maxDelay, rate)
    (limit === p.limit && burst === p.capacity) ||
    (t.f[o] as number) < now
  )
    return false;
  const [rateW, tokenTicksW] = writerScale(limit, burst, p.windowMs);
  const debtW = ((t.f[o] as number) - now) * rateW + (t.f[o + 1] as number);
  out.resetMs = ceilDiv(debtW, rateW);
  // Stryker disable next-line BooleanLiteral: equivalent, `return true` -> `false`: evaluateGcra's exceeds path, the one caller without `need`, ignores the answer
  if (need === undefined) return true;
  let wait = waitToConvertTo(debtW, rateW, tokenTicksW, p, p.capTicks - need);
  // Stryker disable next-line ConditionalExpression: equivalent, `Number.isFinite(...)` -> `true`: without a bound (Infinity) the wait to convert to it is -Infinity, which the max drops
  if (Number.isFinite(p.maxDelayTicks)) wait = Math.max(wait, waitToConvertTo(debtW, rateW, tokenTicksW, p, p.maxDelayTicks));
  out.retryAfterMs = Math.max(1, wait);
  return true;
}

/**
 * Records the new TAT for a debt of `after` ticks of `p` (and `p`'s limit and burst), and its mark in the
 * refund frame; returns its whole ms.
 */
function store(t: StateTable, o: number, now: number, after: number, p: CompiledPolicy): number {
  const whole = floorDiv(after, p.rate);
  const frac = after - whole * p.rate;
  t.f[o] = now + whole;
  t.f[o + 1] = frac;
  t.f[o + 2] = p.limit;
  t.f[o + 3] = p.capacity;
  noteMark(t, o, now, now + whole + (frac > 0 ? 1 : 0));
  return whole;
}

/** When the bucket is full again as the state stands (the TAT rounded up to the ms). */
export function gcraFullAt(t: StateTable, o: number): number {
  return (t.f[o] as number) + ((t.f[o + 1] as number) > 0 ? 1 : 0);
}

/**
 * The position of the charge just made (refund-frame.ts): ticks refunded in the frame, less how far the
 * charge's mark (the TAT rounded up) lies after the exact TAT.
 */
export function gcraPosition(t: StateTable, slot: number, now: number, p: CompiledPolicy): number {
  const o = slot * t.stride;
  const frac = t.f[o + 1] as number;
  return refundedAt(t, o, now) - (frac > 0 ? p.rate - frac : 0);
}

/** Evaluates the GCRA rule; `delayTicks` >= 0 turns on the leaky-bucket delay (Infinity: never delay). */
export function evaluateGcra(
  t: StateTable,
  slot: number,
  now: number,
  cost: number,
  p: CompiledPolicy,
  out: Outcome,
  delayTicks: number,
): void {
  const rate = p.rate;
  const cap = p.capTicks;
  const tpm = p.tokenTicks;
  const o = slot * t.stride;
  const debt = gcraDebt(t, o, now, p);
  const need = cost * tpm;
  if (need > cap) {
    writeExceeds(out, gcraLeft(debt, p), ceilDiv(debt, rate));
    foreignRefusal(t, o, now, p, undefined, out);
    return;
  }
  out.exceeds = false;
  const after = debt + need;
  // leaky-bucket maxDelayMs: a request that would wait longer is rejected, not queued.
  const maxDelay = p.maxDelayTicks;
  if (after <= cap && debt <= maxDelay) {
    out.allowed = true;
    out.remaining = gcraLeft(after, p);
    out.retryAfterMs = 0;
    out.resetMs = ceilDiv(after, rate);
    // Stryker disable next-line EqualityOperator: equivalent, `debt > delayTicks` -> `>=`: at equality the delay is ceilDiv(0, rate), 0
    out.delayMs = debt > delayTicks ? ceilDiv(debt - delayTicks, rate) : 0;
  } else {
    out.allowed = false;
    // A refusal for the queue's length (leaky-bucket maxDelayMs) admits nothing now: none is left to take.
    out.remaining = gcraLeft(debt, p);
    out.delayMs = 0;
    if (foreignRefusal(t, o, now, p, need, out)) return;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, `debt > maxDelay` -> `true`, `>=`: within the bound the max is ceilDiv(after - cap), >= 1
    out.retryAfterMs = debt > maxDelay ? Math.max(ceilDiv(after - cap, rate), ceilDiv(debt - maxDelay, rate)) : ceilDiv(after - cap, rate);
    out.resetMs = ceilDiv(debt, rate);
  }
}

/**
 * Decides and, when admitted, charges in one pass: the new TAT and the reset time come from the same
 * division of the debt by the rate.
 */
export function consumeGcra(
  t: StateTable,
  slot: number,
  now: number,
  cost: number,
  p: CompiledPolicy,
  out: Outcome,
  delayTicks: number,
): void {
  const o = slot * t.stride;
  const rate = p.rate;
  const cap = p.capTicks;
  const debt = gcraDebt(t, o, now, p);
  const need = cost * p.tokenTicks;
  const after = debt + need;
  const maxDelay = p.maxDelayTicks;
  if (after > cap || debt > maxDelay) {
    // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, `need > cap` -> `true`, `>=`: evaluateGcra answers a rejected request as this path does
    if (need > cap) {
      evaluateGcra(t, slot, now, cost, p, out, delayTicks);
      return;
    }
    // Rejected: the common over-the-limit path, kept as short as the admitted one.
    out.allowed = false;
    out.exceeds = false;
    // A refusal for the queue's length (leaky-bucket maxDelayMs) admits nothing now: none is left to take.
    out.remaining = gcraLeft(debt, p);
    out.delayMs = 0;
    if (foreignRefusal(t, o, now, p, need, out)) return;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, `debt > maxDelay` -> `true`, `>=`: within the bound the max is ceilDiv(after - cap), >= 1
    out.retryAfterMs = debt > maxDelay ? Math.max(ceilDiv(after - cap, rate), ceilDiv(debt - maxDelay, rate)) : ceilDiv(after - cap, rate);
    out.resetMs = ceilDiv(debt, rate);
    return;
  }
  adoptGcra(t, slot, now, p);
  const whole = store(t, o, now, after, p);
  const frac = t.f[o + 1] as number;
  out.allowed = true;
  out.exceeds = false;
  out.remaining = gcraLeft(after, p);
  out.retryAfterMs = 0;
  out.resetMs = frac > 0 ? whole + 1 : whole;
  // Stryker disable next-line EqualityOperator: equivalent, `debt > delayTicks` -> `>=`: at equality the delay is ceilDiv(0, rate), 0
  out.delayMs = debt > delayTicks ? ceilDiv(debt - delayTicks, rate) : 0;
}

/** Charges an admitted request: tat = max(now, tat) + cost * T. */
export function commitGcra(t: StateTable, slot: number, now: number, cost: number, p: CompiledPolicy): void {
  const o = slot * t.stride;
  const after = gcraDebt(t, o, now, p) + cost * p.tokenTicks;
  adoptGcra(t, slot, now, p);
  store(t, o, now, after, p);
}

/** Sets the state to a debt of `debt` ticks of `p` at `now` (refunds: the frame is live, the key stays). */
export function setGcraDebt(t: StateTable, slot: number, now: number, debt: number, p: CompiledPolicy): void {
  store(t, slot * t.stride, now, debt, p);
}

export function initGcra(t: StateTable, slot: number): void {
  const o = slot * t.stride;
  t.f[o] = Number.NEGATIVE_INFINITY;
  t.f[o + 1] = 0;
  t.f[o + 2] = 0;
  t.f[o + 3] = 0;
  initFrame(t, o);
}

/**
 * Rewrites a debt written under another limit or burst in `p`'s scale (what `gcraDebt` reads), so that
 * it leaks at `p`'s rate from now on: only as a charge under `p` is made (commitGcra, consumeGcra), never
 * on a refusal nor in a peek. A refusal that rewrote it would change the rate the key pays back at (a
 * key decided under two limits at once, as in a rolling deploy, would pay back at the smaller one's rate
 * after each refusal under it) and, where the debt fills `p`'s capacity, the clamp would forget what the
 * key owes the writer beyond it. A refusal waits in the writer's scale instead (`foreignRefusal`).
 */
function adoptGcra(t: StateTable, slot: number, now: number, p: CompiledPolicy): void {
  const o = slot * t.stride;
  if (t.f[o + 2] === p.limit && t.f[o + 3] === p.capacity) return;
  // Stryker disable next-line ConditionalExpression: equivalent, -> `false`: a shortcut; on a row owing nothing without a live frame, closeFrame starts the frame over and store writes a debt of 0, which the charge's store then overwrites
  if ((t.f[o] as number) < now && horizonAt(t, o, now) === Number.NEGATIVE_INFINITY) return;
  // The charges made under the writer's limit refund nothing from now on (refund-frame.ts).
  const [rateW] = writerScale(t.f[o + 2] as number, t.f[o + 3] as number, p.windowMs);
  closeFrame(t, o, now, gcraFullAt(t, o), rateW);
  store(t, o, now, gcraDebt(t, o, now, p), p);
}

/** The TAT, or the end of a live refund frame when later. */
export function gcraExpiresAt(t: StateTable, slot: number): number {
  const o = slot * t.stride;
  return Math.max(gcraFullAt(t, o), t.f[o + FRAME_AT + 1] as number);
}

export const gcra: AlgorithmKernel = {
  id: 'gcra',
  stride: 6,
  init: initGcra,
  evaluate(t, slot, now, cost, p, out) {
    evaluateGcra(t, slot, now, cost, p, out, Number.POSITIVE_INFINITY);
  },
  commit: commitGcra,
  consume(t, slot, now, cost, p, out) {
    consumeGcra(t, slot, now, cost, p, out, Number.POSITIVE_INFINITY);
  },
  expiresAt: gcraExpiresAt,
  position: gcraPosition,
};
