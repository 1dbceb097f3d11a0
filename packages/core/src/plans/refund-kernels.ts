/**
 * @module Refunds in memory: per algorithm, how a charge is given back to the state it went into. The
 * Lua twins live in stores/redis/plan-scripts.ts and the differential suite proves them equal.
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
 *   `min(cost, (mark - now) * rate)` (all of it right after the charge, nothing from the mark on). More
 *   would hand out refill that later charges already used: with a charge at t0, another at t1 and the
 *   first refunded at t1, the bucket must not hold more than if the first had never come.
 * Every refund gives back at most what was charged and never lifts a state above capacity; a state
 * left equal to a key never seen is dropped, as Redis deletes the key.
 */
import { gcraDebt, setGcraDebt } from '../algorithms/gcra.js';
import { alignedStart, type LogRing, type StateTable } from '../algorithms/kernel.js';
import { tbLevel, tbStore, tokenBucket as tokenBucketKernel } from '../algorithms/token-bucket.js';
import type { CompiledPolicy } from '../policy.js';
import type { PolicyAlgorithm } from '../types.js';

/** Gives back `cost` milli-units charged with `mark` to the row at `slot`; true when the state took it. */
export type RefundKernel = (t: StateTable, slot: number, now: number, cost: number, mark: number, p: CompiledPolicy) => boolean;

const fixedWindow: RefundKernel = (t, slot, now, cost, mark, p) => {
  const o = slot * t.stride;
  const start = t.f[o] as number;
  const w = p.windowMs;
  const ws = p.anchorFirst ? (now >= start + w ? now : start) : Math.max(alignedStart(now, w), start);
  const used = t.f[o + 1] as number;
  if (ws !== start || start + w !== mark || !(used > 0)) return false;
  const left = used - Math.min(cost, used);
  if (left === 0) {
    t.f[o] = Number.NEGATIVE_INFINITY;
    t.f[o + 1] = 0;
  } else {
    t.f[o + 1] = left;
  }
  return true;
};

const slidingWindow: RefundKernel = (t, slot, now, cost, mark, p) => {
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

const tokenBucket: RefundKernel = (t, slot, now, cost, mark, p) => {
  if (!(now < mark)) return false;
  const o = slot * t.stride;
  const cap = p.capTicks;
  const last = t.f[o + 1] as number;
  const tokens = tbLevel(t, o, now, p);
  if (tokens >= cap) return false;
  const next = tokens + Math.min(cost * p.tokenTicks, cap - tokens, (mark - now) * p.rate);
  if (next >= cap) tokenBucketKernel.init(t, slot);
  else tbStore(t, o, next, Math.max(now, last), p);
  return true;
};

const gcra: RefundKernel = (t, slot, now, cost, mark, p) => {
  if (!(now < mark)) return false;
  const debt = gcraDebt(t, slot * t.stride, now, p);
  if (debt === 0) return false;
  setGcraDebt(t, slot, now, debt - Math.min(debt, cost * p.tokenTicks, (mark - now) * p.rate), p);
  return true;
};

/** The i-th entry (from the head) of a ring: its offset in `buf`. */
function at(r: LogRing, i: number): number {
  return ((r.head + i) & (r.buf.length / 2 - 1)) * 2;
}

const slidingLog: RefundKernel = (t, slot, now, cost, mark, p) => {
  const r = t.logs[slot];
  if (r === undefined) return false;
  const w = p.windowMs;
  const time = mark - w;
  if (!(time > Math.max(now, r.highWater) - w)) return false;
  let idx = -1;
  for (let i = r.size - 1; i >= 0; i--) {
    const entry = r.buf[at(r, i)] as number;
    if (entry === time) idx = i;
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
  for (let i = idx; i < r.size - 1; i++) {
    const a = at(r, i);
    const b = at(r, i + 1);
    r.buf[a] = r.buf[b] as number;
    r.buf[a + 1] = r.buf[b + 1] as number;
  }
  r.size -= 1;
  if (r.size === 0) {
    // Nothing left: the high-water mark stays (the Lua log keeps it in its base member).
    r.sum = 0;
    t.f[slot * t.stride] = r.highWater + w;
  } else if (idx === r.size) {
    // The newest entry went: the high-water mark falls back to the newest one left, as the Lua log reads it.
    r.highWater = r.buf[at(r, r.size - 1)] as number;
    t.f[slot * t.stride] = r.highWater + w;
  }
  return true;
};

/** A lease is given back by release (algorithms/concurrency.ts), never refunded: receipts mark it NaN. */
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
