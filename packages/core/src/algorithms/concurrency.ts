/**
 * @module The concurrency kernel: at most `limit` requests of a key in flight, each holding a lease
 * until it is released (`releaseLease`) or its deadline (`now + leaseMs`, moved on by `renewLease`)
 * passes, so a holder that never releases (a crashed process, a lost release) frees its slot after the
 * lease time; a renewal that comes after the deadline (a stalled process) takes the slot again when it
 * is still free (`renewLease`). A request takes one lease whatever its cost. Like every kernel it reads
 * no clock and does no I/O, and it decides inside a plan's all-or-nothing group: `evaluate` decides,
 * `commit` takes the lease only when every policy of the group admitted, so a request refused by a rate
 * policy holds no lease and one refused for concurrency charges no rate policy.
 *
 * State of a row: `logs[slot]` holds the live leases as (deadline, lease id) pairs from index 0, in no
 * order (a LogRing whose head stays 0; concurrency limits are small, so a scan is the right index);
 * `f[slot * stride]` is the latest deadline, when the key becomes equivalent to one never seen. The id
 * of the lease a commit takes is `t.lease`, set by the store for the call (MemoryStore.apply).
 * The Lua twin is stores/redis/kernels/concurrency.ts (a sorted set scored by deadline); the differential
 * suite (test/integration/redis/leases.test.ts) proves them equal.
 */
import { MILLI } from '../internal/fixed-point.js';
import type { CompiledPolicy } from './kernel.js';
import { type AlgorithmKernel, evaluateThenCommit, type LogRing, type StateTable, writeExceeds } from './kernel.js';

/** Retry-After of a refused request: no one can know when a request in flight ends; the earliest expiry bounds it, at most 1 s. */
export const MAX_LEASE_RETRY_MS = 1000;

/** The live leases of a row after dropping those whose deadline is at or before `now`; undefined when none. */
function live(t: StateTable, slot: number, now: number): LogRing | undefined {
  const r = t.logs[slot];
  if (r === undefined) return undefined;
  let i = 0;
  while (i < r.size) {
    if ((r.buf[2 * i] as number) <= now) removeAt(r, i);
    else i += 1;
  }
  if (r.size === 0) {
    t.logs[slot] = undefined;
    return undefined;
  }
  return r;
}

/** Moves the last pair into place `i` (order does not matter). */
function removeAt(r: LogRing, i: number): void {
  const last = r.size - 1;
  r.buf[2 * i] = r.buf[2 * last] as number;
  r.buf[2 * i + 1] = r.buf[2 * last + 1] as number;
  r.size = last;
}

function indexOf(r: LogRing, id: number): number {
  for (let i = 0; i < r.size; i++) if (r.buf[2 * i + 1] === id) return i;
  return -1;
}

/** [earliest, latest] deadline of a non-empty table. */
function range(r: LogRing): [number, number] {
  let earliest = Number.POSITIVE_INFINITY;
  let latest = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < r.size; i++) {
    const d = r.buf[2 * i] as number;
    // Stryker disable next-line EqualityOperator: equivalent, `<` -> `<=`: the same value at equality
    if (d < earliest) earliest = d;
    // Stryker disable next-line EqualityOperator: equivalent, `>` -> `>=`: the same value at equality
    if (d > latest) latest = d;
  }
  return [earliest, latest];
}

function writeLatest(t: StateTable, slot: number, r: LogRing | undefined): void {
  t.f[slot * t.stride] = r === undefined ? Number.NEGATIVE_INFINITY : range(r)[1];
}

/** Adds lease `id` with `deadline` to the row (`r`: its live leases, undefined when none). */
function append(t: StateTable, slot: number, r: LogRing | undefined, deadline: number, id: number): void {
  let ring = r;
  if (ring === undefined) {
    ring = { buf: new Float64Array(8), head: 0, size: 0, sum: 0, highWater: Number.NEGATIVE_INFINITY };
    t.logs[slot] = ring;
  }
  // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, -> `true`, `>=`, `<=`: the buffer grows whenever there is room (or always), never too late; only memory differs
  if (2 * (ring.size + 1) > ring.buf.length) {
    const buf = new Float64Array(ring.buf.length * 2);
    buf.set(ring.buf);
    ring.buf = buf;
  }
  ring.buf[2 * ring.size] = deadline;
  ring.buf[2 * ring.size + 1] = id;
  ring.size += 1;
  writeLatest(t, slot, ring);
}

export const concurrency: AlgorithmKernel = {
  id: 'concurrency',
  stride: 1,
  init(t, slot) {
    t.f[slot * t.stride] = Number.NEGATIVE_INFINITY;
    t.logs[slot] = undefined;
  },
  evaluate(t, slot, now, cost, p, out) {
    const r = live(t, slot, now);
    const n = r === undefined ? 0 : r.size;
    const [earliest, latest] = r === undefined ? [now, now] : range(r);
    if (!Number.isFinite(cost)) {
      // The state as it stands (create-limiter's report of a policy that admitted but was not charged).
      writeExceeds(out, Math.max(0, p.limit - n) * MILLI, latest - now);
      return;
    }
    out.exceeds = false;
    out.delayMs = 0;
    if (n < p.limit) {
      out.allowed = true;
      out.remaining = (p.limit - n - 1) * MILLI;
      out.retryAfterMs = 0;
      out.resetMs = Math.max(latest, now + p.windowMs) - now;
      return;
    }
    out.allowed = false;
    // Stryker disable next-line ArithmeticOperator: equivalent, `* MILLI` -> `/`: a refused request finds at least `limit` leases, so the max is 0
    out.remaining = Math.max(0, p.limit - n) * MILLI;
    out.retryAfterMs = Math.min(MAX_LEASE_RETRY_MS, Math.max(1, earliest - now));
    out.resetMs = latest - now;
  },
  commit(t, slot, now, _cost, p) {
    append(t, slot, live(t, slot, now), now + p.windowMs, t.lease ?? 0);
  },
  consume: evaluateThenCommit,
  expiresAt(t, slot) {
    return t.f[slot * t.stride] as number;
  },
};

/** Ends lease `id` of the row; false when it had already ended (released before, or expired). */
export function releaseLease(t: StateTable, slot: number, id: number, now: number): boolean {
  const r = live(t, slot, now);
  // Stryker disable next-line UnaryOperator: equivalent, `-1` -> `+1`: with no live lease the index is never read (the next line refuses first)
  const i = r === undefined ? -1 : indexOf(r, id);
  // Stryker disable next-line ConditionalExpression: equivalent, `r === undefined` -> `false`: with no ring the index is -1, and `i < 0` refuses it anyway
  if (r === undefined || i < 0) return false;
  removeAt(r, i);
  // Stryker disable next-line ConditionalExpression: equivalent, -> `false`: an empty ring left in place reads as none (writeLatest gives -Infinity, live drops it)
  if (r.size === 0) t.logs[slot] = undefined;
  writeLatest(t, slot, t.logs[slot]);
  return true;
}

/**
 * Moves the deadline of live lease `id` to `now + leaseMs`. A lease no longer live (a late renewal: the
 * process stalled past its deadline) takes its slot again when it fits, fewer than `limit` live leases on
 * the row, so a request that still runs keeps its slot unless another has taken it; it never runs over
 * the limit. False when it does not fit: the lease has ended.
 */
export function renewLease(t: StateTable, slot: number, id: number, now: number, p: CompiledPolicy): boolean {
  const r = live(t, slot, now);
  // Stryker disable next-line UnaryOperator: equivalent, `-1` -> `+1`: with no live lease the index is never read (the next line refuses first)
  const i = r === undefined ? -1 : indexOf(r, id);
  // Stryker disable next-line ConditionalExpression: equivalent, `r !== undefined` -> `true`: with no ring the index is -1
  if (r !== undefined && i >= 0) {
    r.buf[2 * i] = now + p.windowMs;
    writeLatest(t, slot, r);
    return true;
  }
  if ((r === undefined ? 0 : r.size) >= p.limit) {
    writeLatest(t, slot, r);
    return false;
  }
  append(t, slot, r, now + p.windowMs, id);
  return true;
}
