/**
 * @module @tollgate/core: algorithms, stores and the limiter. Named exports only.
 */
export { monotonicClock } from './clock.js';
export {
  createLimiter,
  type Limiter,
  type LimiterStats,
  MAX_KEY_LENGTH,
  type PolicyDescription,
  type PolicyStats,
} from './create-limiter.js';
export { createDiagnostics, type Diagnostics, type ValidateOption } from './diagnostics.js';
export { DOCS_URL, RateLimitConfigError } from './errors.js';
export type { HeaderBag, KeyFunction, RequestView } from './http/request-view.js';
export type { LimiterOptions, ShadowOptions } from './options.js';
export { MemoryStore, type MemoryStoreOptions } from './stores/memory-store.js';
export type { RedisClientLike } from './stores/redis/redis-client.js';
export { RedisStore, type RedisStoreOptions } from './stores/redis/redis-store.js';
export { RedisStoreError, type RedisStoreErrorCode } from './stores/redis/redis-store-error.js';
export type { Store, StorePlan, StoreResult } from './stores/store.js';
export type {
  AlgorithmId,
  CheckOptions,
  Clock,
  Decision,
  DecisionReason,
  Logger,
  PolicyOptions,
  PolicyResult,
  QuotaUnit,
  ShadowVerdict,
} from './types.js';
