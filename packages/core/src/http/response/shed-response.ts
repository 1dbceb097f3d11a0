/**
 * @module The answer to a shed request: 503 with `Retry-After` and an RFC 9457 body of type
 * `overloaded` (docs/problems.md). No RateLimit headers: a shed is about the server, not the client's
 * quota, so a well-behaved client backs off without blaming its own budget.
 */

import type { LoadShedderState, ShedPriority } from '../../shedding/load-shedder.js';
import { PROBLEM_CONTENT_TYPE, PROBLEMS_URL, type ProblemDetails } from './problem.js';
import { type ResponsePlan, retryAfterSeconds } from './respond.js';

/** The problem type of a shed request. */
export const OVERLOADED_TYPE = `${PROBLEMS_URL}#overloaded`;

/** `1 second`, `2 seconds`, `1 request`: never "1 seconds". */
function count(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * Why a request of `priority` was shed: the event loop lags (then only what a priority function calls
 * critical runs, whatever is in flight: a critical request shed then found the cap full), the whole cap
 * is in use, or the part of it that priority may fill.
 */
function atCapacity(priority: ShedPriority, state: LoadShedderState): string {
  if (state.lagging && (priority !== 'critical' || state.inFlight < state.limit)) {
    return `The server is overloaded: its event loop is lagging, so only critical requests are served`;
  }
  const inFlight = count(state.inFlight, 'request', 'requests');
  if (state.inFlight >= state.limit) return `The server is at its capacity (${inFlight} in flight, limit ${state.limit})`;
  return `The server is at its capacity for ${priority}-priority requests (${inFlight} in flight, which fills the part of the limit of ${state.limit} they may use)`;
}

/** Plans the 503 for a request of `priority` shed at `state`. */
export function planShed(retryAfterMs: number, priority: ShedPriority, state: LoadShedderState): ResponsePlan {
  const retryAfter = retryAfterSeconds(retryAfterMs);
  const problem: ProblemDetails = {
    type: OVERLOADED_TYPE,
    title: 'Service Overloaded',
    status: 503,
    detail: `${atCapacity(priority, state)}; retry in ${count(retryAfter, 'second', 'seconds')}.`,
    retryAfter,
    priority,
  };
  return {
    action: 'reject',
    status: 503,
    headers: [
      ['Retry-After', String(retryAfter)],
      ['Cache-Control', 'no-store'],
      ['Content-Type', PROBLEM_CONTENT_TYPE],
    ],
    problem,
    body: JSON.stringify(problem),
    delayMs: 0,
  };
}
