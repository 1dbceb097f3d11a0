/**
 * @module @tollgate/core: what a user calls: the limiter, its policies and keys, the stores, the
 * answers' wire constants, observability and load shedding. Named exports only. What only an adapter
 * (or store) author needs is in `@tollgate/core/adapter` (adapter.ts).
 */
export { monotonicClock } from './clock.js';
export { type ValidateOption, WARNING_CODES, type WarningCode } from './diagnostics.js';
export { DOCS_URL, RateLimitConfigError } from './errors.js';
export type { ForwardingHeader } from './http/client-ip/forwarded-header.js';
export { TRUSTED_PROXY_PRESETS, type TrustedProxyPreset } from './http/client-ip/trusted-proxies.js';
export {
  type CostFunction,
  DEFAULT_CALLBACK_TIMEOUT_MS,
  DEFAULT_HOOK_TIMEOUT_MS,
  type LimitedBody,
  type LimitedContext,
  type ProblemOptions,
  type RateLimitOptions,
} from './http/handler/rate-limit-options.js';
export type { FinishedResponse } from './http/handler/request-plans.js';
export type { HeaderKeyOptions } from './http/keys/header-key.js';
export type { IdFunction, KeyId } from './http/keys/identity-key.js';
export type { IpKeyOptions, TrustedProxyEntry } from './http/keys/ip-key.js';
export { keys } from './http/keys/keys.js';
export { MIN_PARTITION_KEY_SECRET_BYTES, PARTITION_KEY_BYTES, type PartitionKeyOptions } from './http/keys/partition-key.js';
export { type BoundedCostOptions, boundedCost } from './http/request-cost.js';
export type { HeaderBag, KeyFunction, RequestView } from './http/request-view.js';
export { HEADER_MODES, type HeaderMode, type HeadersOption } from './http/response/header-mode.js';
export {
  PROBLEM_CONTENT_TYPE,
  PROBLEM_STATUS,
  PROBLEM_TYPES,
  PROBLEMS_URL,
  type ProblemDetails,
  type ProblemKind,
} from './http/response/problem.js';
export { OVERLOADED_TYPE } from './http/response/shed-response.js';
export {
  createLimiter,
  type Limiter,
  type LimiterEvents,
  type LimiterKey,
  type LimiterStats,
  MAX_KEY_LENGTH,
  type PolicyStats,
  StoreTimeoutError,
} from './limiter/create-limiter.js';
export { consoleLogger, DEFAULT_LOG_RATE, type LogFields, type LogFn, type Logger, type LogRateOptions } from './logging.js';
export { DECISION_CHANNEL, type DecisionMessage } from './observability/decision-observer.js';
export type { HotKey, HotKeysReport } from './observability/hot-keys.js';
export { type InFlightPoint, type InFlightSource, reportInFlight } from './observability/in-flight.js';
export { METRICS, type MetricDescriptor, RESULTS, type ResultName, SHED_POLICY } from './observability/metric-names.js';
export { METER_NAME } from './observability/otel-meter.js';
export {
  type PromCollector,
  type PrometheusOptions,
  type PromRegistryLike,
  type PromSample,
  registerPrometheusMetrics,
} from './observability/prometheus.js';
export type { AffectedKey, ShadowInterval, ShadowPolicyStats } from './observability/shadow-stats.js';
export type { BreakerOptions, HotKeysOptions, LimiterOptions, ShadowOptions } from './options.js';
export type { RefundResult } from './plans/compiled-plan.js';
export type { PlanOptions } from './plans/plan-options.js';
export { type AdaptiveLimitOptions, GradientLimit, type LimitChange } from './shedding/gradient-limit.js';
export {
  createLoadShedder,
  DEFAULT_SHARES,
  type LoadShedder,
  type LoadShedderOptions,
  type LoadShedderState,
  SHED_PRIORITIES,
  type ShedPriority,
  type ShedTicket,
} from './shedding/load-shedder.js';
export { MemoryStore, type MemoryStoreOptions } from './stores/memory-store.js';
export type { EvictionWatchOptions } from './stores/redis/eviction-watch.js';
export type {
  NodeRedisClientLike,
  NodeRedisClusterLike,
  NodeRedisSentinelLike,
  RedisClientLike,
  RedisStoreClient,
  SendCommandClient,
} from './stores/redis/redis-client.js';
export { RedisStore, type RedisStoreOptions } from './stores/redis/redis-store.js';
export { RedisStoreError, type RedisStoreErrorCode } from './stores/redis/redis-store-error.js';
export type { RepairedState } from './stores/redis/state-repair.js';
export type { Store, StoreKey, StorePlan, StoreResult } from './stores/store.js';
export type {
  AlgorithmId,
  AnyPolicyOptions,
  ChargeReceipt,
  CheckOptions,
  Clock,
  ConcurrencyPolicyOptions,
  Decision,
  DecisionReason,
  PolicyDescription,
  PolicyOptions,
  PolicyResult,
  QuotaUnit,
  RefundOptions,
  ShadowVerdict,
} from './types.js';
