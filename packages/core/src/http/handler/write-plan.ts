/**
 * @module Writing a planned answer through an adapter's ResponseTarget: headers, then a rejection or
 * `next` (after a shaping delay, unless the client left). Nothing is written once the response started.
 */
import type { Diagnostics } from '../../diagnostics.js';
import type { Limiter } from '../../limiter/limiter.js';
import type { LoadShedderState, ShedPriority } from '../../shedding/load-shedder.js';
import type { Decision } from '../../types.js';
import type { HeaderPair } from '../response/header-values.js';
import { waitUnlessClosed } from '../response/shaping-delay.js';
import { planShed } from '../response/shed-response.js';
import type { HandledRequest, ResponseTarget, RunOutcome } from './handler-types.js';

/** True once anything of the response went out, or the framework says it answered. */
export function started(target: ResponseTarget): boolean {
  const raw = target.raw;
  return raw.headersSent || raw.writableEnded || raw.destroyed === true || (target.sent?.() ?? false);
}

/**
 * Headers that describe a representation, or how it is framed, which an earlier middleware may have set
 * for the route's answer: on a rejection they would misdescribe the problem body (a `Content-Encoding:
 * gzip` on plain JSON makes a client fail to decode it; an `ETag` or `Last-Modified` would let a cache
 * revalidate the 429 as the route's). Removed before a rejection's headers are written.
 */
const REPRESENTATION_HEADERS: ReadonlySet<string> = new Set([
  'content-encoding',
  'content-language',
  'content-location',
  'content-range',
  'content-disposition',
  'content-md5',
  'content-digest',
  'repr-digest',
  'digest',
  'etag',
  'last-modified',
  'expires',
  'transfer-encoding',
  // Framing: the adapters give the problem body its own length, except Fastify on a HEAD route, which keeps one set before.
  'content-length',
]);

/**
 * Caching instructions for caches other than the client's, which they obey instead of `Cache-Control`
 * (which the rejection replaces with `no-store`): RFC 9213's `CDN-Cache-Control` and every CDN's own
 * (`Cloudflare-CDN-Cache-Control`, `Vercel-CDN-Cache-Control`, ...), Fastly's and Varnish's
 * `Surrogate-Control`, Akamai's `Edge-Control`, nginx's `X-Accel-Expires`. Set for the route's answer,
 * they would let a CDN store the 429 and serve it to every client of the URL.
 */
const CACHE_HEADERS: ReadonlySet<string> = new Set(['surrogate-control', 'edge-control', 'x-accel-expires']);

/**
 * Rate-limit fields (every format an adapter writes, and `Retry-After`) that an earlier limiter set when
 * it admitted the request: on another's rejection they would describe quota the client does not have (a
 * 429 with `r=98`, a 413 or a 503 with a `RateLimit` of its own, when those carry none). The rejection's
 * own fields are written after.
 */
const RATE_LIMIT_FIELDS: ReadonlySet<string> = new Set([
  'ratelimit',
  'ratelimit-policy',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'retry-after',
]);

/**
 * The headers a rejection removes: REPRESENTATION_HEADERS, the caches' own (CACHE_HEADERS,
 * `*cdn-cache-control`) and RATE_LIMIT_FIELDS.
 */
const STALE_ON_REJECTION: Pick<ReadonlySet<string>, 'has'> = {
  has: (name) =>
    REPRESENTATION_HEADERS.has(name) || CACHE_HEADERS.has(name) || RATE_LIMIT_FIELDS.has(name) || name.endsWith('cdn-cache-control'),
};

/** Removes the headers of STALE_ON_REJECTION an earlier middleware set, before a rejection is written. */
function clearRepresentation(out: ResponseTarget): void {
  if (out.remove !== undefined) {
    out.remove(STALE_ON_REJECTION);
    return;
  }
  const raw = out.raw;
  // The names set so far, once: most responses have none of these, and a removal per name costs more.
  for (const name of raw.getHeaderNames?.() ?? []) if (STALE_ON_REJECTION.has(name)) raw.removeHeader?.(name);
}

/** The connection closed before anything was written: the client went away, nothing else answered. */
function clientLeft(target: ResponseTarget): boolean {
  const raw = target.raw;
  return raw.destroyed === true && !raw.headersSent && !raw.writableEnded && !(target.sent?.() ?? false);
}

/**
 * Writes the plan; synchronous unless a shaping delay has to be waited out. `left(limiter, decision,
 * diagnostics)` is called for an admitted request whose client went away before it was served (during
 * that delay, or while the decision was awaited): its charge should go back (issue 25).
 */
export function writePlan(
  handled: HandledRequest,
  out: ResponseTarget,
  diagnostics: Diagnostics,
  limiter?: Limiter,
  left?: (limiter: Limiter, decision: Decision, diagnostics: Diagnostics) => void,
): RunOutcome | Promise<RunOutcome> {
  const { decision, plan } = handled;
  out.attach(decision);
  if (started(out)) {
    // A connection closed with nothing written is a client that left while the decision was awaited (an
    // async key, a queue): nobody would be served, so the route does not run and an admitted request's
    // charge goes back, as for a client gone during a shaping delay.
    if (clientLeft(out)) {
      if (plan.action === 'pass' && limiter !== undefined) left?.(limiter, decision, diagnostics);
      out.abandon();
      return 'stop';
    }
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
  if (plan.action === 'reject') clearRepresentation(out);
  const headers = plan.headers;
  // An index loop: `for (const [name, value] of ...)` may build an iterator per pair.
  for (let i = 0; i < headers.length; i++) {
    const pair = headers[i] as HeaderPair;
    out.header(pair[0], pair[1]);
  }
  if (plan.action === 'reject') {
    out.reject(plan.status ?? 429, plan.body ?? '');
    return 'stop';
  }
  if (plan.delayMs > 0) {
    return waitUnlessClosed(plan.delayMs, out.raw).then((waited) => {
      if (waited) return 'next';
      if (limiter !== undefined) left?.(limiter, decision, diagnostics);
      out.abandon();
      return 'stop';
    });
  }
  return 'next';
}

/** What the 503 of a shed request needs. */
export interface ShedAnswer {
  readonly retryAfterMs: number;
  readonly priority: ShedPriority;
  readonly state: LoadShedderState;
}

/** Writes the 503 of a request the load shedder refused. */
export function writeShed(answer: ShedAnswer, out: ResponseTarget): RunOutcome {
  if (started(out)) return 'next';
  const plan = planShed(answer.retryAfterMs, answer.priority, answer.state);
  clearRepresentation(out);
  for (const [name, value] of plan.headers) out.header(name, value);
  out.reject(503, plan.body ?? '');
  return 'stop';
}
