/**
 * @module The options every adapter takes (`RateLimitOptions`), validated once by
 * `parseRateLimitOptions` into a frozen `RateLimitConfig`: limiter options plus how a request becomes
 * a key and a cost, which headers and bodies are sent, and the hooks. Undefined values count as
 * absent; unknown keys are errors, so a typo never silently turns a feature off.
 */
import { monotonicClock } from '../../clock.js';
import { parseValidate, type ValidateOption } from '../../diagnostics.js';
import { RateLimitConfigError } from '../../errors.js';
import { PEER_OPTIONS } from '../../internal/peer-options.js';
import {
  type KeysEnum,
  omitUndefined,
  positiveInteger,
  readOptions,
  rejectUnknownKeys,
  renameOptions,
} from '../../internal/read-options.js';
import { checkLogger, DEFAULT_LOG_RATE, type LogRateOptions } from '../../logging.js';
import { LIMITER_KEYS as LIMITER_OPTION_KEYS, type LimiterOptions } from '../../options.js';
import { createLoadShedder, isLoadShedder, type LoadShedder, type LoadShedderOptions } from '../../shedding/load-shedder.js';
import type { Clock, Decision, Logger } from '../../types.js';
import { keys } from '../keys/keys.js';
import { createPartitionKey, type PartitionKeyFunction, type PartitionKeyOptions } from '../keys/partition-key.js';
import type { KeyFunction } from '../request-view.js';
import { HEADER_MODES, type HeaderMode, type HeadersOption } from '../response/header-mode.js';
import { headerModes } from '../response/header-writer.js';
import { PROBLEM_TYPES, type ProblemDetails, type ProblemKind } from '../response/problem.js';
import {
  type FinishedResponse,
  type HttpPolicies,
  PLAN_HTTP_KEYS,
  type PlanHttpConfig,
  type PlanHttpOptions,
  parsePlanHttpOptions,
} from './request-plans.js';

/** The cost of one request in policy units, a positive multiple of 1/1000 (e.g. a batch size, or bytes). */
// biome-ignore lint/suspicious/noExplicitAny: the default lets one callback type serve every framework's request.
export type CostFunction<Req = any> = (request: Req) => number | Promise<number>;

/** What `onLimited` may return to replace the body of a limiter-made error (headers and status are kept). */
export interface LimitedBody {
  /** A string is sent as is; anything else as JSON. */
  body: unknown;
  /** Defaults to `application/json` for non-strings, `text/plain; charset=utf-8` for strings. */
  contentType?: string;
}

/** What `onLimited` receives: the request, its decision, the status about to be sent and the problem details. */
// biome-ignore lint/suspicious/noExplicitAny: see CostFunction.
export interface LimitedContext<Req = any> {
  readonly request: Req;
  readonly decision: Decision;
  /** 429 (limited), 413 (cost exceeds capacity) or 503 (store failed, fail-closed). */
  readonly status: number;
  /** The default body. */
  readonly problem: ProblemDetails;
}

/** How limiter-made errors are described: the problem type URIs, and `extend` to add members to the body. */
// biome-ignore lint/suspicious/noExplicitAny: see CostFunction.
export interface ProblemOptions<Req = any> {
  /**
   * `type` URIs by outcome. Defaults to `PROBLEM_TYPES` (documented in docs/problems.md). Set `limited`
   * to `https://iana.org/assignments/http-problem-types#quota-exceeded` to use the draft's proposed type.
   */
  types?: Partial<Record<ProblemKind, string>>;
  /**
   * Extra members for every problem body, e.g. `{ instance: '/requests/' + req.id }` or a localized
   * `title`/`detail`. `status`, `retryAfter` and `type` cannot be changed here. Defaults to none.
   */
  extend?: (request: Req, problem: ProblemDetails) => Record<string, unknown> | undefined;
}

/** The options every adapter takes (`rateLimit(options)`, Fastify's plugin options): the limiter's, plus how a request becomes a key, a cost and an answer. */
// biome-ignore lint/suspicious/noExplicitAny: see CostFunction.
export interface RateLimitOptions<Req = any, Res extends FinishedResponse = FinishedResponse>
  extends Omit<LimiterOptions, 'cost' | 'policies' | 'plans' | 'shadowPolicies'>,
    PlanHttpOptions<Req, Res> {
  /** The enforced policies (the one-plan form); each may carry its own `key` (several keys, one decision). */
  policies?: HttpPolicies<Req>;
  /**
   * Shadow candidates (see the core's `shadowPolicies`); each may carry its own `key`, else it counts
   * under the middleware's `key`.
   */
  shadowPolicies?: HttpPolicies<Req>;
  /** Named sets of policies; `plan: (req) => name` picks one per request. Instead of `policies`. */
  plans?: Readonly<Record<string, HttpPolicies<Req>>>;
  /**
   * Derives the key of a request (`keys.ip()`, `keys.user(fn)`, or your own). A key that is undefined,
   * empty or not a string is counted in one shared `'unkeyed'` bucket and warned about once
   * (`WRN_RL_UNKEYED`): never a bypass. Defaults to `keys.ip()`: the socket address (forwarding
   * headers are ignored until you list `trustedProxies`), IPv6 grouped by /64.
   */
  key?: KeyFunction<Req>;
  /**
   * The cost of a request: a number for every request, or a function of the request (a batch size,
   * bytes). A function result that is not a positive multiple of 1/1000 is charged as the default
   * cost, 1, and warned about once (`WRN_RL_INVALID_COST`). Defaults to `1`.
   */
  cost?: number | CostFunction<Req>;
  /** Requests for which it returns true are not counted and get no rate-limit header or body. Defaults to none. */
  skip?: (request: Req) => boolean | Promise<boolean>;
  /**
   * Which rate-limit headers to send: one `HeaderMode`, or several in the order given, e.g.
   * `['legacy', 'draft-7']` for express-rate-limit's `legacyHeaders: true, standardHeaders: 'draft-7'`.
   * Defaults to `'draft-11'`.
   */
  headers?: HeadersOption;
  /**
   * The draft-11 partition key (the `pk` parameter of `RateLimit`): `{ secret }` sends an HMAC-SHA256 of
   * the key (9 bytes), so a client can tell its quotas apart without learning the key. Defaults to `false`.
   */
  partitionKey?: PartitionKeyOptions | false;
  /** The older spelling of `partitionKey`. Still accepted; pass one of the two. */
  pk?: PartitionKeyOptions | false;
  /** Problem details options. */
  problem?: ProblemOptions<Req>;
  /**
   * Replaces the body of a limiter-made error (429, 413, 503); return undefined to keep the problem
   * details. Headers and status are kept. A hook that throws is warned about once and the problem
   * details are sent. Defaults to none.
   */
  onLimited?: (context: LimitedContext<Req>) => LimitedBody | undefined | Promise<LimitedBody | undefined>;
  /**
   * Called with every decision (not for skipped requests), including those shadow mode would have
   * rejected (`decision.limited`) and shadow candidates' verdicts (`decision.shadow`). Errors are
   * warned about once and ignored. Defaults to none.
   */
  onDecision?: (decision: Decision, request: Req) => void;
  /**
   * `false` silences every warn-once diagnostic and the shadow summary; `{ WRN_RL_UNKEYED: false }` one
   * of them. Defaults to `true`.
   */
  validate?: ValidateOption;
  /**
   * Server-wide load shedding before any policy: `{ maxInFlight: 100 }` (a fixed cap) or
   * `{ adaptive: {} }` (a cap found from latency and event-loop delay), with an optional `priority`
   * function; past the cap a request gets 503 problem+json with `Retry-After`. Pass one
   * `createLoadShedder(...)` to several middlewares to share one cap. Defaults to none.
   */
  loadShedding?: LoadShedderOptions<Req> | LoadShedder<Req>;
  /** The older spelling of `loadShedding`. Still accepted; pass one of the two. */
  shed?: LoadShedderOptions<Req> | LoadShedder<Req>;
  /**
   * How long an asynchronous `key`, `cost`, `skip` or `onLimited` may take, in ms. Past it (or when the
   * callback throws or rejects) the request gets the documented fallback: `key` -> the shared
   * `'unkeyed'` bucket, `cost` -> the default cost, `skip` -> not skipped (counted), `onLimited` -> the
   * default body; warned once (`WRN_RL_HOOK_TIMEOUT`, `WRN_RL_HOOK_FAILED`). Defaults to `5000`.
   */
  callbackTimeoutMs?: number;
  /** The older spelling of `callbackTimeoutMs`. Still accepted; pass one of the two. */
  hookTimeoutMs?: number;
  /**
   * The log budget of this middleware: at most `lines` lines per `intervalMs`, then one
   * `WRN_RL_LOG_SUPPRESSED` line with the count; `intervalMs` is also the period of the shadow-mode
   * summary (`WRN_RL_SHADOW_LIMITED`). Defaults to `{ lines: 10, intervalMs: 60_000 }`.
   */
  logLimit?: LogRateOptions;
  /** The older spelling of `logLimit`. Still accepted; pass one of the two. */
  logRate?: LogRateOptions;
}

/**
 * Options renamed so that their names explain themselves, by older spelling: both keep working, and
 * passing both spellings of one option is an error. `shadow` (`{ policies }`) became `shadowPolicies`.
 */
export const OLDER_SPELLINGS: Readonly<Record<string, string>> = Object.freeze({
  pk: 'partitionKey',
  shed: 'loadShedding',
  hookTimeoutMs: 'callbackTimeoutMs',
  logRate: 'logLimit',
  shadow: 'shadowPolicies',
});
/** The renames `parseRateLimitOptions` applies itself (the limiter's parser reads `shadow`). */
const { shadow: _limiterReadsIt, ...ADAPTER_RENAMES } = OLDER_SPELLINGS;

/** Default of `callbackTimeoutMs`. */
export const DEFAULT_CALLBACK_TIMEOUT_MS = 5000;
/** The older name of `DEFAULT_CALLBACK_TIMEOUT_MS`. */
export const DEFAULT_HOOK_TIMEOUT_MS = DEFAULT_CALLBACK_TIMEOUT_MS;

/** `RateLimitOptions` validated, defaults resolved. */
// biome-ignore lint/suspicious/noExplicitAny: see CostFunction.
export interface RateLimitConfig<Req = any> {
  readonly limiterOptions: LimiterOptions;
  /** Plan, per-policy keys and refund-on-finish options (http/handler/request-plans.ts). */
  readonly plans: PlanHttpConfig<Req>;
  readonly clock: Clock;
  /** The logger the user set; undefined means the adapter's (Fastify's request logger) or `console`. */
  readonly logger: Logger | undefined;
  readonly key: KeyFunction<Req>;
  readonly cost: CostFunction<Req> | undefined;
  readonly skip: ((request: Req) => boolean | Promise<boolean>) | undefined;
  readonly headers: HeadersOption;
  /** The `pk` parameter's hash of a key, built once from the `partitionKey` option (or `pk`); undefined when not set. */
  readonly partitionKey: PartitionKeyFunction | undefined;
  readonly problemTypes: Readonly<Record<ProblemKind, string>>;
  readonly extendProblem: ProblemOptions<Req>['extend'];
  readonly onLimited: RateLimitOptions<Req>['onLimited'];
  readonly onDecision: RateLimitOptions<Req>['onDecision'];
  readonly validate: ValidateOption;
  /** The load shedder (`loadShedding`), undefined when none. */
  readonly shedder: LoadShedder<Req> | undefined;
  /** How long a user callback may take, ms (`callbackTimeoutMs`, or its older spelling `hookTimeoutMs`). */
  readonly callbackTimeoutMs: number;
  /** The budget of log lines (`logLimit`, or its older spelling `logRate`). */
  readonly logLimit: Readonly<Required<LogRateOptions>>;
  /** Values of the adapter-specific keys the adapter declared (e.g. Fastify's `hook`), unvalidated. */
  readonly adapterOptions: Readonly<Record<string, unknown>>;
}

/** The limiter's own options, passed through to `createLimiter` (which validates them); `cost` is read here. */
const { cost: _readHere, ...LIMITER_KEYS } = LIMITER_OPTION_KEYS;
const KEYS: KeysEnum<RateLimitOptions> = {
  ...LIMITER_KEYS,
  ...PLAN_HTTP_KEYS,
  key: true,
  cost: true,
  skip: true,
  headers: true,
  partitionKey: true,
  pk: true,
  problem: true,
  onLimited: true,
  onDecision: true,
  validate: true,
  loadShedding: true,
  shed: true,
  callbackTimeoutMs: true,
  hookTimeoutMs: true,
  logLimit: true,
  logRate: true,
};
const PROBLEM_KEYS: KeysEnum<ProblemOptions> = { types: true, extend: true };

function parseHeaders(value: unknown): HeadersOption {
  if (value === undefined) return 'draft-11';
  const list = `one of ${HEADER_MODES.map((m) => (m === false ? 'false' : `'${m}'`)).join(', ')}`;
  if (!Array.isArray(value)) {
    if (!HEADER_MODES.includes(value as HeaderMode)) {
      // express-rate-limit's standardHeaders: 'draft-8', say: another revision of the same IETF draft.
      const draft = typeof value === 'string' && /^draft-\d+$/.test(value) ? "; the draft's latest revision here is 'draft-11'" : '';
      // koa-ratelimit's `headers` renames its fields.
      const names = typeof value === 'object' && value !== null ? '; header names come with the format: rename them in a middleware' : '';
      throw new RateLimitConfigError('ERR_RL_INVALID_HEADERS', 'headers', `must be ${list}, or a list of them${draft}${names}`, value);
    }
    return value as HeaderMode;
  }
  const modes = value as unknown[];
  if (modes.length === 0) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_HEADERS',
      'headers',
      'as a list names at least one format; for no rate-limit header write false',
      value,
    );
  }
  const standard = modes.filter((m) => m !== 'legacy');
  const valid =
    modes.every((m) => m !== false && HEADER_MODES.includes(m as HeaderMode)) &&
    new Set(modes).size === modes.length &&
    standard.length <= 1;
  if (!valid) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_HEADERS',
      'headers',
      "as a list must name each format once, at most one of 'draft-11', 'draft-7', 'draft-6' (they share header names), e.g. ['legacy', 'draft-7']",
      value,
    );
  }
  return Object.freeze([...modes]) as HeadersOption;
}

const LOG_RATE_KEYS: KeysEnum<LogRateOptions> = { lines: true, intervalMs: true };

function positiveIntegerOr(value: unknown, path: string, fallback: number, example: string): number {
  return value === undefined
    ? fallback
    : positiveInteger(value, 'ERR_RL_INVALID_OPTION', path, `must be a positive integer, e.g. ${example}`);
}

function parseLogRate(value: unknown, path: string): Readonly<Required<LogRateOptions>> {
  if (value === undefined) return DEFAULT_LOG_RATE;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RateLimitConfigError('ERR_RL_INVALID_OPTION', path, 'must be an object like { lines: 10, intervalMs: 60_000 }', value);
  }
  const rate = omitUndefined(value as LogRateOptions);
  rejectUnknownKeys(rate, LOG_RATE_KEYS, path);
  return Object.freeze({
    lines: positiveIntegerOr(rate.lines, `${path}.lines`, DEFAULT_LOG_RATE.lines, '10'),
    intervalMs: positiveIntegerOr(rate.intervalMs, `${path}.intervalMs`, DEFAULT_LOG_RATE.intervalMs, '60_000'),
  });
}

/** The load shedder of `value`; `path` is the option as the user spelled it (`loadShedding`, or `shed`), for errors. */
function shedderOf<Req>(value: RateLimitOptions<Req>['loadShedding'], path: string): LoadShedder<Req> | undefined {
  return value === undefined ? undefined : isLoadShedder(value) ? value : createLoadShedder(value, path);
}

/** The key factories themselves: `key: keys.ip` (not called) would answer every request with a function as key. */
function checkKeyOption<Req>(key: RateLimitOptions<Req>['key']): void {
  const factory = (Object.entries(keys) as [string, unknown][]).find(([, f]) => f === key);
  if (factory === undefined) return;
  throw new RateLimitConfigError(
    'ERR_RL_KEY_FACTORY',
    'key',
    `is the factory keys.${factory[0]} itself; call it to get a key function: key: keys.${factory[0]}(${factory[0] === 'ip' ? '' : '…'})`,
    key,
  );
}

function optionalFunction<T>(value: T | undefined, path: string, hint: string): T | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new RateLimitConfigError('ERR_RL_INVALID_OPTION', path, `must be a function, e.g. ${hint}`, value);
  }
  return value;
}

function parseProblemTypes(problem: ProblemOptions): Readonly<Record<ProblemKind, string>> {
  const types = problem.types;
  if (types === undefined) return PROBLEM_TYPES;
  if (types === null || typeof types !== 'object') {
    throw new RateLimitConfigError('ERR_RL_INVALID_OPTION', 'problem.types', 'must be an object of type URIs', types);
  }
  rejectUnknownKeys(omitUndefined(types), PROBLEM_TYPES, 'problem.types');
  const out = { ...PROBLEM_TYPES };
  for (const [kind, uri] of Object.entries(omitUndefined(types)) as [ProblemKind, unknown][]) {
    if (typeof uri !== 'string' || uri === '' || /[\s"<>\\^`{|}]/.test(uri)) {
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_OPTION',
        `problem.types.${kind}`,
        'must be a URI reference (an absolute URI is recommended)',
        uri,
      );
    }
    out[kind] = uri;
  }
  return Object.freeze(out);
}

/**
 * Validates adapter options once. `adapterKeys` lists the extra keys this adapter accepts (returned in
 * `adapterOptions` for the adapter to check). Throws `RateLimitConfigError` naming the option.
 */
export function parseRateLimitOptions<Req>(input: RateLimitOptions<Req>, adapterKeys: readonly string[] = []): RateLimitConfig<Req> {
  const known: Record<string, true> = { ...KEYS };
  for (const k of adapterKeys) known[k] = true;
  const read = readOptions(input, known, 'options', '{ policies: [{ limit: 100, windowMs: 60_000 }] }', PEER_OPTIONS) as Record<
    string,
    unknown
  >;
  const options = renameOptions(read, ADAPTER_RENAMES, '') as RateLimitOptions<Req> & Record<string, unknown>;
  // Errors name an option as the user spelled it.
  const spelled = (current: string) =>
    Object.keys(ADAPTER_RENAMES).find((old) => ADAPTER_RENAMES[old] === current && read[old] !== undefined) ?? current;
  const adapterOptions: Record<string, unknown> = {};
  for (const k of adapterKeys) if (options[k] !== undefined) adapterOptions[k] = options[k];

  const picked: Record<string, unknown> = {};
  for (const k of Object.keys(LIMITER_KEYS)) if (options[k] !== undefined) picked[k] = options[k];
  const plansHttp = parsePlanHttpOptions<Req>(options);
  if (plansHttp.policies !== undefined) picked.policies = plansHttp.policies;
  if (plansHttp.plans !== undefined) picked.plans = plansHttp.plans;
  if (plansHttp.shadowPolicies !== undefined) picked.shadowPolicies = plansHttp.shadowPolicies;
  if (plansHttp.shadow !== undefined) picked.shadow = plansHttp.shadow;
  const limiterOptions = picked as unknown as LimiterOptions;
  const clock = options.clock ?? monotonicClock;
  limiterOptions.clock = clock;

  let cost: CostFunction<Req> | undefined;
  if (typeof options.cost === 'number') limiterOptions.cost = options.cost;
  else if (typeof options.cost === 'function') cost = options.cost;
  else if (options.cost !== undefined) {
    throw new RateLimitConfigError('ERR_RL_INVALID_COST', 'cost', 'must be a number or a function (request) => number', options.cost);
  }

  const headers = parseHeaders(options.headers);
  const problem = options.problem ?? {};
  if (problem === null || typeof problem !== 'object') {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_OPTION',
      'problem',
      'must be an object like { types: { limited: "https://…" } }',
      problem,
    );
  }
  rejectUnknownKeys(omitUndefined(problem), PROBLEM_KEYS, 'problem');
  const validate = parseValidate(options.validate);
  const partitionKey = options.partitionKey;
  if (partitionKey !== undefined && partitionKey !== false && !headerModes(headers).includes('draft-11')) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_PK',
      spelled('partitionKey'),
      "only exists in the 'draft-11' header format; remove it or set headers: 'draft-11'",
      partitionKey,
    );
  }

  // Built here, once, so that an error names the option as the user spelled it.
  const partitionKeyHash = createPartitionKey(partitionKey, spelled('partitionKey'));
  checkKeyOption(options.key);
  checkLogger(options.logger, 'logger');
  return Object.freeze({
    limiterOptions,
    plans: plansHttp.config,
    clock,
    logger: options.logger,
    key: optionalFunction(options.key, 'key', 'keys.ip() or (req) => req.user.id') ?? keys.ip(),
    cost,
    skip: optionalFunction(options.skip, 'skip', "(req) => req.path === '/health'"),
    headers,
    partitionKey: partitionKeyHash,
    problemTypes: parseProblemTypes(problem),
    extendProblem: optionalFunction(problem.extend, 'problem.extend', '(req) => ({ instance: req.url })'),
    onLimited: optionalFunction(options.onLimited, 'onLimited', '({ problem }) => ({ body: { error: problem.title } })'),
    onDecision: optionalFunction(options.onDecision, 'onDecision', '(decision, req) => metrics.record(decision)'),
    validate,
    shedder: shedderOf(options.loadShedding, spelled('loadShedding')),
    callbackTimeoutMs: positiveIntegerOr(options.callbackTimeoutMs, spelled('callbackTimeoutMs'), DEFAULT_CALLBACK_TIMEOUT_MS, '5000'),
    logLimit: parseLogRate(options.logLimit, spelled('logLimit')),
    adapterOptions: Object.freeze(adapterOptions),
  });
}
