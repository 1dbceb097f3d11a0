/**
 * @module `createRateLimitHandler`: the whole per-request flow shared by the adapters. An adapter hands
 * it the plain parts of a request and a `ResponseTarget` (how to write headers and a rejection in its
 * framework); `run` skips, derives the key and the cost, asks the limiter, reports, plans the response,
 * and writes it only while the response has not started. `run` never rejects: user callbacks that
 * throw, reject or hang get a documented fallback, and anything unexpected lets the request through
 * with one logged error. The adapter then only calls the framework's "next".
 */

import type { Diagnostics } from '../../diagnostics.js';
import { isPromiseLike } from '../../internal/promise.js';
import { hasConcurrencyQueue } from '../../leases/lease-queue.js';
import { assembleLimiter } from '../../limiter/create-limiter.js';
import type { Limiter } from '../../limiter/limiter.js';
import { consoleLogger, createLogGate, isAbstractNoopLogger, type Logger, safeLog, toLogger } from '../../logging.js';
import { ShedObserver } from '../../observability/shed-observer.js';
import type { LoadShedder, ShedPriority, ShedTicket } from '../../shedding/load-shedder.js';
import type { Decision } from '../../types.js';
import { createHeaderWriter } from '../response/header-writer.js';
import { createProblemBodyWriter } from '../response/problem.js';
import type { ResponseConfig } from '../response/respond.js';
import { creationWatch } from './created-in-request.js';
import { CustomBody } from './custom-body.js';
import { RequestDecider } from './decide-request.js';
import type { HandledRequest, HandlerContext, RateLimitHandler, RequestInput, ResponseTarget, RunOutcome } from './handler-types.js';
import { parseRateLimitOptions, type RateLimitConfig, type RateLimitOptions } from './rate-limit-options.js';
import { RequestLoggers } from './request-loggers.js';
import { isFinishingResponse } from './request-plans.js';
import { ResponseHolds } from './response-holds.js';
import { SettledRefunds } from './settled-refunds.js';
import { createShadowSummary } from './shadow-summary.js';
import { UserHooks } from './user-hooks.js';
import { started, writePlan, writeShed } from './write-plan.js';

export type {
  HandledRequest,
  HandlerContext,
  RateLimitHandler,
  RawResponse,
  RequestInput,
  ResponseTarget,
  RunOutcome,
} from './handler-types.js';
export { UNKEYED_KEY } from './user-hooks.js';

function appLoggerOf(logger: Logger | undefined): Logger | undefined {
  return logger === undefined || isAbstractNoopLogger(logger) ? undefined : logger;
}

/** Validates `options` and builds the limiter; throws `RateLimitConfigError` on bad options. */
export function createRateLimitHandler<Req>(
  options: RateLimitOptions<Req>,
  context: HandlerContext | readonly string[] = {},
): RateLimitHandler<Req> {
  const ctx: HandlerContext = Array.isArray(context) ? { adapterKeys: context as readonly string[] } : (context as HandlerContext);
  const config = parseRateLimitOptions(options, ctx.adapterKeys ?? []);
  // Every line of this middleware goes through one budget; the summary of what it dropped goes around it.
  const target: Logger = config.logger === undefined ? (appLoggerOf(ctx.appLogger) ?? consoleLogger) : toLogger(config.logger);
  const gate = createLogGate(config.logLimit, target);
  const loggers = new RequestLoggers(config.logger, gate, target, config.validate);
  const limiter = assembleLimiter({ ...config.limiterOptions, logger: loggers.base }, ctx.nameByAdapter === true);
  const hooks = new UserHooks(config.callbackTimeoutMs);
  const shadow = createShadowSummary(target, config.logLimit.intervalMs, loggers.baseDiagnostics);
  const decider = new RequestDecider({
    config,
    limiter,
    hooks,
    body: new CustomBody(config.extendProblem, config.onLimited, hooks),
    shadow,
    responses: responseConfigs(config, limiter),
    queues: hasConcurrencyQueue(config.limiterOptions),
  });
  const run = createRun(config, limiter, loggers, decider, hooks);
  const firstRequest = creationWatch.watch();
  const handler: RateLimitHandler<Req> = {
    limiter,
    config,
    logger: loggers.base,
    diagnostics: loggers.baseDiagnostics,
    shedder: config.shedder,
    handle: async (input) => decider.handle(input, loggers.diagnostics(loggers.of(input))),
    settled: (response) => run.holds.settled(response),
    holding: config.shedder !== undefined || renewInterval(limiter) > 0,
    run(input, out) {
      // The first request asks whether this instance was made for it (created-in-request.ts), then hands
      // `run` over: no later request pays for the question.
      handler.run = run.run;
      firstRequest(loggers.diagnostics(loggers.of(input)));
      return run.run(input, out);
    },
    checkTrustProxy(setting, permissive, logger) {
      if (!permissive) return;
      loggers
        .diagnostics(loggers.of({ logger }))
        .warn(
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
  return handler;
}

/** One response config per plan: headers and problem bodies describe the plan that applied. */
function responseConfigs<Req>(config: RateLimitConfig<Req>, limiter: Limiter): Map<string, ResponseConfig> {
  const partitionKey = config.partitionKey;
  const out = new Map<string, ResponseConfig>();
  for (const [name, policies] of limiter.plans) {
    out.set(
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
  return out;
}

/** Half the shortest lease of the limiter's concurrency policies: how often a running handler's leases are renewed (0: none). */
function renewInterval(limiter: Limiter): number {
  const leaseTimes = [...limiter.plans.values()]
    .flat()
    .filter((p) => p.algorithm === 'concurrency')
    .map((p) => p.windowMs);
  return leaseTimes.length === 0 ? 0 : Math.max(1, Math.floor(Math.min(...leaseTimes) / 2));
}

/** Gives back the charge of a request that was never served (its client left before it was). */
function giveBack(limiter: Limiter, decision: Decision, diagnostics: Diagnostics): void {
  if (decision.receipt === undefined) return;
  limiter.refund(decision).catch((error: unknown) => {
    diagnostics.warn(
      'WRN_RL_REFUND_FAILED',
      'giving back the charge of a request whose client left before it was served failed; it stays counted.',
      {
        err: error,
      },
    );
  });
}

/** One mark per shedder, set on a request that holds one of its tickets (see `createRun`). */
const shedMarks = new WeakMap<object, symbol>();

function shedMarkOf(shedder: object): symbol {
  let mark = shedMarks.get(shedder);
  if (mark === undefined) {
    mark = Symbol('tollgate.shed');
    shedMarks.set(shedder, mark);
  }
  return mark;
}

/** `handler.run`: the whole flow through an adapter's target, and what the admitted requests hold. */
function createRun<Req>(
  config: RateLimitConfig<Req>,
  limiter: Limiter,
  loggers: RequestLoggers,
  decider: RequestDecider<Req>,
  hooks: UserHooks,
) {
  const { shedder } = config;
  const shedObserver = shedder === undefined ? undefined : new ShedObserver(limiter.mode, limiter.name);
  const refunds =
    config.plans.skipSuccessfulRequests || config.plans.skipFailedRequests ? new SettledRefunds(config.plans, limiter, hooks) : undefined;
  const holds = new ResponseHolds(renewInterval(limiter));
  // A mark on the request rather than a WeakSet of requests: every entry of a WeakSet is an ephemeron the
  // garbage collector has to visit, a quarter of a request's time in a profile of the handler alone.
  const charged = Symbol('tollgate.charged');
  // A shedder shared by stacked middlewares (a global one and a route's) admits a request once: the first
  // middleware's ticket holds its slot until the response is done, the others see the mark and take none.
  const shedMark = shedder === undefined ? undefined : shedMarkOf(shedder);

  /** Synchronous while the decision is (see RequestDecider.handle); never throws, never rejects. */
  function run(input: RequestInput<Req>, out: ResponseTarget): RunOutcome | Promise<RunOutcome> {
    const raw = input.raw;
    if (raw !== undefined) {
      const marks = raw as Record<symbol, true | undefined>;
      if (marks[charged] === true) return 'next';
      marks[charged] = true;
    }
    const logger = loggers.of(input);
    let ticket: ShedTicket | undefined;
    try {
      const diagnostics = loggers.diagnostics(logger);
      if (shedder !== undefined && (raw === undefined || (raw as Record<symbol, true | undefined>)[shedMark as symbol] !== true)) {
        const priority = priorityOf(shedder, input.request, diagnostics);
        ticket = shedder.acquire(priority);
        if (ticket === undefined) {
          shedObserver?.shed(priority, input.route);
          return writeShed({ retryAfterMs: shedder.retryAfterMs, priority, state: shedder.state() }, out);
        }
        if (raw !== undefined) (raw as Record<symbol, true | undefined>)[shedMark as symbol] = true;
      }
      const handled = decider.handle(input, diagnostics, out.raw);
      const outcome = isPromiseLike(handled)
        ? handled.then((h) => answer(input, out, h, diagnostics, ticket))
        : answer(input, out, handled, diagnostics, ticket);
      return isPromiseLike(outcome) ? outcome.then(undefined, (error: unknown) => failed(error, out, logger, ticket)) : outcome;
    } catch (error) {
      return failed(error, out, logger, ticket);
    }
  }

  /** Writes the planned answer and keeps what the admitted request holds. */
  function answer(
    input: RequestInput<Req>,
    out: ResponseTarget,
    handled: HandledRequest | undefined,
    diagnostics: Diagnostics,
    ticket: ShedTicket | undefined,
  ): RunOutcome | Promise<RunOutcome> {
    if (handled === undefined) {
      holds.keep(out.raw, 'next', ticket, undefined, true);
      return 'next';
    }
    if (refunds !== undefined && handled.decision.receipt !== undefined && isFinishingResponse(out.raw)) {
      refunds.whenSettled(input.request, out.raw, handled.decision, diagnostics);
    }
    const written = writePlan(handled, out, diagnostics, limiter, giveBack);
    if (isPromiseLike(written)) return written.then((outcome) => kept(out, outcome, ticket, handled));
    return kept(out, written, ticket, handled);
  }

  function kept(out: ResponseTarget, outcome: RunOutcome, ticket: ShedTicket | undefined, handled: HandledRequest): RunOutcome {
    holds.keep(out.raw, outcome, ticket, handled.decision, handled.plan.action === 'pass');
    return outcome;
  }

  /** Anything unexpected lets the request through, with one logged error. */
  function failed(error: unknown, out: ResponseTarget, logger: Logger, ticket: ShedTicket | undefined): RunOutcome {
    ticket?.release(false);
    safeLog(
      logger,
      'error',
      { code: 'ERR_RL_HANDLER_FAILED', err: error },
      'ERR_RL_HANDLER_FAILED: the rate-limit middleware failed unexpectedly; the request was let through unlimited',
    );
    return started(out) ? 'stop' : 'next';
  }

  return { run, holds };
}

/** The shedder's priority of `request`; a priority function that throws gives 'normal', with a warning, never a bypass. */
function priorityOf<Req>(shedder: LoadShedder<Req>, request: Req, diagnostics: Diagnostics): ShedPriority {
  try {
    return shedder.priorityOf(request);
  } catch (error) {
    diagnostics.warn('WRN_RL_HOOK_FAILED', "loadShedding.priority threw; the request was given the priority 'normal'.", {
      hook: 'loadShedding.priority',
      err: error,
    });
    return 'normal';
  }
}
