/**
 * @module The contract every algorithm implements. Algorithms are pure and synchronous: they read the
 * state a store hands them, the request's `now` (integer ms) and cost (milli-units), and never read a
 * clock or do I/O. State lives in a `StateTable` row so a store can keep millions of keys in typed
 * arrays instead of one object per key.
 */
import { ceilDiv, floorDiv, gcd } from '../internal/fixed-point.js';
import type { PolicyAlgorithm, QuotaUnit } from '../types.js';

/** A policy ready for the algorithms: validated options plus fixed-point parameters. */
export interface CompiledPolicy {
  readonly name: string;
  readonly algorithm: PolicyAlgorithm;
  readonly kernel: AlgorithmKernel;
  /** A shadow (candidate) policy: evaluated on its own state, never blocks. */
  readonly shadow: boolean;
  readonly limit: number;
  readonly windowMs: number;
  /** Bucket capacity (`burst`) for bucket algorithms, `limit` for window algorithms. */
  readonly capacity: number;
  readonly unit: QuotaUnit;
  readonly anchorFirst: boolean;
  readonly delayAfter: number;
  /** Capacity in milli-units: the largest cost that can ever fit. */
  readonly capMilli: number;
  /** Bucket family: ticks gained per ms (`1000 * limit / g`, g = gcd(windowMs, 1000 * limit)). */
  readonly rate: number;
  /** Bucket family: ticks per milli-unit of cost (`windowMs / g`); one request costs 1000 of these. */
  readonly tokenTicks: number;
  /** Bucket family: capacity in ticks (`burst * 1000 * tokenTicks`). */
  readonly capTicks: number;
  /** leaky-bucket: `delayAfter` in ticks. */
  readonly delayTicks: number;
  /** leaky-bucket: the most debt (ticks) a request may find and still be admitted: `delayTicks + maxDelayMs * rate`; Infinity without `maxDelayMs`. */
  readonly maxDelayTicks: number;
  /**
   * Storage identity: two policies share state exactly when their ids are equal. Carries the limiter's
   * `name` (when it has one), the role, the name and every parameter that changes the meaning of the state.
   */
  readonly id: string;
  /**
   * The `name` of the limiter the policy belongs to (`createLimiter({ name })`), part of its key names and
   * `id`; undefined for a limiter without a name (whose key names are those of earlier versions).
   */
  readonly limiter?: string;
  /** Concurrency policies with a `queue`: at most `size` waiters per key, each up to `timeoutMs`. */
  readonly queue: { readonly size: number; readonly timeoutMs: number } | undefined;
  /** Concurrency policies: the longest a request holds its lease, renewals included (leases/lease-keeper.ts). */
  readonly maxLeaseMs?: number;
}

/** A growable ring of (time, cost) entries: the state of one sliding-log key. */
export interface LogRing {
  /** Interleaved [time, cost, time, cost, ...]; capacity is a power of two entries. */
  buf: Float64Array;
  head: number;
  size: number;
  /** Sum of the costs in the ring, milli-units. */
  sum: number;
  /** The latest `now` this key has seen; the window never moves back behind it. */
  highWater: number;
}

/**
 * Rows of state: a key's numbers start at `f[slot * stride]` (a store may keep words of its own after the
 * kernel's `stride` words, so `StateTable.stride >= AlgorithmKernel.stride`); `logs[slot]` for sliding-log.
 */
export interface StateTable {
  f: Float64Array;
  readonly stride: number;
  logs: (LogRing | undefined)[];
  /** The id of the lease an apply takes (concurrency.ts), set by the store for the call. */
  lease?: number;
}

/** What `evaluate` writes. Quantities in milli-units, times in ms. */
export interface Outcome {
  /** The policy would admit the request. */
  allowed: boolean;
  /** The cost can never fit the policy. */
  exceeds: boolean;
  /**
   * Remaining after the request when admitted (as if charged), else the remaining now. To read the
   * remaining of an admitted but uncharged request (another policy rejected it), evaluate a cost of
   * Infinity: a cost that can never fit reports the state as it stands.
   */
  remaining: number;
  retryAfterMs: number;
  /** Time to full capacity: after the charge when admitted, else as the state stands. */
  resetMs: number;
  delayMs: number;
}

export function createOutcome(): Outcome {
  // Stryker disable next-line ObjectLiteral: equivalent, -> `{}`: every kernel writes every field before a caller reads one (outcome.property.test.ts)
  return {
    // Stryker disable next-line BooleanLiteral: equivalent, -> `true`: every kernel writes every field before a caller reads one (outcome.property.test.ts)
    allowed: false,
    // Stryker disable next-line BooleanLiteral: equivalent, -> `true`: every kernel writes every field before a caller reads one (outcome.property.test.ts)
    exceeds: false,
    remaining: 0,
    retryAfterMs: 0,
    resetMs: 0,
    delayMs: 0,
  };
}

export interface AlgorithmKernel {
  readonly id: PolicyAlgorithm;
  /** Float64 slots per key in `StateTable.f`. */
  readonly stride: number;
  /** Writes the state of a key never seen. */
  init(t: StateTable, slot: number): void;
  /** Decides a request of `cost` milli-units at `now` without changing the state's meaning. */
  evaluate(t: StateTable, slot: number, now: number, cost: number, p: CompiledPolicy, out: Outcome): void;
  /**
   * Charges a request that `evaluate` admitted, at the same `now`. State written under another limit or
   * burst (the bucket family) is rewritten in `p`'s scale only here and in `consume`'s charge: a refusal,
   * a peek and a policy whose group refused write nothing (gcra.ts adoptGcra).
   */
  commit(t: StateTable, slot: number, now: number, cost: number, p: CompiledPolicy): void;
  /**
   * `evaluate`, then `commit` when admitted, in one pass: for a policy that is its own group (one policy,
   * no shadow), where nothing else can veto the charge.
   */
  consume(t: StateTable, slot: number, now: number, cost: number, p: CompiledPolicy, out: Outcome): void;
  /** The time (ms) from which the state is equivalent to a key never seen: safe to drop. */
  expiresAt(t: StateTable, slot: number, p: CompiledPolicy): number;
  /**
   * The position of the charge just committed at `now`, which its receipt keeps for a refund (the bucket
   * family: refund-frame.ts). Absent where a refund needs no more than the charge's mark.
   */
  position?(t: StateTable, slot: number, now: number, p: CompiledPolicy): number;
}

/** `consume` for kernels without a fused version: evaluate, then commit when admitted. */
export function evaluateThenCommit(
  this: AlgorithmKernel,
  t: StateTable,
  slot: number,
  now: number,
  cost: number,
  p: CompiledPolicy,
  out: Outcome,
): void {
  this.evaluate(t, slot, now, cost, p, out);
  if (out.allowed) this.commit(t, slot, now, cost, p);
}

/** Marks a cost that can never fit: the same answer from every algorithm. */
export function writeExceeds(out: Outcome, remaining: number, resetMs: number): void {
  out.allowed = false;
  out.exceeds = true;
  out.remaining = remaining;
  out.retryAfterMs = 0;
  out.resetMs = resetMs;
  out.delayMs = 0;
}

/**
 * The bucket family's scale of state written under `limit` and `burst` (same window): its rate (ticks per
 * ms), ticks per milli-unit and capacity in ticks, as a policy of that limit and burst compiles them.
 */
export function writerScale(limit: number, burst: number, windowMs: number): [rate: number, tokenTicks: number, capTicks: number] {
  const g = gcd(windowMs, limit * 1000);
  const tw = windowMs / g;
  return [(limit * 1000) / g, tw, burst * 1000 * tw];
}

/**
 * The ms until `owed` ticks of a writer's scale (leaking `rate` per ms, `tokenTicksW` ticks per milli-unit)
 * convert, rounded up, to at most `most` ticks of `p`: ceil(owed * p.tokenTicks / tokenTicksW) <= most
 * exactly when owed <= floor(most * tokenTicksW / p.tokenTicks), `most` an integer. Not below 0 ticks owed.
 */
export function waitToConvertTo(owed: number, rate: number, tokenTicksW: number, p: CompiledPolicy, most: number): number {
  return ceilDiv(owed - floorDiv(most * tokenTicksW, p.tokenTicks), rate);
}

/** Start of the clock-aligned window containing `now` (floor(now / w) * w, also for negative now). */
export function alignedStart(now: number, w: number): number {
  const m = now % w;
  return m < 0 ? now - m - w : now - m;
}
