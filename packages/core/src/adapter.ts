/**
 * @module @tollgate/core/adapter: what only the author of an adapter (Express, Fastify, Koa, or a
 * framework of your own) or of a store needs: the per-request handler, the response plan and its
 * writing helpers, the framework trust-proxy checks, an address without its port (`xForwardedForNode`: a
 * framework or a log that hands `a.b.c.d:port`), one header's value read as the handler reads it
 * (`headerValue`: repeated lines joined), a refusal's own reason phrase (`setReasonPhrase`), warn-once diagnostics, the check of a request's
 * cost, whether a key is stored as it is, and readers of a store result. End users import `@tollgate/core`.
 */
export { createDiagnostics, type Diagnostics } from './diagnostics.js';
export { xForwardedForNode } from './http/client-ip/forwarded-header.js';
export {
  type ClientIpResolver,
  isPermissiveTrust,
  isPermissiveTrustFunction,
  PERMISSIVE_TRUST_DEPTH,
} from './http/client-ip/permissive-trust.js';
export { headerValue } from './http/client-ip/read-header.js';
export {
  createRateLimitHandler,
  type HandledRequest,
  type HandlerContext,
  type RateLimitHandler,
  type RawResponse,
  type RequestInput,
  type ResponseTarget,
  type RunOutcome,
  UNKEYED_KEY,
} from './http/handler/rate-limit-handler.js';
export { OLDER_SPELLINGS, parseRateLimitOptions, type RateLimitConfig } from './http/handler/rate-limit-options.js';
export { abortOnClose, type DoneResponse, onHandlerSettled, onResponseDone } from './http/handler/response-done.js';
export type { HeaderPair } from './http/response/header-values.js';
export { setReasonPhrase } from './http/response/reason-phrase.js';
export { type ResponseConfig, type ResponsePlan, respond, retryAfterSeconds } from './http/response/respond.js';
export { type ClosableResponse, waitUnlessClosed } from './http/response/shaping-delay.js';
export { planShed } from './http/response/shed-response.js';
export { requestCostToMilli } from './internal/fixed-point.js';
export { isPromiseLike } from './internal/promise.js';
export { isPlainKey } from './limiter/target.js';
export { escapeControl, formatLine } from './logging.js';
export { resultCharged, resultDelayMs, resultExceeds } from './stores/store.js';
