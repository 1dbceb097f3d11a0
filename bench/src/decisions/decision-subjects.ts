/**
 * @module Section A's subjects: every tollgate algorithm on MemoryStore, each peer's in-memory limiter
 * and a bare Map counter, all behind one shape: `decide(key)` returns the limiter's own promise, which
 * the harness awaits, and `allowed(result)` reads its verdict the way the peer's middleware does.
 */
import LocalStore from '@fastify/rate-limit/store/LocalStore.js';
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { type AlgorithmId, createLimiter, type Decision, MemoryStore, registerPrometheusMetrics } from '@tollgate/core';
import { MemoryStore as ErlMemoryStore, type Options as ErlOptions } from 'express-rate-limit';
import MemoryLimiter from 'koa-ratelimit/limiter/memory.js';
import { Registry } from 'prom-client';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { flexibleConsume } from '../flexible-consume.js';

/** The window every subject uses, long enough that nothing expires during a cell. */
export const WINDOW_MS = 60_000;
/** Per-key limit of the allow cells: far above what any cell sends to one key, so never reached. */
export const ALLOW_LIMIT = 1_000_000_000;
/** sliding-window keeps `limit * 1000 * windowMs * 2` exact in a double, which caps its limit at 60 s windows. */
export const ALLOW_LIMIT_SLIDING_WINDOW = 75_000_000;

export interface DecisionSubject<R = unknown> {
  decide(key: string): Promise<R>;
  allowed(result: R): boolean;
  close(): void;
}

export interface SubjectSetup {
  /** Keys the cell will use; stores that need a capacity get at least this much. */
  readonly keys: number;
  /** true: the limit is 1, so every decision after a key's first is a rejection. */
  readonly overLimit: boolean;
}

export interface SubjectSpec {
  readonly id: string;
  readonly label: string;
  readonly kind: 'tollgate' | 'peer' | 'baseline';
  create(setup: SubjectSetup): DecisionSubject;
}

export const TOLLGATE_ALGORITHMS: readonly AlgorithmId[] = [
  'gcra',
  'token-bucket',
  'fixed-window',
  'sliding-window',
  'sliding-log',
  'leaky-bucket',
];

function tollgate(algorithm: AlgorithmId): SubjectSpec {
  return {
    id: `tollgate-${algorithm}`,
    label: `tollgate ${algorithm}`,
    kind: 'tollgate',
    create({ keys, overLimit }) {
      const limit = overLimit ? 1 : algorithm === 'sliding-window' ? ALLOW_LIMIT_SLIDING_WINDOW : ALLOW_LIMIT;
      // Eviction on (bounded memory is the default), sized so that the cell's keys all fit.
      const store = new MemoryStore({ maxKeys: Math.max(keys, 1000) });
      const limiter = createLimiter({ policies: [{ algorithm, limit, windowMs: WINDOW_MS }], store });
      const subject: DecisionSubject<Decision> = {
        decide: (key) => limiter.check(key),
        allowed: (d) => d.allowed,
        close: () => store.close(),
      };
      return subject as DecisionSubject;
    },
  };
}

/** Subject ids of tollgate gcra with an exporter attached (issue 12: the cost of observability). */
export const OBSERVED_SUBJECTS = { otel: 'tollgate-gcra-otel', prometheus: 'tollgate-gcra-prometheus' } as const;

/**
 * tollgate gcra as above, with a metrics exporter attached before the limiter is created: the
 * OpenTelemetry SDK as the global MeterProvider (every instrument registered, collected every second
 * into an in-memory exporter), or a prom-client registry. Compared with `tollgate-gcra` (no provider).
 */
function observed(exporter: keyof typeof OBSERVED_SUBJECTS): SubjectSpec {
  const gcra = tollgate('gcra');
  return {
    id: OBSERVED_SUBJECTS[exporter],
    label: exporter === 'otel' ? 'tollgate gcra + OpenTelemetry MeterProvider' : 'tollgate gcra + prom-client registry',
    kind: 'tollgate',
    create(setup) {
      let detach: () => Promise<void>;
      if (exporter === 'otel') {
        const reader = new PeriodicExportingMetricReader({
          exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
          exportIntervalMillis: 1000,
        });
        const provider = new MeterProvider({ readers: [reader] });
        metrics.setGlobalMeterProvider(provider);
        detach = async () => {
          metrics.disable();
          await provider.shutdown();
        };
      } else {
        const unregister = registerPrometheusMetrics({ registry: new Registry() });
        detach = async () => unregister();
      }
      const subject = gcra.create(setup);
      return {
        decide: (key) => subject.decide(key),
        allowed: (r) => subject.allowed(r),
        close: () => {
          subject.close();
          void detach();
        },
      };
    },
  };
}

const expressRateLimit: SubjectSpec = {
  id: 'express-rate-limit',
  label: 'express-rate-limit MemoryStore',
  kind: 'peer',
  create({ overLimit }) {
    const limit = overLimit ? 1 : ALLOW_LIMIT;
    const store = new ErlMemoryStore();
    store.init({ windowMs: WINDOW_MS } as ErlOptions);
    const subject: DecisionSubject<{ totalHits: number }> = {
      decide: (key) => store.increment(key),
      // The middleware's test: `totalHits > limit` is a rejection.
      allowed: (r) => r.totalHits <= limit,
      close: () => store.shutdown(),
    };
    return subject as DecisionSubject;
  },
};

const fastifyRateLimit: SubjectSpec = {
  id: 'fastify-rate-limit',
  label: '@fastify/rate-limit LocalStore',
  kind: 'peer',
  create({ keys, overLimit }) {
    const max = overLimit ? 1 : ALLOW_LIMIT;
    // The plugin's default LRU holds 5000 keys; give it room for the cell's keys, as tollgate gets.
    const store = new LocalStore(false, false, Math.max(keys, 5000));
    const subject: DecisionSubject<{ current: number }> = {
      // Exactly how the plugin awaits its callback store.
      decide: (key) =>
        new Promise((resolve, reject) => {
          store.incr(key, (err, res) => (err ? reject(err) : resolve(res)), WINDOW_MS, max);
        }),
      allowed: (r) => r.current <= max,
      close: () => undefined,
    };
    return subject as DecisionSubject;
  },
};

const koaRatelimit: SubjectSpec = {
  id: 'koa-ratelimit',
  label: 'koa-ratelimit memory driver',
  kind: 'peer',
  create({ overLimit }) {
    // The middleware's options after its defaults are merged, with the Map it needs to limit at all.
    const opts = {
      driver: 'memory',
      db: new Map(),
      duration: WINDOW_MS,
      max: overLimit ? 1 : ALLOW_LIMIT,
      id: (ctx: { ip: string }) => ctx.ip,
      headers: { remaining: 'X-RateLimit-Remaining', reset: 'X-RateLimit-Reset', total: 'X-RateLimit-Limit' },
      onLimited: undefined,
    };
    const subject: DecisionSubject<{ remaining: number }> = {
      // The middleware builds a limiter per request, then awaits get().
      decide: (key) => new MemoryLimiter({ ...opts, id: key }).get(),
      allowed: (r) => r.remaining > 0,
      close: () => undefined,
    };
    return subject as DecisionSubject;
  },
};

const rateLimiterFlexible: SubjectSpec = {
  id: 'rate-limiter-flexible',
  label: 'rate-limiter-flexible RateLimiterMemory',
  kind: 'peer',
  create({ overLimit }) {
    const limiter = new RateLimiterMemory({ points: overLimit ? 1 : ALLOW_LIMIT, duration: WINDOW_MS / 1000 });
    const subject: DecisionSubject<boolean> = {
      decide: (key) => flexibleConsume(limiter, key),
      allowed: (r) => r,
      close: () => undefined,
    };
    return subject as DecisionSubject;
  },
};

const mapCounter: SubjectSpec = {
  id: 'map-counter',
  label: 'bare Map counter (floor)',
  kind: 'baseline',
  create() {
    const m = new Map<string, number>();
    const subject: DecisionSubject<void> = {
      async decide(key) {
        m.set(key, (m.get(key) ?? 0) + 1);
      },
      allowed: () => true,
      close: () => m.clear(),
    };
    return subject as DecisionSubject;
  },
};

export const DECISION_SUBJECTS: readonly SubjectSpec[] = [
  ...TOLLGATE_ALGORITHMS.map(tollgate),
  observed('otel'),
  observed('prometheus'),
  expressRateLimit,
  fastifyRateLimit,
  koaRatelimit,
  rateLimiterFlexible,
  mapCounter,
];

export function decisionSubject(id: string): SubjectSpec {
  const spec = DECISION_SUBJECTS.find((s) => s.id === id);
  if (spec === undefined) throw new TypeError(`unknown decision subject '${id}'`);
  return spec;
}
