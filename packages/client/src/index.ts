/**
 * @module @tollgate/client: the calling side of a rate limit. Named exports only.
 */
export type { Jitter } from './backoff.js';
export { type ClientErrorCode, RateLimitClientError } from './errors.js';
export {
  type HeaderGetter,
  type RateLimitDialect,
  type RateLimitItem,
  type RateLimitSignal,
  readRateLimitSignal,
  readRetryAfter,
  serverWaitMs,
} from './rate-limit-signal.js';
export type { RetryBudgetOptions } from './retry-budget.js';
export { createShaper, type ScheduleOptions, type Shaper, type ShaperOptions, type ShaperStats } from './shaper.js';
export {
  type FetchLike,
  type PacingOptions,
  type PacingRequest,
  type RetryEvent,
  type RetryFetch,
  type RetryOptions,
  type RetryStats,
  withRetry,
} from './with-retry.js';
