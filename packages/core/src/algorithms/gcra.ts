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
 * State: [tat ms, tat fraction in ticks, 0 <= fraction < rate]. A key never seen: tat = -Infinity.
 * The debt `max(0, tat - now)` in ticks plays the part of (capacity - tokens) of a token bucket.
 */

import { ceilDiv, floorDiv, ticksToMilli } from '../internal/fixed-point.js';
import type { CompiledPolicy } from '../policy.js';
import type { AlgorithmKernel, Outcome, StateTable } from './kernel.js';
import { writeExceeds } from './kernel.js';

/** `max(0, tat - now)` in ticks. */
export function gcraDebt(t: StateTable, o: number, now: number, rate: number): number {
  const tatMs = t.f[o] as number;
  if (tatMs < now) return 0;
  return (tatMs - now) * rate + (t.f[o + 1] as number);
}

/** `ceil(max(0, tat - now))` in ms, without a division: the TAT is kept as whole ms plus a fraction. */
function gcraReset(t: StateTable, o: number, now: number): number {
  const tatMs = t.f[o] as number;
  if (tatMs < now) return 0;
  return (t.f[o + 1] as number) > 0 ? tatMs - now + 1 : tatMs - now;
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
  const debt = gcraDebt(t, o, now, rate);
  const need = cost * tpm;
  if (need > cap) {
    writeExceeds(out, debt >= cap ? 0 : ticksToMilli(cap - debt, tpm), gcraReset(t, o, now));
    return;
  }
  out.exceeds = false;
  const after = debt + need;
  // leaky-bucket maxDelayMs: a request that would wait longer is rejected, not queued.
  const maxDelay = p.maxDelayTicks;
  if (after <= cap && debt <= maxDelay) {
    out.allowed = true;
    out.remaining = ticksToMilli(cap - after, tpm);
    out.retryAfterMs = 0;
    out.resetMs = ceilDiv(after, rate);
    out.delayMs = debt > delayTicks ? ceilDiv(debt - delayTicks, rate) : 0;
  } else {
    out.allowed = false;
    out.remaining = debt >= cap ? 0 : ticksToMilli(cap - debt, tpm);
    out.retryAfterMs = debt > maxDelay ? Math.max(ceilDiv(after - cap, rate), ceilDiv(debt - maxDelay, rate)) : ceilDiv(after - cap, rate);
    out.resetMs = gcraReset(t, o, now);
    out.delayMs = 0;
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
  const debt = gcraDebt(t, o, now, rate);
  const need = cost * p.tokenTicks;
  const after = debt + need;
  const maxDelay = p.maxDelayTicks;
  if (after > cap || debt > maxDelay) {
    if (need > cap) {
      evaluateGcra(t, slot, now, cost, p, out, delayTicks);
      return;
    }
    // Rejected: the common over-the-limit path, kept as short as the admitted one.
    out.allowed = false;
    out.exceeds = false;
    out.remaining = debt >= cap ? 0 : ticksToMilli(cap - debt, p.tokenTicks);
    out.retryAfterMs = debt > maxDelay ? Math.max(ceilDiv(after - cap, rate), ceilDiv(debt - maxDelay, rate)) : ceilDiv(after - cap, rate);
    out.resetMs = gcraReset(t, o, now);
    out.delayMs = 0;
    return;
  }
  const whole = floorDiv(after, rate);
  const frac = after - whole * rate;
  t.f[o] = now + whole;
  t.f[o + 1] = frac;
  out.allowed = true;
  out.exceeds = false;
  out.remaining = ticksToMilli(cap - after, p.tokenTicks);
  out.retryAfterMs = 0;
  out.resetMs = frac > 0 ? whole + 1 : whole;
  out.delayMs = debt > delayTicks ? ceilDiv(debt - delayTicks, rate) : 0;
}

/** Charges an admitted request: tat = max(now, tat) + cost * T. */
export function commitGcra(t: StateTable, slot: number, now: number, cost: number, p: CompiledPolicy): void {
  const o = slot * t.stride;
  const rate = p.rate;
  const after = gcraDebt(t, o, now, rate) + cost * p.tokenTicks;
  const whole = floorDiv(after, rate);
  t.f[o] = now + whole;
  t.f[o + 1] = after - whole * rate;
}

export function initGcra(t: StateTable, slot: number): void {
  t.f[slot * t.stride] = Number.NEGATIVE_INFINITY;
  t.f[slot * t.stride + 1] = 0;
}

export function gcraExpiresAt(t: StateTable, slot: number): number {
  const o = slot * t.stride;
  return (t.f[o] as number) + ((t.f[o + 1] as number) > 0 ? 1 : 0);
}

export const gcra: AlgorithmKernel = {
  id: 'gcra',
  stride: 2,
  init: initGcra,
  evaluate(t, slot, now, cost, p, out) {
    evaluateGcra(t, slot, now, cost, p, out, Number.POSITIVE_INFINITY);
  },
  commit: commitGcra,
  consume(t, slot, now, cost, p, out) {
    consumeGcra(t, slot, now, cost, p, out, Number.POSITIVE_INFINITY);
  },
  expiresAt: gcraExpiresAt,
};
