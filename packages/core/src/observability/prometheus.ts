/**
 * @module Prometheus without OpenTelemetry: `registerPrometheusMetrics({ registry })` adds tollgate's
 * series to a prom-client registry (the user's, or prom-client's default `register`). Each series is a
 * collector object that prom-client asks at scrape time; it reads the same cells as the OpenTelemetry
 * meter, so both exporters always agree and a decision costs the same whichever is attached. prom-client
 * is an optional peer: it is loaded only when no registry is passed.
 */
import { codedError } from '../errors.js';
import { ATTRIBUTES, type AttributeId, METRICS, type MetricId } from './metric-names.js';
import {
  type CounterId,
  counterCells,
  exporters,
  type GaugeId,
  gaugePoints,
  type HistogramId,
  histogramBounds,
  histogramCells,
  type Labels,
  updateAttached,
} from './metric-store.js';
import { loadOptional } from './optional-module.js';

/** One sample line, as prom-client's registry formats it. */
export interface PromSample {
  readonly value: number;
  readonly labels: Readonly<Record<string, string | number>>;
  readonly metricName?: string;
}

/** What prom-client's registry reads from a registered metric at scrape time. */
export interface PromCollector {
  /** Written by the registry too: an OpenMetrics one drops a counter's `_total` from it. */
  name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly aggregator: 'sum';
  get(): Promise<{
    readonly name: string;
    readonly help: string;
    readonly type: 'counter' | 'gauge' | 'histogram';
    readonly aggregator: 'sum';
    readonly values: PromSample[];
  }>;
}

/**
 * The part of a prom-client `Registry` the bridge uses. `registerMetric` takes `never` here so that
 * prom-client's own `Registry` type fits without tollgate's types depending on prom-client's; the
 * bridge hands it `PromCollector`s, which prom-client's registry reads like its own metrics.
 */
export interface PromRegistryLike {
  registerMetric(metric: never): void;
  removeSingleMetric(name: string): void;
}

interface CollectorRegistry {
  registerMetric(metric: PromCollector): void;
  removeSingleMetric(name: string): void;
}

/** Options of `registerPrometheusMetrics`: the prom-client registry to register in. */
export interface PrometheusOptions {
  /** The registry to add tollgate's series to. Defaults to prom-client's global `register`. */
  registry?: PromRegistryLike;
}

function promLabels(labels: Labels): Record<string, string> {
  const out: Record<string, string> = {};
  for (const id of Object.keys(labels) as AttributeId[]) {
    const v = labels[id];
    if (v !== undefined) out[ATTRIBUTES[id].prom] = v;
  }
  return out;
}

function counter(id: CounterId): () => PromSample[] {
  return () => [...counterCells(id)].map((cell) => ({ value: cell.value, labels: promLabels(cell.labels) }));
}

function gauge(id: GaugeId): () => PromSample[] {
  return () => gaugePoints(id).map((p) => ({ value: p.value, labels: promLabels(p.labels) }));
}

function histogram(id: HistogramId & MetricId): () => PromSample[] {
  const name = METRICS[id].prom;
  const bounds = histogramBounds(id);
  return () => {
    const out: PromSample[] = [];
    for (const cell of histogramCells(id)) {
      const labels = promLabels(cell.labels);
      let cumulative = 0;
      for (let i = 0; i < bounds.length; i++) {
        cumulative += cell.counts[i] as number;
        out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: bounds[i] as number }, value: cumulative });
      }
      out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: cell.count });
      out.push({ metricName: `${name}_sum`, labels, value: cell.sum });
      out.push({ metricName: `${name}_count`, labels, value: cell.count });
    }
    return out;
  };
}

const SAMPLES: Record<MetricId, () => PromSample[]> = {
  requests: counter('requests'),
  shadowVerdicts: counter('shadowVerdicts'),
  storeEvictions: counter('storeEvictions'),
  storeCalls: counter('storeCalls'),
  storeDuration: histogram('storeDuration'),
  shapingDelay: histogram('shapingDelay'),
  storeState: gauge('storeState'),
  activeLeases: gauge('activeLeases'),
  queuedRequests: gauge('queuedRequests'),
};

function collector(id: MetricId): PromCollector {
  const m = METRICS[id];
  const type = m.type === 'updowncounter' ? 'gauge' : m.type;
  const c: PromCollector = {
    name: m.prom,
    help: m.description,
    type,
    aggregator: 'sum',
    // The name as the registry left it: an OpenMetrics registry renames a counter's family without its
    // `_total` (tollgate_requests) and adds the suffix to each sample; the name registered would double it.
    get: async () => ({ name: c.name, help: c.help, type: c.type, aggregator: c.aggregator, values: SAMPLES[id]() }),
  };
  return c;
}

function isRegistry(value: unknown): value is CollectorRegistry {
  const r = value as Partial<CollectorRegistry> | null;
  return typeof r === 'object' && r !== null && typeof r.registerMetric === 'function' && typeof r.removeSingleMetric === 'function';
}

/**
 * Registers tollgate's series (the README's metric table) on `options.registry`; returns the function
 * that removes them. Decisions are tallied from this call on, for every limiter of the process.
 *
 * @example
 * import { Registry } from 'prom-client';
 * const registry = new Registry();
 * registerPrometheusMetrics({ registry });
 * app.get('/metrics', async (_req, res) => res.type(registry.contentType).send(await registry.metrics()));
 */
export function registerPrometheusMetrics(options: PrometheusOptions = {}): () => void {
  let registry: unknown = options.registry;
  if (registry === undefined) {
    const client = loadOptional<{ register: PromRegistryLike }>('prom-client');
    if (client === undefined) {
      throw codedError(
        Error,
        'ERR_RL_PROM_CLIENT_MISSING',
        "registerPrometheusMetrics() without a registry uses prom-client's global register, but prom-client is not installed; install it, or pass { registry }",
      );
    }
    registry = client.register;
  }
  if (!isRegistry(registry)) {
    throw codedError(
      TypeError,
      'ERR_RL_INVALID_REGISTRY',
      'registry must be a prom-client Registry (with registerMetric and removeSingleMetric)',
    );
  }
  const target = registry;
  const ids = Object.keys(METRICS) as MetricId[];
  for (const id of ids) target.registerMetric(collector(id));
  exporters.prometheus += 1;
  updateAttached();
  let registered = true;
  return () => {
    if (!registered) return;
    registered = false;
    for (const id of ids) target.removeSingleMetric(METRICS[id].prom);
    exporters.prometheus -= 1;
    updateAttached();
  };
}
