/**
 * @module From a request to its decision and planned answer: skip, key, cost, plan and per-policy keys
 * (each a user hook, bounded), one `limiter.decide`, the report (`onDecision`, shadow summary), then the
 * response plan of the plan that applied, with the user's body when a hook shapes it. Callbacks are
 * awaited only when they return a promise: a synchronous request takes no extra tick.
 */
import type { Diagnostics } from '../../diagnostics.js';
import { isPromiseLike } from '../../internal/promise.js';
import type { Limiter, LimiterKey } from '../../limiter/limiter.js';
import type { Decision } from '../../types.js';
import type { RequestView } from '../request-view.js';
import { type ResponseConfig, respond } from '../response/respond.js';
import type { Bounded } from './bounded-call.js';
import type { CustomBody } from './custom-body.js';
import type { HandledRequest, RawResponse, RequestInput } from './handler-types.js';
import type { RateLimitConfig } from './rate-limit-options.js';
import { abortOnClose } from './response-done.js';
import type { ShadowSummary } from './shadow-summary.js';
import { UNKEYED_KEY, type UserHooks } from './user-hooks.js';

/** What a RequestDecider is built from, once per middleware. */
export interface RequestDeciderParts<Req> {
  readonly config: RateLimitConfig<Req>;
  readonly limiter: Limiter;
  readonly hooks: UserHooks;
  readonly body: CustomBody<Req>;
  readonly shadow: ShadowSummary;
  /** One response config per plan: headers and problem bodies describe the plan that applied. */
  readonly responses: ReadonlyMap<string, ResponseConfig>;
  /** Requests may wait in a concurrency queue: they leave it when the client goes away. */
  readonly queues: boolean;
}

/** What `handle` gives: the decided request, or undefined when skipped; a promise only when a step returned one. */
export type MaybeHandled = HandledRequest | undefined | Promise<HandledRequest | undefined>;

export class RequestDecider<Req> {
  private readonly defaultResponse: ResponseConfig;
  /** Every policy name that needs a key when policies carry their own keys (all plans, and shadow). */
  private readonly keyedNames: readonly string[] | undefined;

  /** The plan of a request whose `plan` function returned no plan name (the `unknownPlan` option, else the default). */
  private readonly unknownPlan: string;

  constructor(private readonly parts: RequestDeciderParts<Req>) {
    const { limiter, config, responses } = parts;
    this.defaultResponse = responses.get(limiter.defaultPlan) as ResponseConfig;
    this.unknownPlan = config.limiterOptions.unknownPlan ?? limiter.defaultPlan;
    this.keyedNames =
      config.plans.policyKeys.size === 0
        ? undefined
        : [...new Set([...[...limiter.plans.values()].flat(), ...limiter.shadowPolicies].map((p) => p.name))];
  }

  /**
   * Undefined when the request is skipped: send nothing, count nothing. Never fails for a user hook's
   * fault. Synchronous while every step is (no hook returned a promise, the store answered at once): a
   * request then takes no microtask turn here; the first step that returns a promise makes the rest wait.
   */
  handle(input: RequestInput<Req>, diagnostics: Diagnostics, response?: RawResponse): MaybeHandled {
    const skip = this.parts.config.skip;
    if (skip === undefined) return this.keyed(input, diagnostics, response);
    const skipped = this.skipped(input.request, skip, diagnostics);
    if (isPromiseLike(skipped)) return skipped.then((s) => (s ? undefined : this.keyed(input, diagnostics, response)));
    return skipped ? undefined : this.keyed(input, diagnostics, response);
  }

  /** The request's key from the `key` option (the client IP by default), then the rest. */
  private keyed(input: RequestInput<Req>, diagnostics: Diagnostics, response: RawResponse | undefined): MaybeHandled {
    const { request } = input;
    const view: RequestView<Req> = {
      remoteAddress: input.remoteAddress,
      headers: input.headers,
      method: input.method,
      url: input.url,
      request,
      diagnostics,
    };
    const pendingKey = this.parts.hooks.callWith(this.parts.config.key, request, view);
    if (isPromiseLike(pendingKey)) return pendingKey.then((out) => this.withKey(out, input, view, response));
    return this.withKey(pendingKey, input, view, response);
  }

  private withKey(
    keyOut: Bounded<unknown>,
    input: RequestInput<Req>,
    view: RequestView<Req>,
    response: RawResponse | undefined,
  ): MaybeHandled {
    const { hooks, config } = this.parts;
    hooks.failed(view.diagnostics, 'key', keyOut, `the request was counted in the shared '${UNKEYED_KEY}' bucket.`);
    const key = hooks.key(keyOut.ok ? keyOut.value : undefined, view);
    if (config.cost !== undefined || config.plans.plan !== undefined || this.keyedNames !== undefined) {
      return this.withHooks(key, input, view, response);
    }
    return this.decide(key, undefined, undefined, input, view.diagnostics, response);
  }

  /** Cost, plan and per-policy keys, each from a user hook that may return a promise. */
  private async withHooks(key: string, input: RequestInput<Req>, view: RequestView<Req>, response: RawResponse | undefined) {
    const { config } = this.parts;
    const { request, diagnostics } = view;
    const pendingCost = config.cost === undefined ? undefined : this.costOf(request, config.cost, diagnostics);
    const cost = isPromiseLike(pendingCost) ? await pendingCost : pendingCost;
    const planName = config.plans.plan === undefined ? undefined : await this.planOf(request, config.plans.plan, diagnostics);
    const target = this.keyedNames === undefined ? key : await this.keysOf(request, view, key, this.keyedNames);
    return this.decide(target, cost, planName, input, diagnostics, response);
  }

  private decide(
    target: LimiterKey,
    cost: number | undefined,
    plan: string | undefined,
    input: RequestInput<Req>,
    diagnostics: Diagnostics,
    response: RawResponse | undefined,
  ): HandledRequest | Promise<HandledRequest> {
    // A request waiting in a concurrency queue leaves it when the client goes away.
    const signal = this.parts.queues && response !== undefined ? abortOnClose(response) : undefined;
    // Always an object: the route and the request go to the decision event (metrics, diagnostics channel).
    const pending = this.parts.limiter.decide(target, { cost, plan, signal, route: input.route, request: input.request });
    if (isPromiseLike(pending)) return pending.then((decision) => this.answer(decision, target, input.request, diagnostics));
    return this.answer(pending, target, input.request, diagnostics);
  }

  /** Reports the decision and plans the response of the plan that applied, with the user's body when a hook shapes it. */
  private answer(decision: Decision, target: LimiterKey, request: Req, diagnostics: Diagnostics): HandledRequest | Promise<HandledRequest> {
    this.report(decision, request, diagnostics);
    const { responses, body, config } = this.parts;
    const plan = respond(decision, responses.get(decision.plan ?? '') ?? this.defaultResponse, config.clock, target);
    // The problem object is built only when a hook may change the body; the default body is already serialized.
    if (plan.action !== 'reject' || !body.active) return { decision, plan };
    return body.apply(plan, decision, request, diagnostics).then((shaped) => ({ decision, plan: shaped }));
  }

  /** Whether `skip` says to skip the request; a promise only when `skip` returned one. */
  private skipped(request: Req, skip: (request: Req) => boolean | Promise<boolean>, diagnostics: Diagnostics): boolean | Promise<boolean> {
    const read = (r: Bounded<boolean>): boolean => {
      if (!r.ok) {
        this.parts.hooks.failed(diagnostics, 'skip', r, 'the request was counted (not skipped).');
        return false;
      }
      // Only `true` skips: a truthy non-boolean (`req.query.internal`, the string 'false') would let a
      // client skip its limit by what it sends, so it is counted, with a warning.
      if (r.value === true) return true;
      if (r.value !== false && r.value !== undefined && r.value !== null)
        this.parts.hooks.returned(diagnostics, 'skip', r.value, 'a boolean', 'the request was counted (not skipped).');
      return false;
    };
    const pending = this.parts.hooks.call(() => skip(request));
    return isPromiseLike(pending) ? pending.then(read) : read(pending);
  }

  /** The request's cost (undefined: the default); a promise only when the cost function returned one. */
  private costOf(
    request: Req,
    costFn: NonNullable<RateLimitConfig<Req>['cost']>,
    diagnostics: Diagnostics,
  ): number | undefined | Promise<number | undefined> {
    const hooks = this.parts.hooks;
    const read = (out: Bounded<unknown>): number | undefined => {
      hooks.failed(diagnostics, 'cost', out, 'the request was charged the default cost.');
      return out.ok ? hooks.cost(out.value, diagnostics) : undefined;
    };
    const pending = hooks.call(() => costFn(request));
    return isPromiseLike(pending) ? pending.then(read) : read(pending);
  }

  /**
   * The plan the request names: undefined (or null) for the default plan, as when the function fails.
   * Anything else that is no string (a number, the user record) is a bug in the function, warned about,
   * and answered as an unknown name is, by the `unknownPlan` fallback (named here, so the limiter does
   * not also log an unknown plan name), never by the default plan, which may be the generous one.
   */
  private async planOf(request: Req, planFn: (request: Req) => unknown, diagnostics: Diagnostics): Promise<string | undefined> {
    const hooks = this.parts.hooks;
    const out = await hooks.call(() => planFn(request));
    hooks.failed(diagnostics, 'plan', out, 'the default plan applied.');
    if (!out.ok || out.value === undefined || out.value === null) return undefined;
    if (typeof out.value === 'string') return out.value;
    hooks.returned(diagnostics, 'plan', out.value, 'a plan name (a string) or undefined', 'the unknownPlan fallback applied.');
    return this.unknownPlan;
  }

  /** Several keys, one decision: each policy's own key, or the middleware's key. */
  private async keysOf(request: Req, view: RequestView<Req>, key: string, names: readonly string[]): Promise<LimiterKey> {
    const { hooks, config } = this.parts;
    const keysByName: Record<string, string> = {};
    for (const name of names) {
      const own = config.plans.policyKeys.get(name);
      if (own === undefined) {
        keysByName[name] = key;
        continue;
      }
      const out = await hooks.call(() => own(request, view));
      hooks.failed(view.diagnostics, 'key', out, `the request was counted in the shared '${UNKEYED_KEY}' bucket.`);
      keysByName[name] = hooks.key(out.ok ? out.value : undefined, view);
    }
    return keysByName;
  }

  private report(decision: Decision, request: Req, diagnostics: Diagnostics): void {
    const { shadow, config } = this.parts;
    const modePolicy = decision.mode === 'shadow' && decision.limited ? decision.policy : undefined;
    const candidatePolicy = decision.shadow !== undefined && !decision.shadow.allowed ? decision.shadow.policy : undefined;
    if (modePolicy !== undefined || candidatePolicy !== undefined) shadow.count(modePolicy, candidatePolicy, !decision.allowed);
    const onDecision = config.onDecision;
    if (onDecision === undefined) return;
    try {
      const out: unknown = onDecision(decision, request);
      // An async onDecision: its rejection is reported as a throw is, never unhandled (no closure otherwise).
      if (isPromiseLike(out)) out.then(undefined, (error: unknown) => onDecisionFailed(diagnostics, error));
    } catch (error) {
      onDecisionFailed(diagnostics, error);
    }
  }
}

function onDecisionFailed(diagnostics: Diagnostics, error: unknown): void {
  diagnostics.warn('WRN_RL_HOOK_FAILED', 'onDecision threw or rejected; the request went on unaffected.', {
    hook: 'onDecision',
    err: error,
  });
}
