/**
 * @module Public types of @tollgate/core: policies, decisions, clocks, loggers.
 */

/** The six algorithms. See the README section "Choosing an algorithm" for each one's contract. */
export type AlgorithmId = 'fixed-window' | 'sliding-log' | 'sliding-window' | 'token-bucket' | 'gcra' | 'leaky-bucket';

/** The algorithm of a policy result or description: a rate algorithm, or `'concurrency'` (requests in flight per key). */
export type PolicyAlgorithm = AlgorithmId | 'concurrency';

/** What a policy counts, advertised as `qu` in `RateLimit-Policy` when it is not `requests`. */
export type QuotaUnit = 'requests' | 'content-bytes' | 'concurrent-requests';

/** One limit: an algorithm with its numbers. */
export interface PolicyOptions {
  /**
   * Name of the policy, unique within a limiter; it is the item name in the `RateLimit` headers and
   * part of the storage key, so two limiters sharing a store and a policy name share its budget.
   * Printable ASCII, 1 to 64 characters. Defaults to `'default'`.
   */
  name?: string;
  /** Defaults to `'gcra'`. */
  algorithm?: AlgorithmId;
  /** Requests (or cost units) allowed per `windowMs`. A positive integer. */
  limit: number;
  /** Length of the window, or the time over which `limit` is refilled, in milliseconds. A positive integer. */
  windowMs: number;
  /**
   * token-bucket, gcra, leaky-bucket: how much may arrive at once (bucket capacity), a positive integer.
   * Defaults to `limit`. Not allowed for the window algorithms.
   */
  burst?: number;
  /**
   * fixed-window only: `'clock'` aligns windows to the clock (`floor(now / windowMs)`, all keys reset together),
   * `'first-request'` opens a key's window at its first request. Defaults to `'clock'`.
   */
  anchor?: 'clock' | 'first-request';
  /**
   * leaky-bucket only: how many excess requests pass without delay (nginx `delay=`). Defaults to `0`:
   * every request that finds the bucket non-empty waits its turn.
   */
  delayAfter?: number;
  /**
   * leaky-bucket only: the longest a request may be made to wait, in ms. A request that would wait
   * longer is rejected at once, with the exact `retryAfterMs` after which it would wait no longer than
   * this. Defaults to none: every request the bucket admits waits its turn.
   */
  maxDelayMs?: number;
  /**
   * What the policy counts; only changes the advertised `qu`. Defaults to `'requests'`.
   * `'concurrent-requests'` belongs to `algorithm: 'concurrency'` policies only.
   */
  unit?: QuotaUnit;
}

/**
 * A concurrency policy: at most `limit` requests of a key in flight. An admitted request holds a lease
 * until `decision.release()` (the adapters call it when the response finishes, errors or the client
 * goes away) or until `leaseMs` passes. It is a policy like the others: decided with them, all or
 * nothing, in the same store call (one Lua script on Redis), in `policies` or in a plan, with a key of
 * its own in a keys object.
 */
export interface ConcurrencyPolicyOptions {
  /** Unique within the limiter, as for rate policies. Defaults to `'default'`. */
  name?: string;
  algorithm: 'concurrency';
  /** Requests of one key in flight at once. A positive integer. */
  limit: number;
  /**
   * A lease not released within this many ms expires and frees its slot (a handler that never
   * finishes, a lost release, a process that died). Advertised as the policy's `w`. Defaults to `60_000`.
   */
  leaseMs?: number;
  /**
   * The longest a request holds its lease, renewals included: renewal stops this many ms after the lease
   * was granted and the lease then ends by itself (`leaseMs` after its last renewal, never later than
   * `maxLeaseMs` after it was granted), so a handler that never answers on an open connection (an async
   * throw on Express 4) cannot lock its key for ever. At least `leaseMs`. Defaults to `5 * leaseMs`.
   */
  maxLeaseMs?: number;
  /**
   * Wait for a lease instead of being refused at once: at most `size` requests wait per key of this
   * policy in this process (with per-policy keys, per tenant, whatever the user), first in first out, each
   * up to `timeoutMs`; a request that finds the queue full is refused at once (README: what a queue does
   * on Redis). When several concurrency policies of a plan queue (per user and per tenant), a waiting
   * request counts in each one's queue (each keeps its `size`), waits its turn in the one with the
   * smallest `limit` (its user's, not its tenant's), waits
   * at most the shortest `timeoutMs`, and a release under any of them wakes it. Defaults to none.
   */
  queue?: { size: number; timeoutMs: number };
  /** Always `'concurrent-requests'` (the default); any other unit is an error. */
  unit?: 'concurrent-requests';
}

/** A rate policy or a concurrency policy. */
export type AnyPolicyOptions = PolicyOptions | ConcurrencyPolicyOptions;

/** Integer milliseconds. The default clock is monotonic and anchored to the Unix epoch. */
export type Clock = () => number;

export type { LogFields, LogFn, Logger } from './logging.js';

/** The verdict of one policy on one request. Quantities are in policy units, times in milliseconds. */
export interface PolicyResult {
  readonly name: string;
  readonly algorithm: PolicyAlgorithm;
  /** True when this policy alone would admit the request. */
  readonly allowed: boolean;
  /** True for shadow (candidate) policies, which never block. */
  readonly shadow: boolean;
  readonly limit: number;
  readonly windowMs: number;
  /** Capacity: `burst` for the bucket algorithms, `limit` for the window algorithms. */
  readonly capacity: number;
  /** What is left after this request (never negative; to 1/1000). */
  readonly remaining: number;
  /** 0 when allowed; else how long until this same request would be admitted by this policy. */
  readonly retryAfterMs: number;
  /** How long until the policy is back to full capacity, if nothing else arrives. */
  readonly resetMs: number;
  /** leaky-bucket: how long the admitted request should wait before it proceeds; 0 otherwise. */
  readonly delayMs: number;
  /** Set when the cost can never fit this policy. */
  readonly reason: 'cost-exceeds-capacity' | undefined;
}

/**
 * Why a decision came out as it did.
 * - `allowed`: every enforced policy admitted the request.
 * - `limited`: at least one enforced policy rejected it; retry after `retryAfterMs`.
 * - `cost-exceeds-capacity`: the cost is larger than some policy can ever absorb; retrying cannot help.
 * - `store-error`: the store failed or timed out and the failure mode decided (see `degraded`).
 */
export type DecisionReason = 'allowed' | 'limited' | 'cost-exceeds-capacity' | 'store-error';

/** The verdict of the shadow (candidate) policies, evaluated on their own state. */
export interface ShadowVerdict {
  /** True when every shadow policy admitted the request. */
  readonly allowed: boolean;
  readonly reason: DecisionReason;
  /** The binding shadow policy (most restrictive). */
  readonly policy: string;
  readonly remaining: number;
  readonly retryAfterMs: number;
  readonly policies: readonly PolicyResult[];
}

/** The answer to `limiter.check()`. */
export interface Decision {
  /** Whether the request may proceed. Always true in shadow mode; see `limited` for the verdict. */
  readonly allowed: boolean;
  /** The verdict of the enforced policies: true when they reject the request (also in shadow mode). */
  readonly limited: boolean;
  readonly reason: DecisionReason;
  readonly mode: 'enforce' | 'shadow';
  readonly key: string;
  readonly cost: number;
  /** Name of the binding policy: on rejection the one with the longest wait, else the one with least remaining. */
  readonly policy: string;
  /** Remaining of the binding policy. */
  readonly remaining: number;
  /** 0 when admitted; else the wait after which this same request is admitted (all policies). */
  readonly retryAfterMs: number;
  /** resetMs of the binding policy. */
  readonly resetMs: number;
  /** The longest leaky-bucket delay among the policies; 0 when no shaper applies. */
  readonly delayMs: number;
  /** One result per enforced policy, in the order they were configured. */
  readonly policies: readonly PolicyResult[];
  /** Present when shadow policies are configured. */
  readonly shadow: ShadowVerdict | undefined;
  /** True when the store failed and the failure mode answered instead of the store. */
  readonly degraded: boolean;
  /**
   * Present on an admitted decision that holds concurrency leases (`algorithm: 'concurrency'`):
   * gives them back. Call it once the request is over (the adapters do, on finish, error or abort);
   * later calls do nothing. A lease never released expires after its policy's `leaseMs`.
   */
  readonly release?: (() => void) | undefined;
  /**
   * Present with `release`: moves the deadline of every lease of this decision to now + `leaseMs`, so a
   * long request keeps its slot (the adapters renew every `leaseMs / 2` while the handler runs).
   * Returns false when a lease had already expired or been released, or when its renewals are over
   * (`maxLeaseMs` after the grant; the lease then ends by itself at its deadline).
   */
  readonly renew?: (() => boolean) | undefined;
  /** The plan that applied (`'default'` for the one-plan `policies` form). Always set by a limiter. */
  readonly plan?: string;
  /**
   * Present when the request was charged (not on peeks, rejections or degraded answers): hand it to
   * `limiter.refund()` to give exactly this charge back.
   */
  readonly receipt?: ChargeReceipt | undefined;
}

/** A charge `limiter.refund()` can give back (see plans/compiled-plan.ts). */
export interface ChargeReceipt {
  /** The plan the charge applied. */
  readonly plan: string;
  /** The cost charged, in policy units. */
  readonly cost: number;
}

/** Options of one `check()` call. */
export interface CheckOptions {
  /** Cost of this request, a positive multiple of 1/1000. Defaults to `1`. */
  cost?: number;
  /**
   * Aborting it takes a request waiting in a concurrency queue out of the queue (the client went away).
   * One whose attempt was already on its way to the store may still come back admitted, holding its
   * leases: call its `release` (the adapters do, on abort).
   */
  signal?: AbortSignal;
  /**
   * The plan to apply (see `plans`). A name no plan has is answered by the `unknownPlan` fallback, with
   * `WRN_RL_UNKNOWN_PLAN` (at most one line a minute, with a count of the others). Defaults to the default plan.
   */
  plan?: string;
  /**
   * Telemetry only: the route template the request matched (`/users/:id`), reported as `http.route`.
   * Never the raw URL: each distinct value is a metric series. The adapters set it where the framework
   * knows the route. Defaults to none.
   */
  route?: string;
  /** Telemetry only: the framework's request object, handed to `tollgate:decision` subscribers. Defaults to none. */
  request?: unknown;
}

/** Options of one `refund()` call. */
export interface RefundOptions {
  /** How much of the charge to give back, in policy units, at most what is left of it. Defaults to all of it. */
  cost?: number;
}

/** What a limiter enforces, as headers and docs describe it. */
export interface PolicyDescription {
  readonly name: string;
  readonly algorithm: PolicyAlgorithm;
  readonly limit: number;
  readonly windowMs: number;
  readonly capacity: number;
  readonly unit: QuotaUnit;
  readonly shadow: boolean;
}
