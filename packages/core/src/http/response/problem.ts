/**
 * @module RFC 9457 problem details for the three errors a limiter makes, each with its own documented
 * type (see docs/problems.md):
 * - `rate-limited` (429): a policy's quota is exhausted; retry after `retryAfter` seconds.
 * - `cost-exceeds-capacity` (413): the request costs more than a policy can ever hold; retrying the
 *   same request cannot succeed, so there is no `Retry-After`. 413 "Content Too Large" is the 4xx a
 *   generic client already treats as "this request, as sent, is too big; do not retry it unchanged".
 * - `limiter-unavailable` (503): the store failed and the limiter is configured to fail closed.
 */
import type { Decision, PolicyDescription, PolicyResult } from '../../types.js';
import { isExhausted, windowSeconds } from './header-values.js';

/** Where the problem types are documented; each type URI is this plus a fragment. */
export const PROBLEMS_URL = 'https://github.com/tollgate/tollgate/blob/main/docs/problems.md';

/** The kinds of limiter-made error responses. */
export type ProblemKind = 'limited' | 'costExceedsCapacity' | 'unavailable';

/** Default `type` URIs. The draft's proposed `https://iana.org/assignments/http-problem-types#quota-exceeded` is an opt-in via `problem.types.limited`. */
export const PROBLEM_TYPES: Readonly<Record<ProblemKind, string>> = Object.freeze({
  limited: `${PROBLEMS_URL}#rate-limited`,
  costExceedsCapacity: `${PROBLEMS_URL}#cost-exceeds-capacity`,
  unavailable: `${PROBLEMS_URL}#limiter-unavailable`,
});

/** The HTTP status of each kind of problem: 429 limited, 413 a cost that can never fit, 503 the store failed or the server is overloaded. */
export const PROBLEM_STATUS: Readonly<Record<ProblemKind, number>> = Object.freeze({
  limited: 429,
  costExceedsCapacity: 413,
  unavailable: 503,
});

const TITLES: Readonly<Record<ProblemKind, string>> = Object.freeze({
  limited: 'Too Many Requests',
  costExceedsCapacity: 'Request Cost Exceeds Rate Limit Capacity',
  unavailable: 'Rate Limiter Unavailable',
});

/** The media type of every body tollgate sends: RFC 9457 problem details. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** An RFC 9457 problem details object as the limiter sends it. */
export interface ProblemDetails {
  readonly type: string;
  readonly title: string;
  /** Always the HTTP status of the response. */
  readonly status: number;
  readonly detail: string;
  readonly instance?: string;
  /** The binding policy's name (an item of `RateLimit-Policy`). */
  readonly policy?: string;
  /** The binding policy's quota (`q`). */
  readonly limit?: number;
  /** The binding policy's window in seconds (`w`). */
  readonly windowSeconds?: number;
  /** Equal to the `Retry-After` header (429 and 503). */
  readonly retryAfter?: number;
  /** 413: the largest cost the policy can ever hold, and this request's cost. */
  readonly capacity?: number;
  readonly cost?: number;
  /** Names of the exhausted policies (the member draft-11's quota-exceeded type defines). */
  readonly 'violated-policies'?: readonly string[];
  readonly [extension: string]: unknown;
}

function unitName(unit: string, n: number): string {
  if (unit === 'requests') return n === 1 ? 'request' : 'requests';
  return unit === 'content-bytes' ? (n === 1 ? 'byte' : 'bytes') : `${unit} units`;
}

/**
 * The window as the policy has it, not as `w` rounds it up: `per second`, `per 60 seconds`, `per 1.5
 * seconds`, `per 250 milliseconds`, `per millisecond`; never "per 1 seconds".
 */
function perWindow(windowMs: number): string {
  if (windowMs === 1) return 'per millisecond';
  if (windowMs < 1000) return `per ${windowMs} milliseconds`;
  return windowMs === 1000 ? 'per second' : `per ${windowMs / 1000} seconds`;
}

/** `second` for exactly 1, else `seconds` (0.5 seconds, 2 seconds). */
function seconds(n: number | undefined): string {
  return n === 1 ? 'second' : 'seconds';
}

function binding(decision: Decision): PolicyResult | undefined {
  for (const r of decision.policies) if (r.name === decision.policy) return r;
  return decision.policies[0];
}

/** Builds the problem body for a rejected decision. `units` maps policy names to their quota unit. */
export function buildProblem(
  kind: ProblemKind,
  decision: Decision,
  retryAfter: number | undefined,
  type: string,
  units: ReadonlyMap<string, string>,
): ProblemDetails {
  const status = PROBLEM_STATUS[kind];
  const title = TITLES[kind];
  const b = binding(decision);
  if (kind === 'unavailable' || b === undefined) {
    return {
      type,
      title,
      status,
      detail: `The rate limiter cannot decide right now; retry in ${retryAfter ?? 1} ${seconds(retryAfter ?? 1)}.`,
      retryAfter,
    };
  }
  const unit = units.get(b.name) ?? 'requests';
  const w = windowSeconds(b.windowMs);
  const about = { policy: b.name, limit: b.limit, windowSeconds: w };
  if (kind === 'costExceedsCapacity') {
    return {
      type,
      title,
      status,
      detail:
        `This request costs ${decision.cost} ${unitName(unit, decision.cost)} but policy "${b.name}" can never hold more than ` +
        `${b.capacity}; sending it again cannot succeed.`,
      ...about,
      capacity: b.capacity,
      cost: decision.cost,
    };
  }
  return {
    type,
    title,
    status,
    detail: `${limitedText(unit, b.name, b.limit, b.windowMs, decision.cost, Math.floor(b.remaining))}${retryAfter} ${seconds(retryAfter)}.`,
    ...about,
    retryAfter,
    'violated-policies': decision.policies.filter(isExhausted).map((r) => r.name),
  };
}

/**
 * The detail of a 429 up to the number of seconds: what was exhausted, and why; or, for a request that
 * costs more than the `remaining` left (a weighted request), what it costs against what is left.
 */
function limitedText(unit: string, name: string, limit: number, windowMs: number, cost = 1, remaining = 0): string {
  if (unit === 'concurrent-requests') {
    return `${limit} concurrent ${limit === 1 ? 'request' : 'requests'} of this client already in flight (policy "${name}"); retry when one finishes, in `;
  }
  if (remaining > 0) {
    return (
      `This request costs ${cost} ${unitName(unit, cost)} but ${remaining} of the quota of ${limit} ${unitName(unit, limit)} ` +
      `${perWindow(windowMs)} ${remaining === 1 ? 'is' : 'are'} left (policy "${name}"); retry in `
    );
  }
  return `Quota of ${limit} ${unitName(unit, limit)} ${perWindow(windowMs)} exhausted (policy "${name}"); retry in `;
}

/** The JSON of the problem body of a rejected decision; equal to `JSON.stringify(buildProblem(...))`. */
export type ProblemBodyWriter = (kind: ProblemKind, decision: Decision, retryAfter: number | undefined) => string;

/** A JSON string literal without its closing quote, to continue with digits and a serialized tail. */
function open(text: string): string {
  return JSON.stringify(text).slice(0, -1);
}

/** A JSON string literal without its opening quote. */
function close(text: string): string {
  return JSON.stringify(text).slice(1);
}

/**
 * Serializes problem bodies from pieces made once per middleware. `JSON.stringify` of a problem costs
 * close to a microsecond (its detail text has quotes to escape), more than the rest of a 429 together;
 * per request only numbers are spliced in between pieces `JSON.stringify` made. A property test proves
 * the output equal to `JSON.stringify(buildProblem(...))`.
 */
export function createProblemBodyWriter(
  policies: readonly PolicyDescription[],
  types: Readonly<Record<ProblemKind, string>>,
): ProblemBodyWriter {
  const head = (kind: ProblemKind) =>
    `{"type":${JSON.stringify(types[kind])},"title":${JSON.stringify(TITLES[kind])},"status":${PROBLEM_STATUS[kind]},"detail":`;
  const names = new Map(policies.map((p) => [p.name, JSON.stringify(p.name)]));
  const units = new Map(policies.map((p) => [p.name, p.unit]));
  const byName = new Map(
    policies.map((p) => {
      const w = windowSeconds(p.windowMs);
      const about = `,"policy":${JSON.stringify(p.name)},"limit":${p.limit},"windowSeconds":${w}`;
      const costHead = head('costExceedsCapacity') + open('This request costs ');
      const costTail = (cost: number) =>
        `${close(
          ` ${unitName(p.unit, cost)} but policy "${p.name}" can never hold more than ${p.capacity}; sending it again cannot succeed.`,
        )}${about},"capacity":${p.capacity},"cost":`;
      const costOne = costTail(1);
      const costMany = costTail(2);
      return [
        p.name,
        {
          limitedHead: head('limited') + open(limitedText(p.unit, p.name, p.limit, p.windowMs)),
          limitedMid: `${close(' seconds.')}${about},"retryAfter":`,
          limitedMidOne: `${close(' second.')}${about},"retryAfter":`,
          cost: (cost: number) => `${costHead}${cost}${cost === 1 ? costOne : costMany}${cost}}`,
          last: { retryAfter: -1, violated: '', body: '' },
        },
      ];
    }),
  );
  const unavailableHead = head('unavailable') + open('The rate limiter cannot decide right now; retry in ');
  const unavailableMid = `${close(' seconds.')},"retryAfter":`;
  const unavailableMidOne = `${close(' second.')},"retryAfter":`;

  // One policy: every 429 of it names that policy alone.
  const onlyViolated = policies.length === 1 ? `[${names.get((policies[0] as PolicyDescription).name)}]` : undefined;

  function violated(decision: Decision): string {
    let out = '';
    for (const r of decision.policies) {
      if (isExhausted(r)) out = out === '' ? (names.get(r.name) as string) : `${out},${names.get(r.name)}`;
    }
    return `[${out}]`;
  }

  return (kind, decision, retryAfter) => {
    const b = byName.get(decision.policy);
    if (b !== undefined && kind === 'costExceedsCapacity') return b.cost(decision.cost);
    if (retryAfter !== undefined) {
      if (kind === 'unavailable')
        return `${unavailableHead}${retryAfter}${retryAfter === 1 ? unavailableMidOne : unavailableMid}${retryAfter}}`;
      // A weighted request refused with some quota left has its own detail (limitedText): the slow way, below.
      if (b !== undefined && !(decision.remaining >= 1)) {
        // A client over its limit is answered the same body until Retry-After ticks down: the same string
        // again, so an adapter that keeps the body's bytes (Fastify's) compares it by reference.
        const v = onlyViolated ?? violated(decision);
        const last = b.last;
        if (retryAfter === last.retryAfter && v === last.violated) return last.body;
        const mid = retryAfter === 1 ? b.limitedMidOne : b.limitedMid;
        const body = `${b.limitedHead}${retryAfter}${mid}${retryAfter},"violated-policies":${v}}`;
        last.retryAfter = retryAfter;
        last.violated = v;
        last.body = body;
        return body;
      }
    }
    // Shapes respond() never asks for (no wait, a policy this middleware does not know): the slow, sure way.
    return JSON.stringify(buildProblem(kind, decision, retryAfter, types[kind], units));
  };
}
