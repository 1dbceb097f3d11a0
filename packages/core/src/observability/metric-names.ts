/**
 * @module The names of tollgate's metrics, in OpenTelemetry and in Prometheus: one table that the
 * OpenTelemetry meter, the prom-client bridge, the README's metric table and the dashboard's test read,
 * so a series can never be renamed in one place only. Attribute values are bounded sets: keys never
 * become attributes.
 */

/** `tollgate.result` of a decision. */
export const RESULTS = ['allowed', 'limited', 'shadow_limited', 'cost_exceeds_capacity', 'store_error', 'shed'] as const;
/** The value of the `result` label of a request counted in the metrics (allowed, limited, shed, ...). */
export type ResultName = (typeof RESULTS)[number];

/** `tollgate.store.outcome` of one store call. */
export const STORE_OUTCOMES = ['ok', 'error', 'timeout'] as const;
export type StoreOutcome = (typeof STORE_OUTCOMES)[number];

/** `tollgate.store.state`: the store's circuit breaker (or, per node, its health). */
export const STORE_STATES = ['closed', 'half_open', 'open'] as const;
export type StoreStateName = (typeof STORE_STATES)[number];

/**
 * `tollgate.shadow.verdict`: one shadow policy's verdict against the enforced one. `agree_allowed` and
 * `agree_limited` agree; `shadow_only` is what switching would newly block, `enforced_only` what it would let through.
 */
export const SHADOW_VERDICTS = ['agree_allowed', 'agree_limited', 'shadow_only', 'enforced_only'] as const;
export type ShadowVerdictName = (typeof SHADOW_VERDICTS)[number];

/** Attribute names (OpenTelemetry) and their Prometheus labels. */
export const ATTRIBUTES = {
  policy: { otel: 'tollgate.policy', prom: 'policy' },
  result: { otel: 'tollgate.result', prom: 'result' },
  mode: { otel: 'tollgate.mode', prom: 'mode' },
  route: { otel: 'http.route', prom: 'route' },
  plan: { otel: 'tollgate.plan', prom: 'plan' },
  storeKind: { otel: 'tollgate.store.kind', prom: 'store' },
  storeOutcome: { otel: 'tollgate.store.outcome', prom: 'outcome' },
  storeState: { otel: 'tollgate.store.state', prom: 'state' },
  storeNode: { otel: 'tollgate.store.node', prom: 'node' },
  shadowVerdict: { otel: 'tollgate.shadow.verdict', prom: 'verdict' },
  priority: { otel: 'tollgate.priority', prom: 'priority' },
  limiter: { otel: 'tollgate.limiter', prom: 'limiter' },
} as const;
export type AttributeId = keyof typeof ATTRIBUTES;

/** A named limiter's `limiter` label, spread into the labels of each of its series; none without a name. */
export function limiterLabel(name: string | undefined): { readonly limiter?: string } {
  return name === undefined ? {} : { limiter: name };
}

/** The same as a span event's attribute (`tollgate.limiter`); none without a name. */
export function limiterAttribute(name: string | undefined): Readonly<Record<string, string>> {
  return name === undefined ? {} : { [ATTRIBUTES.limiter.otel]: name };
}

/** One metric as both exporters name it. */
export interface MetricDescriptor {
  readonly otel: string;
  readonly prom: string;
  readonly type: 'counter' | 'histogram' | 'gauge' | 'updowncounter';
  readonly unit: string;
  readonly description: string;
  /** Always present, then present only when known. */
  readonly attributes: readonly AttributeId[];
  readonly optionalAttributes: readonly AttributeId[];
}

/** Every metric tollgate exports: its OpenTelemetry and Prometheus names, kind, unit, labels and meaning. */
export const METRICS = {
  requests: {
    otel: 'tollgate.requests',
    prom: 'tollgate_requests_total',
    type: 'counter',
    unit: '{request}',
    description: 'Rate-limit decisions and shed requests, by binding policy and result.',
    attributes: ['policy', 'result', 'mode'],
    optionalAttributes: ['route', 'plan', 'priority', 'limiter'],
  },
  storeDuration: {
    otel: 'tollgate.store.duration',
    prom: 'tollgate_store_duration_seconds',
    type: 'histogram',
    unit: 's',
    description: 'Time of one store call (all policies of a decision); synchronous stores are sampled, 1 call in 1024.',
    attributes: ['storeKind', 'storeOutcome'],
    optionalAttributes: [],
  },
  shapingDelay: {
    otel: 'tollgate.shaping.delay',
    prom: 'tollgate_shaping_delay_seconds',
    type: 'histogram',
    unit: 's',
    description: 'Delay given to shaped (leaky-bucket) requests that were admitted with a wait (none in shadow mode).',
    attributes: ['policy'],
    optionalAttributes: ['limiter'],
  },
  shadowVerdicts: {
    otel: 'tollgate.shadow.verdicts',
    prom: 'tollgate_shadow_verdicts_total',
    type: 'counter',
    unit: '{request}',
    description: "Each shadow policy's verdict against the enforced verdict.",
    attributes: ['policy', 'shadowVerdict'],
    optionalAttributes: ['limiter'],
  },
  storeEvictions: {
    otel: 'tollgate.store.evictions',
    prom: 'tollgate_store_evictions_total',
    type: 'counter',
    unit: '{entry}',
    description:
      'Entries a MemoryStore dropped before their time to stay within maxKeys, and keys Redis evicted under an evicting maxmemory-policy ' +
      '(INFO stats evicted_keys, read every 10 s by each RedisStore in use); their keys start over with a full budget.',
    attributes: ['storeKind'],
    optionalAttributes: [],
  },
  storeCalls: {
    otel: 'tollgate.store.calls',
    prom: 'tollgate_store_calls_total',
    type: 'counter',
    unit: '{call}',
    description:
      'Scripts a RedisStore sent to decide: one per decision, or with localBatch one per batch taken. ' +
      'Against tollgate_requests_total, what the store carries and what batching saved.',
    attributes: ['storeKind'],
    optionalAttributes: [],
  },
  storeState: {
    otel: 'tollgate.store.state',
    prom: 'tollgate_store_state',
    type: 'gauge',
    unit: '{limiter}',
    description: 'Limiters whose store is in each breaker state (closed is healthy).',
    attributes: ['storeKind', 'storeState'],
    optionalAttributes: ['storeNode', 'limiter'],
  },
  activeLeases: {
    otel: 'tollgate.leases.active',
    prom: 'tollgate_leases_active',
    type: 'updowncounter',
    unit: '{lease}',
    description: 'Concurrency leases held now, where concurrency policies report them.',
    attributes: ['policy'],
    optionalAttributes: ['limiter'],
  },
  queuedRequests: {
    otel: 'tollgate.queue.length',
    prom: 'tollgate_queue_length',
    type: 'updowncounter',
    unit: '{request}',
    description: 'Requests waiting in a queue now, where queueing features report them.',
    attributes: ['policy'],
    optionalAttributes: ['limiter'],
  },
} as const satisfies Record<string, MetricDescriptor>;
export type MetricId = keyof typeof METRICS;

/** Upper bounds (seconds) of the store-duration buckets: 50 µs to 2.5 s. */
export const STORE_DURATION_BUCKETS: readonly number[] = [
  0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
];

/** Upper bounds (seconds) of the shaping-delay buckets: 5 ms to 30 s. */
export const SHAPING_DELAY_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * `tollgate.policy` of a request the load shedder turned away (`tollgate.result` `shed`): no policy
 * decided it, the server-wide cap did. Underscored like ROUTE_OVERFLOW, out of the way of policy names.
 */
export const SHED_POLICY = '_shed';

/** The `http.route` reported once a limiter has seen this many distinct routes: cardinality stays bounded. */
export const ROUTE_OVERFLOW = '_other';
export const MAX_ROUTES = 200;
