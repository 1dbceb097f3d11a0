/**
 * @module The OpenTelemetry side, with no tollgate option: `@opentelemetry/api` (an optional peer) is
 * loaded at the first limiter, and when the app has registered a global MeterProvider, tollgate's meter
 * reports the cells of metric-store.ts through observable instruments and records the two histograms.
 * A provider registered later (or replaced, or removed) is picked up within a second by an unref'd
 * probe. Without the package, or without a provider, nothing is tallied and nothing is recorded.
 * Tracing: when a span is active and recording, each decision of an HTTP request adds a
 * `tollgate.decision` event to it.
 */
import type * as OtelApi from '@opentelemetry/api';
import { METRICS, type MetricDescriptor, type MetricId } from './metric-names.js';
import {
  attributesOf,
  type CounterId,
  counterCells,
  exporters,
  type GaugeId,
  gaugePoints,
  type HistogramId,
  histogramBounds,
  labelKey,
  type OtelAttributes,
  updateAttached,
} from './metric-store.js';
import { loadOptional } from './optional-module.js';

/** The meter's name (the instrumentation scope), as exporters show it. */
export const METER_NAME = '@tollgate/core';
const METER_VERSION = '0.1.0';
const PROBE_INTERVAL_MS = 1000;

type Api = typeof OtelApi;

interface Bound {
  readonly provider: OtelApi.MeterProvider;
  readonly storeDuration: OtelApi.Histogram;
  readonly shapingDelay: OtelApi.Histogram;
}

let api: Api | undefined | null = null;
let bound: Bound | undefined;
let probeTimer: ReturnType<typeof setInterval> | undefined;

function describe(m: MetricDescriptor): OtelApi.MetricOptions {
  return { description: m.description, unit: m.unit };
}

function observeCounter(id: CounterId): OtelApi.ObservableCallback {
  return (result) => {
    for (const cell of counterCells(id)) result.observe(cell.value, cell.attributes);
  };
}

/** The most attribute sets of one gauge remembered to be reported at 0 once gone. */
const GAUGE_SETS = 10_000;

/**
 * Every attribute set the gauge reported is reported again, at 0, once its sources no longer have it (a
 * closed limiter's, a store's point replaced by its nodes'): a cumulative reader (the SDK's default)
 * keeps the last value of a set a callback leaves out, so a closed limiter's breaker read 'open' for ever.
 */
function observeGauge(id: GaugeId): OtelApi.ObservableCallback {
  const seen = new Map<string, OtelAttributes>();
  return (result) => {
    const reported = new Set<string>();
    for (const point of gaugePoints(id)) {
      const key = labelKey(point.labels);
      let attributes = seen.get(key);
      if (attributes === undefined) {
        attributes = attributesOf(point.labels);
        if (seen.size < GAUGE_SETS) seen.set(key, attributes);
      }
      reported.add(key);
      result.observe(point.value, attributes);
    }
    // Once: a cumulative reader keeps the 0, and the set is forgotten (memory bounded by the live sets).
    for (const [key, attributes] of seen) {
      if (reported.has(key)) continue;
      result.observe(0, attributes);
      seen.delete(key);
    }
  };
}

function histogram(meter: OtelApi.Meter, id: HistogramId & MetricId): OtelApi.Histogram {
  const m = METRICS[id];
  return meter.createHistogram(m.otel, { ...describe(m), advice: { explicitBucketBoundaries: [...histogramBounds(id)] } });
}

function bind(provider: OtelApi.MeterProvider): Bound {
  const meter = provider.getMeter(METER_NAME, METER_VERSION);
  meter.createObservableCounter(METRICS.requests.otel, describe(METRICS.requests)).addCallback(observeCounter('requests'));
  meter
    .createObservableCounter(METRICS.shadowVerdicts.otel, describe(METRICS.shadowVerdicts))
    .addCallback(observeCounter('shadowVerdicts'));
  meter
    .createObservableCounter(METRICS.storeEvictions.otel, describe(METRICS.storeEvictions))
    .addCallback(observeCounter('storeEvictions'));
  meter.createObservableCounter(METRICS.storeCalls.otel, describe(METRICS.storeCalls)).addCallback(observeCounter('storeCalls'));
  meter.createObservableGauge(METRICS.storeState.otel, describe(METRICS.storeState)).addCallback(observeGauge('storeState'));
  meter.createObservableUpDownCounter(METRICS.activeLeases.otel, describe(METRICS.activeLeases)).addCallback(observeGauge('activeLeases'));
  meter
    .createObservableUpDownCounter(METRICS.queuedRequests.otel, describe(METRICS.queuedRequests))
    .addCallback(observeGauge('queuedRequests'));
  return { provider, storeDuration: histogram(meter, 'storeDuration'), shapingDelay: histogram(meter, 'shapingDelay') };
}

/** The API's no-op TracerProvider (what the global one delegates to until an app registers its own). */
let noopTracerProvider: unknown;

/**
 * Whether the app registered a global TracerProvider: the global one delegates to the API's no-op until
 * then. An API without `ProxyTracerProvider` (a later major) cannot be told: taken as registered.
 */
function tracerRegistered(a: Api): boolean {
  const globalProvider = a.trace.getTracerProvider() as { getDelegate?: () => unknown };
  const ProxyProvider = (a as { ProxyTracerProvider?: new () => { getDelegate(): unknown } }).ProxyTracerProvider;
  if (typeof globalProvider.getDelegate !== 'function' || ProxyProvider === undefined) return true;
  noopTracerProvider ??= new ProxyProvider().getDelegate();
  return globalProvider.getDelegate() !== noopTracerProvider;
}

/** Checks the global MeterProvider and (re)binds the instruments when it changed; and whether a TracerProvider is registered (`exporters.tracing`). */
export function probeMeterProvider(): void {
  const a = otelApi();
  if (a === undefined) return;
  exporters.tracing = tracerRegistered(a);
  const provider = a.metrics.getMeterProvider();
  // The API hands out its own no-op meter when no provider is registered.
  const registered = provider.getMeter(METER_NAME, METER_VERSION) !== a.createNoopMeter();
  if (!registered) {
    bound = undefined;
  } else if (bound?.provider !== provider) {
    bound = bind(provider);
  }
  if (exporters.otel !== registered) {
    exporters.otel = registered;
    updateAttached();
  }
}

/** `@opentelemetry/api`, or undefined when it is not installed. Loaded once; starts the probe. */
export function otelApi(): Api | undefined {
  if (api !== null) return api;
  api = loadOptional<Api>('@opentelemetry/api');
  if (api !== undefined && probeTimer === undefined) {
    probeTimer = setInterval(probeMeterProvider, PROBE_INTERVAL_MS);
    probeTimer.unref();
  }
  return api;
}

/** Records a store call's duration when a MeterProvider is bound. */
export function recordStoreDuration(seconds: number, attributes: OtelAttributes): void {
  bound?.storeDuration.record(seconds, attributes);
}

/** Records a shaped request's delay when a MeterProvider is bound. */
export function recordShapingDelay(seconds: number, attributes: OtelAttributes): void {
  bound?.shapingDelay.record(seconds, attributes);
}

/** The span active in the current context when it records, else undefined. */
export function recordingSpan(): OtelApi.Span | undefined {
  const a = api;
  if (a === undefined || a === null) return undefined;
  const span = a.trace.getActiveSpan();
  return span?.isRecording() ? span : undefined;
}
