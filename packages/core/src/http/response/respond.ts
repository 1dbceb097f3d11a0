/**
 * @module `respond(decision, config)`: the framework-agnostic answer to a decision. An adapter writes
 * the plan as it is: its headers, then either continues (after `delayMs` for a leaky-bucket shaper)
 * or answers with `status` and `body`.
 */
import type { LimiterKey } from '../../limiter/limiter.js';
import type { Decision } from '../../types.js';
import type { HeaderPair, HeaderWriter } from './header-values.js';
import {
  buildProblem,
  PROBLEM_CONTENT_TYPE,
  PROBLEM_STATUS,
  type ProblemBodyWriter,
  type ProblemDetails,
  type ProblemKind,
} from './problem.js';

/**
 * What `respond` needs, resolved once per middleware. Rate-limit headers are sent for decisions the
 * store made; a degraded decision (the store failed and `onStoreError` answered) gets none, since its
 * numbers describe no real quota, but a rejection still gets `Retry-After` and its problem body. A 413
 * (a cost that can never fit) gets neither `Retry-After` nor any rate-limit header, in every header
 * mode: retrying cannot succeed, and a reset time would tell clients (ky, got) to retry.
 */
export interface ResponseConfig {
  /** `'shadow'`: never reject, never delay, send nothing (invisible on the wire). */
  readonly mode: 'enforce' | 'shadow';
  /** Undefined when `headers: false`. */
  readonly headers: HeaderWriter | undefined;
  readonly problemTypes: Readonly<Record<ProblemKind, string>>;
  /** Quota unit per policy name, for the `detail` text. */
  readonly units: ReadonlyMap<string, string>;
  /** Serializes problem bodies (see `createProblemBodyWriter`). */
  readonly problemBody: ProblemBodyWriter;
}

/** What to answer for a decision: pass or reject, the status, the headers, the problem body and the shaping delay. */
export interface ResponsePlan {
  /** `'pass'`: continue to the route; `'reject'`: answer with `status` and `body`. */
  readonly action: 'pass' | 'reject';
  /** The status of a rejection (429, 413 or 503); undefined on pass. */
  readonly status: number | undefined;
  /** Headers to set, in order, whatever the action. */
  readonly headers: HeaderPair[];
  /** The problem details of a rejection (before `onLimited` may replace the body). */
  readonly problem: ProblemDetails | undefined;
  /** The serialized body of a rejection. */
  readonly body: string | undefined;
  /** How long to hold an admitted request before it proceeds (leaky-bucket shaping), in ms. */
  readonly delayMs: number;
}

const PASS_SILENT: ResponsePlan = Object.freeze({
  action: 'pass',
  status: undefined,
  headers: [],
  problem: undefined,
  body: undefined,
  delayMs: 0,
}) as ResponsePlan;

/** `Retry-After` in delay-seconds: the wait rounded up, at least 1. */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}

function kindOf(decision: Decision): ProblemKind {
  if (decision.reason === 'cost-exceeds-capacity') return 'costExceedsCapacity';
  if (decision.reason === 'store-error') return 'unavailable';
  return 'limited';
}

/**
 * Plans the response to `decision`. `clock` is the limiter's (read only for epoch-based legacy headers);
 * `target`, the key the decision was made for (a key per policy gives each its own draft-11 `pk`).
 */
export function respond(decision: Decision, config: ResponseConfig, clock: () => number, target?: LimiterKey): ResponsePlan {
  if (config.mode === 'shadow') return PASS_SILENT;
  const headers: HeaderPair[] = [];
  // A degraded decision was answered without the store (onStoreError): its numbers describe no real quota.
  const writer = decision.degraded ? undefined : config.headers;
  if (decision.allowed) {
    writer?.write(decision, false, clock, headers, target);
    return { action: 'pass', status: undefined, headers, problem: undefined, body: undefined, delayMs: decision.delayMs };
  }
  const kind = kindOf(decision);
  const retryAfter = kind === 'costExceedsCapacity' ? undefined : retryAfterSeconds(decision.retryAfterMs);
  // A 413 carries nothing a client could read as "retry later" (a reset time, `t=0`): only a 429 gets quota headers.
  if (kind === 'limited') writer?.write(decision, true, clock, headers, target);
  if (retryAfter !== undefined) headers.push(['Retry-After', String(retryAfter)]);
  headers.push(['Cache-Control', 'no-store'], ['Content-Type', PROBLEM_CONTENT_TYPE]);
  return new Rejection(kind, decision, retryAfter, config, headers);
}

/**
 * A rejection plan. Its body is serialized from precomputed pieces; the problem object itself is built
 * only if read (by `problem.extend` or `onLimited`, or a custom adapter), which most 429s never are.
 */
class Rejection implements ResponsePlan {
  readonly action = 'reject';
  readonly status: number;
  readonly body: string;
  readonly delayMs = 0;
  #problem: ProblemDetails | undefined;

  constructor(
    private readonly kind: ProblemKind,
    private readonly decision: Decision,
    private readonly retryAfter: number | undefined,
    private readonly config: ResponseConfig,
    readonly headers: HeaderPair[],
  ) {
    this.status = PROBLEM_STATUS[kind];
    this.body = config.problemBody(kind, decision, retryAfter);
  }

  get problem(): ProblemDetails {
    this.#problem ??= buildProblem(this.kind, this.decision, this.retryAfter, this.config.problemTypes[this.kind], this.config.units);
    return this.#problem;
  }
}
