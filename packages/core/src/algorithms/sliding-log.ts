/**
 * @module Sliding log: the exact rolling window. A request of cost c at `now` is admitted iff the
 * costs admitted in `(now - windowMs, now]` plus c stay within `limit`. Only admitted requests are
 * recorded (logging rejected ones would lock a steadily sending client out for ever).
 *
 * Pro: exact; no boundary burst, no approximation; the right choice for small limits where every
 * leak costs (login, OTP, SMS).
 * Con: memory grows with the admitted requests in the window (one entry per distinct millisecond);
 * wrong for large quotas.
 *
 * State: a ring of (time, cost) entries per key, amortised O(1) expiry from the head (no shift()).
 * The numeric row holds the time at which the newest entry leaves the window.
 *
 * Memory bound: a key holds at most `MAX_LOG_ENTRIES` entries (16 bytes each, so 16 KiB), whatever its
 * limit and costs; a store holds at most `maxKeys` keys, so a MemoryStore's sliding logs take at most
 * `maxKeys * 16 KiB`. When a key's log is full, its two oldest entries merge into the later one's time:
 * the older cost then leaves the window a little later than exact (by the gap between them), never
 * earlier, so the log can only grow stricter, never admit more than `limit`.
 */
import type { AlgorithmKernel, LogRing, StateTable } from './kernel.js';
import { evaluateThenCommit, writeExceeds } from './kernel.js';

const MIN_ENTRIES = 4;
/** Most entries one key's log keeps (a power of two); see the memory bound above. */
export const MAX_LOG_ENTRIES = 1024;

function createRing(): LogRing {
  return { buf: new Float64Array(MIN_ENTRIES * 2), head: 0, size: 0, sum: 0, highWater: Number.NEGATIVE_INFINITY };
}

/** Reallocates the ring to `entries` capacity (a power of two), unwrapping it. */
function resize(r: LogRing, entries: number): void {
  const next = new Float64Array(entries * 2);
  const mask = r.buf.length / 2 - 1;
  // Stryker disable next-line EqualityOperator: equivalent, `<` -> `<=`: it also copies the slot after the last entry, which no read reaches and a push overwrites
  for (let i = 0; i < r.size; i++) {
    const j = ((r.head + i) & mask) * 2;
    next[i * 2] = r.buf[j] as number;
    next[i * 2 + 1] = r.buf[j + 1] as number;
  }
  r.buf = next;
  r.head = 0;
}

/** Drops entries that left the window `(now - w, now]`; each entry is dropped once, so O(1) amortised. */
function expire(r: LogRing, now: number, w: number): void {
  const mask = r.buf.length / 2 - 1;
  while (r.size > 0) {
    const j = r.head * 2;
    if ((r.buf[j] as number) > now - w) break;
    r.sum -= r.buf[j + 1] as number;
    r.head = (r.head + 1) & mask;
    r.size -= 1;
  }
  // Stryker disable next-line ConditionalExpression: equivalent, -> `false`: costs are whole milli-units, so the subtractions leave the sum at exactly 0 anyway
  if (r.size === 0) r.sum = 0;
  const capacity = r.buf.length / 2;
  if (capacity > MIN_ENTRIES && r.size * 4 < capacity) resize(r, capacity / 2);
}

function push(r: LogRing, time: number, cost: number): void {
  let capacity = r.buf.length / 2;
  if (r.size > 0) {
    // Requests in the same millisecond share one entry: same meaning, less memory.
    const last = ((r.head + r.size - 1) & (capacity - 1)) * 2;
    if (r.buf[last] === time) {
      r.buf[last + 1] = (r.buf[last + 1] as number) + cost;
      r.sum += cost;
      return;
    }
  }
  if (r.size === capacity && capacity >= MAX_LOG_ENTRIES) {
    // Full: fold the oldest entry's cost into the next one (a later time: stricter, never looser).
    const oldest = r.head * 2;
    const next = ((r.head + 1) & (capacity - 1)) * 2;
    r.buf[next + 1] = (r.buf[next + 1] as number) + (r.buf[oldest + 1] as number);
    r.head = (r.head + 1) & (capacity - 1);
    r.size -= 1;
  } else if (r.size === capacity) {
    resize(r, capacity * 2);
    capacity *= 2;
  }
  const j = ((r.head + r.size) & (capacity - 1)) * 2;
  r.buf[j] = time;
  r.buf[j + 1] = cost;
  r.size += 1;
  r.sum += cost;
}

function newestExpiry(r: LogRing, w: number): number {
  // Stryker disable next-line ConditionalExpression: equivalent, -> `false`: never called with an empty ring (commit calls it after a push, evaluate with live entries)
  if (r.size === 0) return Number.NEGATIVE_INFINITY;
  const mask = r.buf.length / 2 - 1;
  return (r.buf[((r.head + r.size - 1) & mask) * 2] as number) + w;
}

/** The log of a slot, expired up to the effective now (for commit); undefined for a key with no entries. */
function current(t: StateTable, slot: number, now: number, w: number): LogRing | undefined {
  const r = t.logs[slot];
  if (r === undefined) return undefined;
  expire(r, Math.max(now, r.highWater), w);
  return r;
}

export const slidingLog: AlgorithmKernel = {
  id: 'sliding-log',
  stride: 1,
  init(t, slot) {
    t.f[slot * t.stride] = Number.NEGATIVE_INFINITY;
    t.logs[slot] = undefined;
  },
  evaluate(t, slot, now, cost, p, out) {
    const w = p.windowMs;
    const cap = p.capMilli;
    // Read-only: entries that left the window are skipped here and dropped by commit. Dropping them
    // here would let a rejected request move the window of a key whose clock then steps back.
    const r = t.logs[slot];
    let first = 0;
    let sum = 0;
    let mask = 0;
    if (r !== undefined) {
      const edge = Math.max(now, r.highWater) - w;
      mask = r.buf.length / 2 - 1;
      sum = r.sum;
      while (first < r.size) {
        const j = ((r.head + first) & mask) * 2;
        if ((r.buf[j] as number) > edge) break;
        sum -= r.buf[j + 1] as number;
        first += 1;
      }
    }
    const live = r === undefined ? 0 : r.size - first;
    // Stryker disable next-line ConditionalExpression: equivalent, `r === undefined` -> `false`: without a ring `live` is 0, which the other side tests
    const resetUncharged = r === undefined || live === 0 ? 0 : newestExpiry(r, w) - now;
    if (cost > cap) {
      // sum > cap after the limit was lowered (state kept across a change of limit): nothing is left.
      writeExceeds(out, Math.max(0, cap - sum), resetUncharged);
      return;
    }
    out.exceeds = false;
    out.delayMs = 0;
    if (sum + cost <= cap) {
      out.allowed = true;
      out.remaining = cap - sum - cost;
      out.retryAfterMs = 0;
      // The window never moves back: the new entry is recorded at the high-water mark.
      // Stryker disable next-line EqualityOperator: equivalent, `>` -> `>=`: the same value at equality
      const at = r !== undefined && r.highWater > now ? r.highWater : now;
      out.resetMs = at + w - now;
      return;
    }
    // Walk from the oldest entry in the window until enough cost has left it for this request to fit.
    const ring = r as LogRing;
    const excess = sum + cost - cap;
    let freed = 0;
    let wait = 0;
    // Stryker disable next-line EqualityOperator: equivalent, `<` -> `<=`: the live entries hold sum >= excess, so the walk breaks before it ends
    for (let i = first; i < ring.size; i++) {
      const j = ((ring.head + i) & mask) * 2;
      freed += ring.buf[j + 1] as number;
      if (freed >= excess) {
        wait = (ring.buf[j] as number) + w - now;
        break;
      }
    }
    out.allowed = false;
    out.remaining = Math.max(0, cap - sum);
    out.retryAfterMs = wait;
    out.resetMs = resetUncharged;
  },
  commit(t, slot, now, cost, p) {
    const w = p.windowMs;
    let r = current(t, slot, now, w);
    if (r === undefined) {
      r = createRing();
      t.logs[slot] = r;
    }
    // Stryker disable next-line EqualityOperator: equivalent, `>` -> `>=`: the same value at equality
    if (now > r.highWater) r.highWater = now;
    push(r, r.highWater, cost);
    t.f[slot * t.stride] = newestExpiry(r, w);
  },
  consume: evaluateThenCommit,
  expiresAt(t, slot) {
    return t.f[slot * t.stride] as number;
  },
};
