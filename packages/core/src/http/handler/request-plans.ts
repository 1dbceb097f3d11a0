/**
 * @module The adapters' side of plans: which plan a request gets (`plan: (req) => string`), a key per
 * policy (`{ name: 'per-ip', ..., key: keys.ip() }`: several keys, one decision), and counting only what
 * should count (`skipSuccessfulRequests`, `skipFailedRequests`, `requestWasSuccessful`, with
 * express-rate-limit's meaning). Validated once; the handler charges at admission and gives the charge
 * back when the response finishes, by the rule below.
 *
 * When is a request successful? `requestWasSuccessful(request, response)` decides (the framework request
 * and the Node `ServerResponse`); by default a status below 400. A client that goes away before the
 * response finished (`close` without `finish`) counts as failed, as in express-rate-limit: its charge is
 * given back under `skipFailedRequests`, kept under `skipSuccessfulRequests`.
 */
import { RateLimitConfigError } from '../../errors.js';
import type { ConcurrencyPolicyOptions, PolicyOptions } from '../../types.js';
import type { KeyFunction } from '../request-view.js';

/** A policy in the adapters' options: a core policy that may carry its own key function. */
// biome-ignore lint/suspicious/noExplicitAny: the default lets one policy type serve every framework's request.
export interface HttpPolicyOptions<Req = any> extends PolicyOptions {
  /**
   * This policy's key (`keys.ip()`, `keys.user(fn)`): with keys on policies, one request is decided on
   * several keys at once, all or nothing (per IP and per account). Defaults to the middleware's `key`.
   */
  key?: KeyFunction<Req>;
}

/** A concurrency policy in the adapters' options, which may carry its own key function like a rate policy. */
// biome-ignore lint/suspicious/noExplicitAny: see HttpPolicyOptions.
export interface HttpConcurrencyPolicyOptions<Req = any> extends ConcurrencyPolicyOptions {
  /** This policy's key (`keys.user(fn)`): e.g. exports in flight per user and per tenant. Defaults to the middleware's `key`. */
  key?: KeyFunction<Req>;
}

// biome-ignore lint/suspicious/noExplicitAny: see HttpPolicyOptions.
export type HttpPolicies<Req = any> =
  | HttpPolicyOptions<Req>
  | HttpConcurrencyPolicyOptions<Req>
  | readonly (HttpPolicyOptions<Req> | HttpConcurrencyPolicyOptions<Req>)[];

/**
 * The least a finished response has, for `requestWasSuccessful`: each adapter names the response it
 * passes (Express's `res`, Fastify's `reply.raw`, Koa's `ctx.res`: the Node response itself).
 */
export interface FinishedResponse {
  readonly statusCode: number;
}

// biome-ignore lint/suspicious/noExplicitAny: see HttpPolicyOptions.
export interface PlanHttpOptions<Req = any, Res extends FinishedResponse = FinishedResponse> {
  /**
   * The plan of a request (a user record's tier, an API-key lookup, possibly cached); `undefined` means
   * the default plan, an unknown name the `unknownPlan` fallback (`WRN_RL_UNKNOWN_PLAN`). A function that
   * throws or rejects is warned about and the default plan applies; one that returns something else than
   * a string, `undefined` or `null` (a number) is warned about and the `unknownPlan` fallback applies.
   * Defaults to none: the default plan.
   */
  plan?: (request: Req) => string | undefined | Promise<string | undefined>;
  /** Give the charge back when the request succeeded (see `requestWasSuccessful`). Defaults to `false`. */
  skipSuccessfulRequests?: boolean;
  /** Give the charge back when the request failed or the client went away. Defaults to `false`. */
  skipFailedRequests?: boolean;
  /**
   * Whether a finished request succeeded, from the framework request and the response the adapter names
   * (`Res`: Express's `res`, Fastify's `reply.raw`, Koa's `ctx.res`). Defaults to `response.statusCode < 400`.
   * A method, not a function-typed property: an adapter's options (`Res` its own response) then pass
   * where the core's are asked for, as the response it passes is one.
   */
  requestWasSuccessful?(request: Req, response: Res): boolean | Promise<boolean>;
}

/** `PlanHttpOptions` and the policies' keys, validated. */
export interface PlanHttpConfig<Req> {
  readonly plan: PlanHttpOptions<Req>['plan'];
  readonly skipSuccessfulRequests: boolean;
  readonly skipFailedRequests: boolean;
  readonly requestWasSuccessful: NonNullable<PlanHttpOptions<Req>['requestWasSuccessful']>;
  /** Key functions by policy name, for the policies that carry one. */
  readonly policyKeys: ReadonlyMap<string, KeyFunction<Req>>;
}

export const PLAN_HTTP_KEYS = { plan: true, skipSuccessfulRequests: true, skipFailedRequests: true, requestWasSuccessful: true } as const;

function bool(value: unknown, path: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new RateLimitConfigError('ERR_RL_INVALID_OPTION', path, 'must be true or false', value);
  return value;
}

function fn<T>(value: T | undefined, path: string, hint: string): T | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new RateLimitConfigError('ERR_RL_INVALID_OPTION', path, `must be a function, e.g. ${hint}`, value);
  }
  return value;
}

/**
 * Takes each policy's `key` off (the core's policies have none) and validates the plan options. Returns
 * the policies without keys, in the shape they came in, and the config.
 */
export function parsePlanHttpOptions<Req>(
  options: PlanHttpOptions<Req> & {
    policies?: HttpPolicies<Req>;
    plans?: Readonly<Record<string, HttpPolicies<Req>>>;
    shadowPolicies?: HttpPolicies<Req>;
    /** The older spelling of `shadowPolicies`. */
    shadow?: unknown;
  },
): {
  readonly policies: unknown;
  readonly plans: unknown;
  readonly shadowPolicies: unknown;
  readonly shadow: unknown;
  readonly config: PlanHttpConfig<Req>;
} {
  const policyKeys = new Map<string, KeyFunction<Req>>();
  /** The names of the enforced policies, when the candidates are stripped: a keyed candidate takes none of them. */
  let enforced: ReadonlySet<string> | undefined;
  const strip = (list: unknown, path: string): unknown => {
    if (list === null || typeof list !== 'object') return list;
    const one = (p: unknown, at: string): unknown => {
      if (p === null || typeof p !== 'object' || !('key' in p)) return p;
      const { key, ...rest } = p as HttpPolicyOptions<Req>;
      if (key === undefined) return rest;
      if (typeof key !== 'function') {
        throw new RateLimitConfigError('ERR_RL_INVALID_OPTION', `${at}.key`, 'must be a key function, e.g. keys.ip()', key);
      }
      const name = rest.name ?? 'default';
      if (enforced?.has(name) === true) {
        // Keys go by policy name: the enforced policy of that name would count by the candidate's key.
        throw new RateLimitConfigError(
          'ERR_RL_INVALID_OPTION',
          `${at}.key`,
          `belongs to a candidate named '${name}' like an enforced policy, which would then count by this key too; give the candidate a name of its own`,
          key,
        );
      }
      const seen = policyKeys.get(name);
      if (seen !== undefined && seen !== key) {
        throw new RateLimitConfigError(
          'ERR_RL_INVALID_OPTION',
          `${at}.key`,
          `differs from the key of another policy named '${name}'; one policy name takes one key function in every plan`,
          key,
        );
      }
      policyKeys.set(name, key);
      return rest;
    };
    return Array.isArray(list) ? list.map((p, i) => one(p, `${path}[${i}]`)) : one(list, path);
  };
  const policies = options.policies === undefined ? undefined : strip(options.policies, 'policies');
  let plans: unknown = options.plans;
  if (options.plans !== null && typeof options.plans === 'object' && !Array.isArray(options.plans)) {
    plans = Object.fromEntries(Object.entries(options.plans).map(([name, list]) => [name, strip(list, `plans['${name}']`)]));
  }
  // A candidate may count under a key of its own too (a rollout that moves a limit from IP to user).
  enforced = new Set(policyNames([policies, ...(plans !== null && typeof plans === 'object' ? Object.values(plans) : [])]));
  const shadowPolicies = options.shadowPolicies === undefined ? undefined : strip(options.shadowPolicies, 'shadowPolicies');
  const older = options.shadow;
  const shadow =
    older !== null && typeof older === 'object' && 'policies' in older
      ? { ...older, policies: strip(older.policies, 'shadow.policies') }
      : older;
  const config: PlanHttpConfig<Req> = Object.freeze({
    plan: fn(options.plan, 'plan', "(req) => req.user?.plan ?? 'free'"),
    skipSuccessfulRequests: bool(options.skipSuccessfulRequests, 'skipSuccessfulRequests'),
    skipFailedRequests: bool(options.skipFailedRequests, 'skipFailedRequests'),
    requestWasSuccessful:
      fn(options.requestWasSuccessful, 'requestWasSuccessful', '(req, res) => res.statusCode < 400') ??
      ((_request: Req, response: FinishedResponse) => response.statusCode < 400),
    policyKeys,
  });
  return { policies, plans, shadowPolicies, shadow, config };
}

/** The names of the policies in `lists` (each a policy or a list, as given), `'default'` for one without. */
function policyNames(lists: readonly unknown[]): string[] {
  return lists.flatMap((list) =>
    (Array.isArray(list) ? list : [list]).flatMap((p) =>
      p !== null && typeof p === 'object' ? [((p as { name?: unknown }).name as string | undefined) ?? 'default'] : [],
    ),
  );
}

/** The Node response events the refund rule listens to (`ServerResponse` fits as it is). */
export interface FinishingResponse extends FinishedResponse {
  readonly writableFinished?: boolean;
  /** False until the handler ended the response (`end()`). */
  readonly writableEnded?: boolean;
  readonly destroyed?: boolean;
  /** HTTP/2 (node:http2's compatibility API): the stream, whose `rstCode` is not 0 when it was reset. */
  readonly stream?: { readonly rstCode?: number } | null;
  once(event: 'finish' | 'close', listener: () => void): unknown;
}

export function isFinishingResponse(value: unknown): value is FinishingResponse {
  const r = value as FinishingResponse | null;
  return typeof r === 'object' && r !== null && typeof r.once === 'function' && typeof r.statusCode === 'number';
}

/**
 * A response that emitted 'finish' was sent whole, except over HTTP/2: node:http2's compatibility API
 * emits 'finish' whenever the stream closes, a client's cancel (RST_STREAM) included, before the handler
 * answered or while it streamed. Such a response did not finish: the client went away.
 */
function completed(response: FinishingResponse): boolean {
  return response.writableEnded !== false && !((response.stream?.rstCode ?? 0) > 0);
}

/**
 * Calls `settle(finished)` once, when `response` finishes (`true`) or closes before finishing (`false`,
 * the client went away); at once when it has already (the client left, or an earlier middleware
 * answered, while the decision was awaited: no event would come).
 */
export function onceSettled(response: FinishingResponse, settle: (finished: boolean) => void): void {
  if (response.writableFinished === true || response.destroyed === true) {
    settle(response.writableFinished === true && completed(response));
    return;
  }
  let done = false;
  response.once('finish', () => {
    if (done) return;
    done = true;
    settle(completed(response));
  });
  response.once('close', () => {
    if (done) return;
    done = true;
    settle(response.writableFinished === true && completed(response));
  });
}
