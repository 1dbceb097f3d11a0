/**
 * @module The body of a rejection when the user shapes it: `problem.extend` adds members to the
 * problem details, `onLimited` replaces the body. A hook that fails leaves the default body, with a
 * warning; the default body is serialized once, and rebuilt only when a hook may change it.
 */
import type { Diagnostics } from '../../diagnostics.js';
import { isPromiseLike } from '../../internal/promise.js';
import { catchRejection } from '../../internal/rejection.js';
import type { Decision } from '../../types.js';
import type { HeaderPair } from '../response/header-values.js';
import { PROBLEM_CONTENT_TYPE, type ProblemDetails } from '../response/problem.js';
import type { ResponsePlan } from '../response/respond.js';
import type { RateLimitConfig } from './rate-limit-options.js';
import type { UserHooks } from './user-hooks.js';

export class CustomBody<Req> {
  constructor(
    private readonly extendProblem: RateLimitConfig<Req>['extendProblem'],
    private readonly onLimited: RateLimitConfig<Req>['onLimited'],
    private readonly hooks: UserHooks,
  ) {}

  /** True when a rejection's body may differ from the default. */
  get active(): boolean {
    return this.extendProblem !== undefined || this.onLimited !== undefined;
  }

  /** The plan of a rejection with the user's body, or `plan` itself. */
  async apply(plan: ResponsePlan, decision: Decision, request: Req, diagnostics: Diagnostics): Promise<ResponsePlan> {
    if (plan.problem === undefined || plan.status === undefined) return plan;
    const members = this.extend(plan.problem, request, diagnostics);
    const { action, status, headers: planHeaders, delayMs } = plan;
    const extended = members === plan.problem ? undefined : serialized(members, diagnostics);
    const problem = extended === undefined ? plan.problem : members;
    const withProblem: ResponsePlan =
      extended === undefined ? plan : { action, status, headers: planHeaders, problem, body: extended, delayMs };
    const onLimited = this.onLimited;
    if (onLimited === undefined) return withProblem;
    const r = await this.hooks.call(() => onLimited({ request, decision, status, problem }));
    if (!r.ok) {
      this.hooks.failed(diagnostics, 'onLimited', r, `the default ${PROBLEM_CONTENT_TYPE} body was sent.`);
      return withProblem;
    }
    const custom: unknown = r.value;
    if (custom === undefined || custom === null) return withProblem;
    // A string (express-rate-limit's `message` habit), a number, a promise-like or `{ body: undefined }`:
    // not a body to send; sent as such it was the text `null`.
    if (typeof custom !== 'object' || !('body' in custom) || custom.body === undefined) {
      this.hooks.returned(diagnostics, 'onLimited', custom, '{ body, contentType? }', `the default ${PROBLEM_CONTENT_TYPE} body was sent.`);
      return withProblem;
    }
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
    const contentType = contentTypeOf((custom as { contentType?: unknown }).contentType, typeof custom.body === 'string');
    if (!HEADER_VALUE.test(contentType)) {
      this.hooks.returned(
        diagnostics,
        'onLimited',
        contentType,
        'a contentType a header can carry',
        `the default ${PROBLEM_CONTENT_TYPE} body was sent.`,
      );
      return withProblem;
    }
    const headers: HeaderPair[] = plan.headers.map((h) => (h[0] === 'Content-Type' ? ['Content-Type', contentType] : h));
    return { action, status, headers, problem: withProblem.problem, body, delayMs };
  }

  private extend(problem: ProblemDetails, request: Req, diagnostics: Diagnostics): ProblemDetails {
    const extendProblem = this.extendProblem;
    if (extendProblem === undefined) return problem;
    try {
      const extra: unknown = extendProblem(request, problem);
      if (extra === undefined || extra === null) return problem;
      // Spreading a string, an array or a promise (an async extend) would write its indexes, or nothing.
      if (typeof extra !== 'object' || Array.isArray(extra) || isPromiseLike(extra)) {
        // An async extend is not waited for; its rejection is observed, never unhandled.
        catchRejection(extra, () => undefined);
        this.hooks.returned(
          diagnostics,
          'problem.extend',
          extra,
          'an object of members',
          'the problem details were sent without its members.',
        );
        return problem;
      }
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
}

/**
 * Tabs, spaces and visible ASCII (RFC 9110's field-vchar without the obsolete obs-text). Node's
 * `setHeader` also takes Latin-1, but sends it as one byte where a head flushed with a string body (Express,
 * Koa) goes out as UTF-8: the same option would reach clients as two different values.
 */
const HEADER_VALUE = /^[\t\x20-\x7e]+$/;

/** The extended problem details as JSON; undefined (with a warning) when they cannot be (a BigInt member, a cycle): the default body then. */
function serialized(problem: ProblemDetails, diagnostics: Diagnostics): string | undefined {
  try {
    return JSON.stringify(problem);
  } catch (error) {
    diagnostics.warn(
      'WRN_RL_HOOK_FAILED',
      'problem.extend returned members that are not JSON; the problem details were sent without them.',
      {
        hook: 'problem.extend',
        err: error,
      },
    );
    return undefined;
  }
}

function contentTypeOf(given: unknown, isText: boolean): string {
  if (typeof given === 'string' && given !== '') return given;
  return isText ? 'text/plain; charset=utf-8' : 'application/json';
}
