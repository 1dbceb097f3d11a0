/**
 * @module `createRateLimitHandler`: the whole per-request flow shared by the adapters. An adapter hands
 * it the plain parts of a request; the handler skips, derives the key and the cost, asks the limiter,
 * reports, and plans the response. The adapter then only writes the plan.
 */
import { createLimiter, type Limiter } from '../create-limiter.js';
import { createDiagnostics, type Diagnostics } from '../diagnostics.js';
import { describeValue } from '../errors.js';
import { toMilli } from '../internal/fixed-point.js';
import { type Logger, safeLog, toLogger } from '../logging.js';
import { isPromiseLike } from '../stores/store.js';
import type { Decision } from '../types.js';
import type { HeaderPair } from './header-values.js';
import { createHeaderWriter } from './header-writer.js';
import { createPartitionKey } from './partition-key.js';
import { createProblemBodyWriter, PROBLEM_CONTENT_TYPE, type ProblemDetails } from './problem.js';
import { parseRateLimitOptions, type RateLimitConfig, type RateLimitOptions } from './rate-limit-options.js';
import type { HeaderBag, RequestView } from './request-view.js';
import { type ResponseConfig, type ResponsePlan, respond } from './respond.js';

/** The key of requests whose key function returned no usable key: one shared bucket, never a bypass. */
export const UNKEYED_KEY = 'unkeyed';

/** The plain parts of a request an adapter hands the handler. */
export interface RequestInput<Req> {
  readonly request: Req;
  /** `socket.remoteAddress`. */
  readonly remoteAddress: string | undefined;
  readonly headers: HeaderBag;
  readonly method: string;
  readonly url: string;
  /** The route template the framework matched (`/users/:id`), for the `http.route` metric attribute; never the raw URL. */
  readonly route?: string | undefined;
  /** A request-scoped logger (Fastify's `request.log`), used when the user set no `logger`. */
  readonly logger?: Logger;
}

export interface HandledRequest {
  readonly decision: Decision;
  readonly plan: ResponsePlan;
}

// biome-ignore lint/suspicious/noExplicitAny: the default lets one handler type serve every framework's request.
export interface RateLimitHandler<Req = any> {
  readonly limiter: Limiter;
  readonly config: RateLimitConfig<Req>;
  /** Undefined when the request is skipped: send nothing, count nothing. */
  handle(input: RequestInput<Req>): Promise<HandledRequest | undefined>;
  /**
   * Framework diagnostic: warns once (`WRN_RL_PERMISSIVE_TRUST_PROXY`) when `permissive` is true, i.e.
   * the framework's proxy setting trusts every X-Forwarded-For hop. `setting` names it for the message.
   */
  checkTrustProxy(setting: string, permissive: boolean, logger?: Logger): void;
}

/** Validates `options` and builds the limiter; throws `RateLimitConfigError` on bad options. */
export function createRateLimitHandler<Req>(options: RateLimitOptions<Req>, adapterKeys: readonly string[] = []): RateLimitHandler<Req> {
  const config = parseRateLimitOptions(options, adapterKeys);
  const limiter = createLimiter(config.limiterOptions);
  const partitionKey = createPartitionKey(config.pk, 'pk');
  const responseConfig: ResponseConfig = Object.freeze({
    mode: limiter.mode,
    headers: createHeaderWriter(config.headers, limiter.policies, partitionKey),
    problemTypes: config.problemTypes,
    units: new Map(limiter.policies.map((p) => [p.name, p.unit])),
    problemBody: createProblemBodyWriter(limiter.policies, config.problemTypes),
  });
  const raised = new Set<string>();
  const baseLogger: Logger = toLogger(config.logger);
  const baseDiagnostics = createDiagnostics(baseLogger, config.validate, raised);
  const { clock, key: keyOf, cost: costOf, skip, onDecision, onLimited, extendProblem } = config;

  function loggerFor(input: { logger?: Logger | undefined }): Logger {
    return config.logger ?? input.logger ?? baseLogger;
  }

  function diagnosticsFor(logger: Logger): Diagnostics {
    return logger === baseLogger ? baseDiagnostics : createDiagnostics(logger, config.validate, raised);
  }

  function checkKey(key: unknown, view: RequestView<Req>): string {
    if (typeof key === 'string' && key !== '') return key;
    view.diagnostics.warn(
      'WRN_RL_UNKEYED',
      `the key function returned ${describeValue(key)} instead of a non-empty string; such requests share one '${UNKEYED_KEY}' bucket. ` +
        'Return a key for every request, e.g. keys.first(keys.user(fn), keys.ip()).',
    );
    return UNKEYED_KEY;
  }

  function checkCost(cost: unknown, diagnostics: Diagnostics): number | undefined {
    if (typeof cost === 'number' && toMilli(cost) > 0) return cost;
    diagnostics.warn(
      'WRN_RL_INVALID_COST',
      `the cost function returned ${describeValue(cost)}; a cost must be a positive multiple of 1/1000. Such requests are charged the default cost.`,
    );
    return undefined;
  }

  function report(decision: Decision, request: Req, logger: Logger, diagnostics: Diagnostics): void {
    if (decision.mode === 'shadow' && decision.limited) {
      safeLog(
        logger,
        'warn',
        {
          code: 'WRN_RL_SHADOW_LIMITED',
          key: decision.key,
          reason: decision.reason,
          policy: decision.policy,
          retryAfterMs: decision.retryAfterMs,
        },
        'WRN_RL_SHADOW_LIMITED: shadow mode would have rejected this request; let through',
      );
    }
    if (onDecision === undefined) return;
    try {
      onDecision(decision, request);
    } catch (error) {
      diagnostics.warn('WRN_RL_HOOK_FAILED', `onDecision threw (${String(error)}); the request went on unaffected.`);
    }
  }

  function extend(problem: ProblemDetails, request: Req, diagnostics: Diagnostics): ProblemDetails {
    if (extendProblem === undefined) return problem;
    try {
      const extra = extendProblem(request, problem);
      if (extra === undefined) return problem;
      const out: Record<string, unknown> = { ...problem, ...extra, type: problem.type, status: problem.status };
      if (problem.retryAfter === undefined) delete out.retryAfter;
      else out.retryAfter = problem.retryAfter;
      return out as unknown as ProblemDetails;
    } catch (error) {
      diagnostics.warn('WRN_RL_HOOK_FAILED', `problem.extend threw (${String(error)}); the problem details were sent without its members.`);
      return problem;
    }
  }

  async function replaceBody(plan: ResponsePlan, decision: Decision, request: Req, diagnostics: Diagnostics): Promise<ResponsePlan> {
    if (plan.problem === undefined || plan.status === undefined) return plan;
    const problem = extend(plan.problem, request, diagnostics);
    const { action, status, headers: planHeaders, delayMs } = plan;
    const withProblem: ResponsePlan =
      problem === plan.problem ? plan : { action, status, headers: planHeaders, problem, body: JSON.stringify(problem), delayMs };
    if (onLimited === undefined) return withProblem;
    try {
      const custom = await onLimited({ request, decision, status: plan.status, problem });
      if (custom === undefined) return withProblem;
      const isText = typeof custom.body === 'string';
      const contentType = custom.contentType ?? (isText ? 'text/plain; charset=utf-8' : 'application/json');
      const headers: HeaderPair[] = plan.headers.map((h) => (h[0] === 'Content-Type' ? ['Content-Type', contentType] : h));
      return {
        action,
        status,
        headers,
        problem: withProblem.problem,
        body: isText ? (custom.body as string) : JSON.stringify(custom.body),
        delayMs,
      };
    } catch (error) {
      diagnostics.warn('WRN_RL_HOOK_FAILED', `onLimited threw (${String(error)}); the default ${PROBLEM_CONTENT_TYPE} body was sent.`);
      return withProblem;
    }
  }

  return {
    limiter,
    config,
    async handle(input) {
      const { request } = input;
      if (skip !== undefined) {
        const skipped = skip(request);
        if (isPromiseLike(skipped) ? await skipped : skipped) return undefined;
      }
      const logger = loggerFor(input);
      const diagnostics = diagnosticsFor(logger);
      const view: RequestView<Req> = {
        remoteAddress: input.remoteAddress,
        headers: input.headers,
        method: input.method,
        url: input.url,
        request,
        diagnostics,
      };
      // Callbacks are awaited only when they return a promise: a synchronous request takes no extra tick.
      const keyOut = keyOf(request, view);
      const key = checkKey(isPromiseLike(keyOut) ? await keyOut : keyOut, view);
      let cost: number | undefined;
      if (costOf !== undefined) {
        const costOut = costOf(request);
        cost = checkCost(isPromiseLike(costOut) ? await costOut : costOut, diagnostics);
      }
      const pending = limiter.decide(key, { cost, route: input.route, request });
      const decision = isPromiseLike(pending) ? await pending : pending;
      report(decision, request, logger, diagnostics);
      const plan = respond(decision, responseConfig, clock);
      // The problem object is built only when a hook may change the body; the default body is already serialized.
      const customized = plan.action === 'reject' && (extendProblem !== undefined || onLimited !== undefined);
      return { decision, plan: customized ? await replaceBody(plan, decision, request, diagnostics) : plan };
    },
    checkTrustProxy(setting, permissive, logger) {
      if (!permissive) return;
      diagnosticsFor(loggerFor({ logger })).warn(
        'WRN_RL_PERMISSIVE_TRUST_PROXY',
        `${setting} trusts every proxy, so the framework's client IP (req.ip) comes from a header any client can forge. ` +
          "tollgate's keys.ip() ignores it and walks X-Forwarded-For through its own trustedProxies; custom key functions that read req.ip can be bypassed.",
      );
    },
  };
}
