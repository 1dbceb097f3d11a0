/**
 * @module `createRateLimitHandler`: the whole per-request flow shared by the adapters. An adapter hands
 * it the plain parts of a request and a `ResponseTarget` (how to write headers and a rejection in its
 * framework); `run` skips, derives the key and the cost, asks the limiter, reports, plans the response,
 * and writes it only while the response has not started. `run` never rejects: user callbacks that
 * throw, reject or hang get a documented fallback, and anything unexpected lets the request through
 * with one logged error. The adapter then only calls the framework's "next".
 */

import { createDiagnostics, type Diagnostics } from '../../diagnostics.js';
import { describeValue } from '../../errors.js';
import { requestCostToMilli } from '../../internal/fixed-point.js';
import { hasConcurrencyQueue } from '../../leases/lease-queue.js';
import { createLimiter, type Limiter } from '../../limiter/create-limiter.js';
import { consoleLogger, createLogGate, isAbstractNoopLogger, type Logger, safeLog, toLogger } from '../../logging.js';
import { ShedObserver } from '../../observability/shed-observer.js';
import type { LoadShedder, ShedTicket } from '../../shedding/load-shedder.js';
import { isPromiseLike } from '../../stores/store.js';
import type { Decision } from '../../types.js';
import { createPartitionKey } from '../keys/partition-key.js';
import type { HeaderBag, RequestView } from '../request-view.js';
import type { HeaderPair } from '../response/header-values.js';
import { createHeaderWriter } from '../response/header-writer.js';
import { createProblemBodyWriter, PROBLEM_CONTENT_TYPE, type ProblemDetails } from '../response/problem.js';
import { type ResponseConfig, type ResponsePlan, respond } from '../response/respond.js';
import { type ClosableResponse, waitUnlessClosed } from '../response/shaping-delay.js';
import { planShed } from '../response/shed-response.js';
import { type Bounded, boundedCall } from './bounded-call.js';
import { parseRateLimitOptions, type RateLimitConfig, type RateLimitOptions } from './rate-limit-options.js';
import { type FinishingResponse, isFinishingResponse, onceSettled } from './request-plans.js';
import { abortOnClose, type DoneResponse, onHandlerSettled, onResponseDone } from './response-done.js';

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
  /**
   * The Node `IncomingMessage` under the framework's request. A handler charges one request once:
   * the same middleware instance mounted twice on one request's path (`/api` and `/api/v1`) lets it
   * through the second time without counting or writing anything.
   */
  readonly raw?: object;
}

/** The Node response state `run` reads: `ServerResponse` fits as it is. */
export interface RawResponse extends ClosableResponse {
  readonly headersSent: boolean;
  readonly writableEnded: boolean;
  destroy(): unknown;
}

/** How an adapter writes in its framework. `run` calls these only while the response has not started. */
export interface ResponseTarget {
  /** The Node `ServerResponse` (Express `res`, Koa `ctx.res`, Fastify `reply.raw`). */
  readonly raw: RawResponse;
  /** Attaches the decision to the request (`req.rateLimit`, `ctx.state.rateLimit`), before anything is written. */
  attach(decision: Decision): void;
  /** Framework state that also means "already answered" (Fastify's `reply.sent`, which covers hijack). */
  sent?(): boolean;
  header(name: string, value: string): void;
  /** Answers the request with `status` and `body` (headers are already set). */
  reject(status: number, body: string): void;
  /** The request will get no answer from the framework (the client left, or the response was aborted). */
  abandon(): void;
}

export interface HandledRequest {
  readonly decision: Decision;
  readonly plan: ResponsePlan;
}

/** What the adapter does after `run`: `'next'` continues to the route; `'stop'` does nothing more. */
export type RunOutcome = 'next' | 'stop';

// biome-ignore lint/suspicious/noExplicitAny: the default lets one handler type serve every framework's request.
export interface RateLimitHandler<Req = any> {
  readonly limiter: Limiter;
  readonly config: RateLimitConfig<Req>;
  /** The logger of lines not tied to a request (shadow summary, store failures), through the log budget. */
  readonly logger: Logger;
  /** This middleware's warn-once diagnostics (for the adapter's framework checks). */
  readonly diagnostics: Diagnostics;
  /** Undefined when the request is skipped: send nothing, count nothing. Never rejects for a user callback's fault. */
  handle(input: RequestInput<Req>): Promise<HandledRequest | undefined>;
  /**
   * The whole flow, writing through `target`; never rejects. A request admitted by the load shedder
   * (`shed`) or holding concurrency leases keeps them until the handler is done with `target.raw`
   * (finish, or its `end()` after the client went away); see `settled` for frameworks that know more.
   */
  run(input: RequestInput<Req>, target: ResponseTarget): Promise<RunOutcome>;
  /** The server-wide load shedder (`shed` option), for `shedder.state()`; undefined when none. */
  readonly shedder: LoadShedder<Req> | undefined;
  /**
   * For adapters that see the handler settle (Koa's `await next()`): the handler of `response` is done,
   * so its slot and leases go back now if the client already left (else when the response is written).
   */
  settled(response: object): void;
  /**
   * Framework diagnostic: warns once (`WRN_RL_PERMISSIVE_TRUST_PROXY`) when `permissive` is true, i.e.
   * the framework's proxy setting lets a client choose its own IP. `setting` names it for the message.
   */
  checkTrustProxy(setting: string, permissive: boolean, logger?: Logger): void;
  /** Writes pending summaries and stops their timers (the adapters call it on close). */
  close(): void;
}

/** What the 503 of a shed request needs. */
interface ShedderTicketless {
  readonly retryAfterMs: number;
  readonly priority: import('../../shedding/load-shedder.js').ShedPriority;
  readonly state: import('../../shedding/load-shedder.js').LoadShedderState;
}

/** Adapter context for `createRateLimitHandler`. */
export interface HandlerContext {
  /** Extra option keys this adapter accepts (returned unvalidated in `config.adapterOptions`). */
  readonly adapterKeys?: readonly string[];
  /**
   * The app's logger (Fastify's `fastify.log`), used when the user set no `logger`. Fastify's no-op
   * logger (no `logger` given to `Fastify()`) counts as none: tollgate then logs to `console`.
   */
  readonly appLogger?: Logger | undefined;
}

function appLoggerOf(logger: Logger | undefined): Logger | undefined {
  return logger === undefined || isAbstractNoopLogger(logger) ? undefined : logger;
}

/** True once anything of the response went out, or the framework says it answered. */
function started(target: ResponseTarget): boolean {
  const raw = target.raw;
  return raw.headersSent || raw.writableEnded || raw.destroyed === true || (target.sent?.() ?? false);
}

/** Validates `options` and builds the limiter; throws `RateLimitConfigError` on bad options. */
export function createRateLimitHandler<Req>(
  options: RateLimitOptions<Req>,
  context: HandlerContext | readonly string[] = {},
): RateLimitHandler<Req> {
  const ctx: HandlerContext = Array.isArray(context) ? { adapterKeys: context as readonly string[] } : (context as HandlerContext);
  const config = parseRateLimitOptions(options, ctx.adapterKeys ?? []);
  const { clock, key: keyOf, cost: costOf, skip, onDecision, onLimited, extendProblem, hookTimeoutMs } = config;
  const appLogger = appLoggerOf(ctx.appLogger);
  // Every line of this middleware goes through one budget; the summary of what it dropped goes around it.
  const target: Logger = config.logger === undefined ? (appLogger ?? consoleLogger) : toLogger(config.logger);
  const gate = createLogGate(config.logRate, target);
  const baseLogger = gate.wrap(target);
  const limiter = createLimiter({ ...config.limiterOptions, logger: baseLogger });
  const partitionKey = createPartitionKey(config.pk, 'pk');
  // One response config per plan: headers and problem bodies describe the plan that applied.
  const responseConfigs = new Map<string, ResponseConfig>();
  for (const [name, policies] of limiter.plans) {
    responseConfigs.set(
      name,
      Object.freeze({
        mode: limiter.mode,
        headers: createHeaderWriter(config.headers, policies, partitionKey),
        problemTypes: config.problemTypes,
        units: new Map(policies.map((p) => [p.name, p.unit])),
        problemBody: createProblemBodyWriter(policies, config.problemTypes),
      }),
    );
  }
  const responseConfig = responseConfigs.get(limiter.defaultPlan) as ResponseConfig;
  const planHttp = config.plans;
  /** Every policy name that needs a key when policies carry their own keys (all plans, and shadow). */
  const keyedNames =
    planHttp.policyKeys.size === 0
      ? undefined
      : [...new Set([...[...limiter.plans.values()].flat(), ...limiter.shadowPolicies].map((p) => p.name))];
  const refunds = planHttp.skipSuccessfulRequests || planHttp.skipFailedRequests;
  const raised = new Set<string>();
  const baseDiagnostics = createDiagnostics(baseLogger, config.validate, raised);
  const charged = new WeakSet<object>();
  const requestLoggers = new WeakMap<Logger, Logger>();
  const shadow = createShadowSummary(target, config.logRate.intervalMs, baseDiagnostics);

  function loggerFor(input: { logger?: Logger | undefined }): Logger {
    if (config.logger !== undefined || input.logger === undefined || isAbstractNoopLogger(input.logger)) return baseLogger;
    let wrapped = requestLoggers.get(input.logger);
    if (wrapped === undefined) {
      wrapped = gate.wrap(input.logger);
      requestLoggers.set(input.logger, wrapped);
    }
    return wrapped;
  }

  function diagnosticsFor(logger: Logger): Diagnostics {
    return logger === baseLogger ? baseDiagnostics : createDiagnostics(logger, config.validate, raised);
  }

  function hookFailed(diagnostics: Diagnostics, name: string, r: Bounded<unknown>, fallback: string): void {
    if (r.ok) return;
    if (r.timedOut) {
      diagnostics.warn('WRN_RL_HOOK_TIMEOUT', `${name} did not settle within hookTimeoutMs (${hookTimeoutMs} ms); ${fallback}`, {
        hook: name,
        hookTimeoutMs,
      });
    } else {
      diagnostics.warn('WRN_RL_HOOK_FAILED', `${name} threw or rejected; ${fallback}`, { hook: name, err: r.error });
    }
  }

  /** A user callback, bounded by hookTimeoutMs; synchronous results come back without a promise (no extra tick). */
  function settle<T>(fn: () => T | Promise<T>): Bounded<T> | Promise<Bounded<T>> {
    return boundedCall(fn, hookTimeoutMs);
  }

  function checkKey(key: unknown, view: RequestView<Req>): string {
    if (typeof key === 'string' && key !== '') return key;
    view.diagnostics.warn(
      'WRN_RL_UNKEYED',
      `the key function returned no non-empty string; such requests share one '${UNKEYED_KEY}' bucket. ` +
        'Return a key for every request, e.g. keys.first(keys.user(fn), keys.ip()).',
      { received: describeValue(key) },
    );
    return UNKEYED_KEY;
  }

  function checkCost(cost: unknown, diagnostics: Diagnostics): number | undefined {
    // A number too large to hold exactly (1e13, Infinity) is kept: the limiter answers it 413, never 1.
    if (typeof cost === 'number' && requestCostToMilli(cost) > 0) return cost;
    diagnostics.warn(
      'WRN_RL_INVALID_COST',
      'the cost function returned something other than a positive multiple of 1/1000; such requests are charged the default cost.',
      { received: describeValue(cost) },
    );
    return undefined;
  }

  function report(decision: Decision, request: Req, diagnostics: Diagnostics): void {
    if (decision.mode === 'shadow' && decision.limited) shadow.count(decision.policy, false);
    if (decision.shadow !== undefined && !decision.shadow.allowed) shadow.count(decision.shadow.policy, true);
    if (onDecision === undefined) return;
    try {
      onDecision(decision, request);
    } catch (error) {
      diagnostics.warn('WRN_RL_HOOK_FAILED', 'onDecision threw; the request went on unaffected.', { hook: 'onDecision', err: error });
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
      diagnostics.warn('WRN_RL_HOOK_FAILED', 'problem.extend threw; the problem details were sent without its members.', {
        hook: 'problem.extend',
        err: error,
      });
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
    const r = await settle(() => onLimited({ request, decision, status, problem }));
    if (!r.ok) {
      hookFailed(diagnostics, 'onLimited', r, `the default ${PROBLEM_CONTENT_TYPE} body was sent.`);
      return withProblem;
    }
    const custom = r.value;
    if (custom === undefined || custom === null) return withProblem;
    let body: string;
    try {
      body = typeof custom.body === 'string' ? custom.body : (JSON.stringify(custom.body) ?? 'null');
    } catch (error) {
      diagnostics.warn(
        'WRN_RL_HOOK_FAILED',
        `onLimited returned a body that is not JSON; the default ${PROBLEM_CONTENT_TYPE} body was sent.`,
        {
          hook: 'onLimited',
          err: error,
        },
      );
      return withProblem;
    }
    const isText = typeof custom.body === 'string';
    const contentType =
      typeof custom.contentType === 'string' && custom.contentType !== ''
        ? custom.contentType
        : isText
          ? 'text/plain; charset=utf-8'
          : 'application/json';
    const headers: HeaderPair[] = plan.headers.map((h) => (h[0] === 'Content-Type' ? ['Content-Type', contentType] : h));
    return { action, status, headers, problem: withProblem.problem, body, delayMs };
  }

  async function handle(input: RequestInput<Req>, response?: RawResponse): Promise<HandledRequest | undefined> {
    const { request } = input;
    const logger = loggerFor(input);
    const diagnostics = diagnosticsFor(logger);
    if (skip !== undefined) {
      const pendingSkip = settle(() => skip(request));
      const r = isPromiseLike(pendingSkip) ? await pendingSkip : pendingSkip;
      if (r.ok && r.value) return undefined;
      hookFailed(diagnostics, 'skip', r, 'the request was counted (not skipped).');
    }
    const view: RequestView<Req> = {
      remoteAddress: input.remoteAddress,
      headers: input.headers,
      method: input.method,
      url: input.url,
      request,
      diagnostics,
    };
    // Callbacks are awaited only when they return a promise: a synchronous request takes no extra tick.
    const pendingKey = settle(() => keyOf(request, view));
    const keyOut = isPromiseLike(pendingKey) ? await pendingKey : pendingKey;
    hookFailed(diagnostics, 'key', keyOut, `the request was counted in the shared '${UNKEYED_KEY}' bucket.`);
    const key = checkKey(keyOut.ok ? keyOut.value : undefined, view);
    let cost: number | undefined;
    if (costOf !== undefined) {
      const pendingCost = settle(() => costOf(request));
      const costOut = isPromiseLike(pendingCost) ? await pendingCost : pendingCost;
      hookFailed(diagnostics, 'cost', costOut, 'the request was charged the default cost.');
      cost = costOut.ok ? checkCost(costOut.value, diagnostics) : undefined;
    }
    let planName: string | undefined;
    if (planHttp.plan !== undefined) {
      const planFn = planHttp.plan;
      const planOut = await settle(() => planFn(request));
      hookFailed(diagnostics, 'plan', planOut, 'the default plan applied.');
      planName = planOut.ok && typeof planOut.value === 'string' ? planOut.value : undefined;
    }
    let target: string | Record<string, string> = key;
    if (keyedNames !== undefined) {
      // Several keys, one decision: each policy's own key, or the middleware's key.
      const keysByName: Record<string, string> = {};
      for (const name of keyedNames) {
        const own = planHttp.policyKeys.get(name);
        if (own === undefined) {
          keysByName[name] = key;
          continue;
        }
        const out = await settle(() => own(request, view));
        hookFailed(diagnostics, 'key', out, `the request was counted in the shared '${UNKEYED_KEY}' bucket.`);
        keysByName[name] = checkKey(out.ok ? out.value : undefined, view);
      }
      target = keysByName;
    }
    // A request waiting in a concurrency queue leaves it when the client goes away.
    const signal = queues && response !== undefined ? abortOnClose(response) : undefined;
    // Always an object: the route and the request go to the decision event (metrics, diagnostics channel).
    const checkOptions = { cost, plan: planName, signal, route: input.route, request };
    const pending = limiter.decide(target, checkOptions);
    const decision = isPromiseLike(pending) ? await pending : pending;
    report(decision, request, diagnostics);
    const plan = respond(decision, responseConfigs.get(decision.plan ?? '') ?? responseConfig, clock);
    // The problem object is built only when a hook may change the body; the default body is already serialized.
    const customized = plan.action === 'reject' && (extendProblem !== undefined || onLimited !== undefined);
    return { decision, plan: customized ? await replaceBody(plan, decision, request, diagnostics) : plan };
  }

  /**
   * skipSuccessfulRequests / skipFailedRequests: charged at admission, given back when the response
   * settles, by the rule in plan-options.ts (a client gone before the end counts as failed).
   */
  function refundWhenSettled(request: Req, response: FinishingResponse, decision: Decision, diagnostics: Diagnostics): void {
    onceSettled(response, (finished) => {
      void (async () => {
        let success = false;
        if (finished) {
          const r = await settle(() => planHttp.requestWasSuccessful(request, response));
          hookFailed(diagnostics, 'requestWasSuccessful', r, 'the request counted as failed.');
          success = r.ok && r.value === true;
        }
        if (success ? !planHttp.skipSuccessfulRequests : !planHttp.skipFailedRequests) return;
        try {
          await limiter.refund(decision);
        } catch (error) {
          diagnostics.warn('WRN_RL_REFUND_FAILED', 'giving back the charge of a request that should not count failed; it stays counted.', {
            err: error,
          });
        }
      })();
    });
  }

  /** Writes the plan; synchronous unless a shaping delay has to be waited out. */
  function write(handled: HandledRequest, out: ResponseTarget, diagnostics: Diagnostics): RunOutcome | Promise<RunOutcome> {
    const { decision, plan } = handled;
    out.attach(decision);
    if (started(out)) {
      // Something answered before the decision came (a timeout middleware, a stream): never write to it.
      diagnostics.warn(
        'WRN_RL_RESPONSE_STARTED',
        'the response had already started when the rate-limit decision came; no header was written. ' +
          'A rejected request is aborted rather than let through.',
        { action: plan.action, status: plan.status },
      );
      if (plan.action === 'pass') return 'next';
      if (!out.raw.writableEnded) out.raw.destroy();
      out.abandon();
      return 'stop';
    }
    for (const [name, value] of plan.headers) out.header(name, value);
    if (plan.action === 'reject') {
      out.reject(plan.status ?? 429, plan.body ?? '');
      return 'stop';
    }
    if (plan.delayMs > 0) {
      return waitUnlessClosed(plan.delayMs, out.raw).then((waited) => {
        if (waited) return 'next';
        out.abandon();
        return 'stop';
      });
    }
    return 'next';
  }

  const shedder = config.shedder;
  const shedObserver = shedder === undefined ? undefined : new ShedObserver(limiter.mode);
  const queues = hasConcurrencyQueue(config.limiterOptions);
  // Leases of a running handler are renewed every half lease time (the shortest lease of the policies).
  const leaseTimes = [...limiter.plans.values()]
    .flat()
    .filter((p) => p.algorithm === 'concurrency')
    .map((p) => p.windowMs);
  const renewEveryMs = leaseTimes.length === 0 ? 0 : Math.max(1, Math.floor(Math.min(...leaseTimes) / 2));
  /** Releases waiting for their handler, by response, for `settled`. */
  const holding = new WeakMap<object, (finished: boolean) => void>();

  /** Gives `release` back once the handler is done with `response`. */
  function hold(response: RawResponse, release: (finished: boolean) => void): void {
    let done = false;
    const once = (finished: boolean): void => {
      if (done) return;
      done = true;
      holding.delete(response);
      release(finished);
    };
    holding.set(response, once);
    // ServerResponse has 'finish', end() and writableFinished besides what RawResponse declares.
    onResponseDone(response as unknown as DoneResponse, once);
  }

  function writeShed(ticketless: ShedderTicketless, out: ResponseTarget): RunOutcome {
    if (started(out)) return 'next';
    const plan = planShed(ticketless.retryAfterMs, ticketless.priority, ticketless.state);
    for (const [name, value] of plan.headers) out.header(name, value);
    out.reject(503, plan.body ?? '');
    return 'stop';
  }

  return {
    limiter,
    config,
    logger: baseLogger,
    diagnostics: baseDiagnostics,
    shedder,
    handle: (input) => handle(input),
    settled(response) {
      const release = holding.get(response);
      if (release !== undefined) onHandlerSettled(response as DoneResponse, release);
    },
    async run(input, out) {
      const raw = input.raw;
      if (raw !== undefined) {
        if (charged.has(raw)) return 'next';
        charged.add(raw);
      }
      const logger = loggerFor(input);
      let ticket: ShedTicket | undefined;
      try {
        if (shedder !== undefined) {
          const priority = shedder.priorityOf(input.request);
          ticket = shedder.acquire(priority);
          if (ticket === undefined) {
            shedObserver?.shed(priority, input.route);
            return writeShed({ retryAfterMs: shedder.retryAfterMs, priority, state: shedder.state() }, out);
          }
        }
        const handled = await handle(input, out.raw);
        const lease = handled?.decision.release;
        const renew = handled?.decision.renew;
        const admitted = handled === undefined || handled.plan.action === 'pass';
        if (handled !== undefined && refunds && handled.decision.receipt !== undefined && isFinishingResponse(out.raw)) {
          refundWhenSettled(input.request, out.raw, handled.decision, diagnosticsFor(logger));
        }
        let outcome: RunOutcome = 'next';
        if (handled !== undefined) {
          const written = write(handled, out, diagnosticsFor(logger));
          outcome = isPromiseLike(written) ? await written : written;
        }
        const t = ticket;
        if (t === undefined && lease === undefined) return outcome;
        // A refusal is fast and says nothing about the server's latency: keep it out of the controller.
        const renewal = renew !== undefined && outcome === 'next' && renewEveryMs > 0 ? setInterval(renew, renewEveryMs) : undefined;
        renewal?.unref();
        const release = (finished: boolean): void => {
          if (renewal !== undefined) clearInterval(renewal);
          t?.release(finished && admitted);
          lease?.();
        };
        // The handler runs only on 'next'; otherwise nothing holds the slot.
        if (outcome === 'next') hold(out.raw, release);
        else release(false);
        return outcome;
      } catch (error) {
        ticket?.release(false);
        safeLog(
          logger,
          'error',
          { code: 'ERR_RL_HANDLER_FAILED', err: error },
          'ERR_RL_HANDLER_FAILED: the rate-limit middleware failed unexpectedly; the request was let through unlimited',
        );
        return started(out) ? 'stop' : 'next';
      }
    },
    checkTrustProxy(setting, permissive, logger) {
      if (!permissive) return;
      diagnosticsFor(loggerFor({ logger })).warn(
        'WRN_RL_PERMISSIVE_TRUST_PROXY',
        `${setting} lets a client choose its own IP: the framework's client IP (req.ip) comes from a header any client can forge. ` +
          "tollgate's keys.ip() ignores it and walks X-Forwarded-For through its own trustedProxies; custom key functions that read req.ip can be bypassed.",
      );
    },
    close() {
      shadow.close();
      gate.close();
    },
  };
}

interface ShadowSummary {
  /** Counts one would-be rejection by `policy` (`candidate`: a shadow candidate policy, not shadow mode). */
  count(policy: string, candidate: boolean): void;
  close(): void;
}

/**
 * Shadow mode's would-be rejections, counted and logged as one `WRN_RL_SHADOW_LIMITED` line per
 * interval: what a rollout needs (how many, by which policy), at a fixed log cost, and no request data.
 */
function createShadowSummary(logger: Logger, intervalMs: number, diagnostics: Diagnostics): ShadowSummary {
  const on = diagnostics.enabled('WRN_RL_SHADOW_LIMITED');
  let wouldReject = 0;
  let candidates = 0;
  const byPolicy: Record<string, number> = Object.create(null);
  let timer: ReturnType<typeof setTimeout> | undefined;

  function flush(): void {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (wouldReject + candidates === 0) return;
    safeLog(
      logger,
      'warn',
      { code: 'WRN_RL_SHADOW_LIMITED', wouldReject, candidateRejections: candidates, byPolicy: { ...byPolicy }, intervalMs },
      `WRN_RL_SHADOW_LIMITED: shadow policies would have rejected ${wouldReject + candidates} requests in the last interval; all were let through`,
    );
    wouldReject = 0;
    candidates = 0;
    for (const k of Object.keys(byPolicy)) delete byPolicy[k];
  }

  return {
    count(policy, candidate) {
      if (!on) return;
      if (candidate) candidates += 1;
      else wouldReject += 1;
      byPolicy[policy] = (byPolicy[policy] ?? 0) + 1;
      if (timer === undefined) {
        timer = setTimeout(flush, intervalMs);
        timer.unref?.();
      }
    },
    close: flush,
  };
}
