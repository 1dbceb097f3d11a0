/**
 * @module The concurrency kernel: the leases of one key, as lease id -> deadline (integer ms). A
 * request is admitted while fewer than `limit` leases are live; a lease ends when it is released or
 * when its deadline passes (a holder that never released it, e.g. a crashed handler, frees the slot
 * after the lease time). No clock reads, no I/O: the caller passes `now`, as for the rate kernels.
 * The Redis twin is stores/redis/lease-script.ts (a sorted set scored by deadline), proven equal by
 * test/integration/redis/leases.test.ts.
 */

/** The live leases of one key: id -> deadline. Iteration order is insertion order. */
export type LeaseTable = Map<number, number>;

/** Drops the leases whose deadline is at or before `now`; returns how many were dropped. */
export function expireLeases(leases: LeaseTable, now: number): number {
  let dropped = 0;
  for (const [id, deadline] of leases) {
    if (deadline <= now) {
      leases.delete(id);
      dropped += 1;
    }
  }
  return dropped;
}

/** Takes a lease `id` until `now + leaseMs` if fewer than `limit` are live (after expiry). */
export function acquireLease(leases: LeaseTable, now: number, limit: number, leaseMs: number, id: number): boolean {
  expireLeases(leases, now);
  if (leases.size >= limit) return false;
  leases.set(id, now + leaseMs);
  return true;
}

/** Ends lease `id`; false when it had already ended (released before, or expired). */
export function releaseLease(leases: LeaseTable, id: number): boolean {
  return leases.delete(id);
}

/** Drops expired leases, then moves the deadline of lease `id` to `now + leaseMs`; false when it has ended. */
export function renewLease(leases: LeaseTable, id: number, now: number, leaseMs: number): boolean {
  expireLeases(leases, now);
  if (!leases.has(id)) return false;
  leases.set(id, now + leaseMs);
  return true;
}

/** The earliest and latest deadlines of the live leases (`now` when there are none). */
export function deadlineRange(leases: LeaseTable, now: number): [earliest: number, latest: number] {
  let earliest = Number.POSITIVE_INFINITY;
  let latest = now;
  for (const deadline of leases.values()) {
    if (deadline < earliest) earliest = deadline;
    if (deadline > latest) latest = deadline;
  }
  return [Number.isFinite(earliest) ? earliest : now, latest];
}
