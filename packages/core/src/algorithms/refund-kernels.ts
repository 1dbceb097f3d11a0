/**
 * @module Refunds in memory: per algorithm, how a charge is given back to the state it went into. The
 * Lua twins live in stores/redis/scripts/peek-refund-scripts.ts and the differential suite proves them equal.
 *
 * A charge is named by its mark, `now + resetMs` of the charging decision, which every algorithm can read
 * back from its own state without storing anything more:
 * - fixed-window: the end of the window charged. The refund applies while that window is current.
 * - sliding-window: the end of the charged counter's life (`start + 2 * windowMs`); the refund applies
 *   while that counter is still the current one, never to `prev` once the window rolled over.
 * - sliding-log: the entry's time plus `windowMs`; the refund removes the cost from that entry while it
 *   is in the window (and the entry itself once it holds nothing).
 * - token-bucket, gcra, leaky-bucket: the time the bucket would be full again after the charge had
 *   nothing else come; the refund gives back the part of the charge that has not leaked away by now,
 *   less everything given back on the key since the charge (the refund frame, algorithms/refund-frame.ts,
 *   with the charge's position): `min(cost, (mark - now) * rate - (refunded - position))` (all of it right
 *   after the charge, nothing from the mark on). More would hand out refill that later charges already
 *   used, or that an earlier refund already returned: with a charge at t0, another at t1 and the first
 *   refunded at t1, the bucket must not hold more than if the first had never come. A receipt refunds
 *   only under the limit and burst the state is in (a change of them ends what older charges may give back).
 * Every refund gives back at most what was charged and never lifts a state above capacity; a window state
 * left equal to a key never seen is dropped, as Redis deletes the key (a refunded bucket keeps its refund
 * frame until the frame's horizon, and its Redis key lives as long).
 */
import type { PolicyAlgorithm } from '../types.js';
import { gcraDebt, gcraFullAt, setGcraDebt } from './gcra.js';
import type { CompiledPolicy } from './kernel.js';
import { alignedStart, type LogRing, type StateTable } from './kernel.js';
import { MAX_REFUNDED, recordRefund, refundedAt } from './refund-frame.js';
import { tbFullAt, tbLevel, tbStore } from './token-bucket.js';

/**
 * Gives back `cost` milli-units charged with `mark` (and `position`, the bucket family's: refund-frame.ts)
 * to the row at `slot`; true when the state took it.
 */
export type RefundKernel = (
  t: StateTable,
  slot: number,
  now: number,
  cost: number,
  mark: number,
  position: number,
  p: CompiledPolicy,
) => boolean;

const fixedWindow: RefundKernel = (t, slot, now, cost, mark, _position, p) => {
  const o = slot * t.stride;
  const start = t.f[o] as number;
  const w = p.windowMs;
  const ws = p.anchorFirst ? (now >= start + w ? now : start) : Math.max(alignedStart(now, w), start);
  const used = t.f[o + 1] as number;
  if (
    ws !== start ||
    start + w !== mark ||
    // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, `used > 0` -> `true`, `>=`: a window with a finite start holds more than 0 (emptied, its start is -Infinity)
    !(used > 0)
  )
    return false;
  const left = used - Math.min(cost, used);
  if (left === 0) {
    t.f[o] = Number.NEGATIVE_INFINITY;
    // Stryker disable next-line ArithmeticOperator: equivalent, `o + 1` -> `o - 1`: the start was just set to -Infinity, so the next read opens a window and never reads used
    t.f[o + 1] = 0;
  } else {
    t.f[o + 1] = left;
  }
  return true;
};

const slidingWindow: RefundKernel = (t, slot, now, cost, mark, _position, p) => {
  const o = slot * t.stride;
  const w = p.windowMs;
  const start = t.f[o] as number;
  // Rolled over since the charge: the charge now sits in `prev`, and stays there.
  if (alignedStart(now, w) > start || start + 2 * w !== mark) return false;
  const curr = t.f[o + 1] as number;
  if (!(curr > 0)) return false;
  const left = curr - Math.min(cost, curr);
  t.f[o + 1] = left;
  if (left === 0 && (t.f[o + 2] as number) === 0) t.f[o] = Number.NEGATIVE_INFINITY;
  return true;
};

/**
 * What a bucket refund may give back at most (refund-frame.ts): the part of the charge not leaked by now,
 * less what the key gave back since the charge; 0 for a charge of an ended frame, or of another limit.
 * `position` is the receipt's, less what it gave back before.
 */
function allowance(t: StateTable, o: number, now: number, mark: number, position: number, p: CompiledPolicy): number {
  if (
    // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, `now < mark` -> `true`, `<=`: past the mark the allowance is at most 0 (the next guard), which settle refuses
    !(now < mark) ||
    t.f[o + 2] !== p.limit ||
    t.f[o + 3] !== p.capacity
  )
    return 0;
  const refunded = refundedAt(t, o, now);
  if (!(refunded >= position)) return 0;
  return (mark - now) * p.rate + position - refunded;
}

/** Takes `take` ticks off a bucket whose debt was `debt`: counted unless the charge was the newest. */
function settle(t: StateTable, o: number, now: number, take: number, debt: number, room: number, fullAt: number, mark: number): boolean {
  if (!(take > 0) || refundedAt(t, o, now) + take > MAX_REFUNDED) return false;
  recordRefund(t, o, now, take, debt > room, fullAt, mark);
  return true;
}

const tokenBucket: RefundKernel = (t, slot, now, cost, mark, position, p) => {
  const o = slot * t.stride;
  const tokens = tbLevel(t, o, now, p);
  const debt = p.capTicks - tokens;
  const room = allowance(t, o, now, mark, position, p);
  const take = Math.min(cost * p.tokenTicks, debt, room);
  if (!settle(t, o, now, take, debt, room, tbFullAt(t, o, p), mark)) return false;
  tbStore(t, o, now, tokens + take, Math.max(now, t.f[o + 1] as number), p);
  return true;
};

const gcra: RefundKernel = (t, slot, now, cost, mark, position, p) => {
  const o = slot * t.stride;
  const debt = gcraDebt(t, o, now, p);
  const room = allowance(t, o, now, mark, position, p);
  const take = Math.min(debt, cost * p.tokenTicks, room);
  if (!settle(t, o, now, take, debt, room, gcraFullAt(t, o), mark)) return false;
  setGcraDebt(t, slot, now, debt - take, p);
  return true;
};

/** The i-th entry (from the head) of a ring: its offset in `buf`. */
function at(r: LogRing, i: number): number {
  return ((r.head + i) & (r.buf.length / 2 - 1)) * 2;
}

const slidingLog: RefundKernel = (t, slot, now, cost, mark, _position, p) => {
  const r = t.logs[slot];
  // Stryker disable next-line ConditionalExpression,BooleanLiteral: equivalent, -> `false`, `return true`: a sliding-log row always has its ring (an emptied one stays)
  if (r === undefined) return false;
  const w = p.windowMs;
  const time = mark - w;
  if (!(time > Math.max(now, r.highWater) - w)) return false;
  let idx = -1;
  for (let i = r.size - 1; i >= 0; i--) {
    const entry = r.buf[at(r, i)] as number;
    if (entry === time) idx = i;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, -> `false`, `<`: the break only ends the scan early; entries strictly increase, so no older one matches
    if (entry <= time) break;
  }
  if (idx < 0) return false;
  const j = at(r, idx);
  const entryCost = r.buf[j + 1] as number;
  const amount = Math.min(cost, entryCost);
  r.sum -= amount;
  if (amount < entryCost) {
    r.buf[j + 1] = entryCost - amount;
    return true;
  }
  // The entry holds nothing more: remove it, moving the newer ones back by one.
  // Stryker disable next-line EqualityOperator: equivalent, `<` -> `<=`: the extra step copies the slot after the last live entry, which `r.size -= 1` drops
  for (let i = idx; i < r.size - 1; i++) {
    const a = at(r, i);
    const b = at(r, i + 1);
    r.buf[a] = r.buf[b] as number;
    r.buf[a + 1] = r.buf[b + 1] as number;
  }
  r.size -= 1;
  // Stryker disable next-line BlockStatement: equivalent, emptied: the entry removed was the only one, the newest: the sum is 0 and the expiry highWater + w already
  if (r.size === 0) {
    // Nothing left: the high-water mark stays (the Lua log keeps it in its base member).
    r.sum = 0;
    // Stryker disable next-line ArithmeticOperator: equivalent, `slot * t.stride` -> `/`: the entry removed was the only one, so the expiry word is highWater + w already
    t.f[slot * t.stride] = r.highWater + w;
  } else if (
    // Stryker disable next-line ConditionalExpression: equivalent, -> `true`: when an older entry goes, the newest left is at the high-water mark, so it writes what is there
    idx === r.size
  ) {
    // The newest entry went: the high-water mark falls back to the newest one left, as the Lua log reads it.
    r.highWater = r.buf[at(r, r.size - 1)] as number;
    t.f[slot * t.stride] = r.highWater + w;
  }
  return true;
};

/** A lease is given back by release (algorithms/concurrency.ts), never refunded: receipts mark it NaN. */
// Stryker disable next-line ArrowFunction,BooleanLiteral: equivalent, -> `undefined`, `true`: a receipt marks a lease NaN, so the store never calls it
const concurrency: RefundKernel = () => false;

export const REFUND_KERNELS: Readonly<Record<PolicyAlgorithm, RefundKernel>> = Object.freeze({
  concurrency,
  'fixed-window': fixedWindow,
  'sliding-window': slidingWindow,
  'sliding-log': slidingLog,
  'token-bucket': tokenBucket,
  gcra,
  'leaky-bucket': gcra,
});
