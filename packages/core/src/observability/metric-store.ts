/**
 * @module The process-wide tallies behind every exported metric. A decision adds 1 to a cell it already
 * holds (no attribute hashing, no allocation on the hot path); the OpenTelemetry meter and the
 * prom-client bridge read the cells when they collect. Cells are shared by attribute set, so two
 * limiters with the same policy name add up, and counters stay monotonic when a limiter is closed.
 * Nothing is tallied unless an exporter is attached (`exporters.attached`).
 */
import { ATTRIBUTES, type AttributeId, SHAPING_DELAY_BUCKETS, STORE_DURATION_BUCKETS } from './metric-names.js';

export type Labels = Readonly<Partial<Record<AttributeId, string>>>;
export type OtelAttributes = Readonly<Record<string, string>>;

function otelAttributes(labels: Labels): OtelAttributes {
  const out: Record<string, string> = {};
  for (const id of Object.keys(labels) as AttributeId[]) {
    const value = labels[id];
    if (value !== undefined) out[ATTRIBUTES[id].otel] = value;
  }
  return Object.freeze(out);
}

/** A string that names the attribute set `labels` (its names sorted). */
export function labelKey(labels: Labels): string {
  let key = '';
  for (const id of Object.keys(labels).sort() as AttributeId[]) key += `${id}=${labels[id] ?? ''}\u0000`;
  return key;
}

/** One monotonic counter series. */
export class CounterCell {
  value = 0;
  readonly attributes: OtelAttributes;
  constructor(readonly labels: Labels) {
    this.attributes = otelAttributes(labels);
  }
}

/** One histogram series: cumulative bucket counts over fixed upper bounds, the sum and the count. */
export class HistogramCell {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  readonly attributes: OtelAttributes;
  constructor(
    readonly labels: Labels,
    readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
    this.attributes = otelAttributes(labels);
  }

  record(value: number): void {
    const { bounds } = this;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += value;
    this.count += 1;
  }
}

/** One gauge observation. */
export interface GaugePoint {
  readonly labels: Labels;
  readonly value: number;
}

/** Something that reports gauge points when metrics are collected (a limiter's store state, leases, queues). */
export type GaugeSource = () => Iterable<GaugePoint>;

export type CounterId = 'requests' | 'shadowVerdicts' | 'storeEvictions' | 'storeCalls';
export type HistogramId = 'storeDuration' | 'shapingDelay';
export type GaugeId = 'storeState' | 'activeLeases' | 'queuedRequests';

const BOUNDS: Record<HistogramId, readonly number[]> = { storeDuration: STORE_DURATION_BUCKETS, shapingDelay: SHAPING_DELAY_BUCKETS };

const counters: Record<CounterId, Map<string, CounterCell>> = {
  requests: new Map(),
  shadowVerdicts: new Map(),
  storeEvictions: new Map(),
  storeCalls: new Map(),
};
const histograms: Record<HistogramId, Map<string, HistogramCell>> = { storeDuration: new Map(), shapingDelay: new Map() };
const gauges: Record<GaugeId, Set<WeakRef<GaugeSource>>> = { storeState: new Set(), activeLeases: new Set(), queuedRequests: new Set() };

/** Which exporters read the cells. The hot path checks `attached` and does nothing when it is false. */
export const exporters = {
  attached: false,
  otel: false,
  prometheus: 0,
  /**
   * An OpenTelemetry TracerProvider is registered (otel-meter.ts `probeMeterProvider`): every decision may
   * annotate the recording span where it runs (a request's, a worker's job), so it goes through the observer
   * (limiter/solo.ts).
   */
  tracing: false,
};

/** Something that follows `exporters.attached`: a limiter's store timer, which calls the store straight while it is false. */
export interface AttachedFollower {
  follow(attached: boolean): void;
}

/** Held weakly: a limiter dropped without `close()` is not kept alive by its metrics. */
const followers = new Set<WeakRef<AttachedFollower>>();
let sweepFollowersAt = 64;

/** Tells `follower` whether an exporter is attached, now and at every change, for as long as it lives. */
export function followAttached(follower: AttachedFollower): void {
  if (followers.size >= sweepFollowersAt) {
    for (const ref of followers) if (ref.deref() === undefined) followers.delete(ref);
    sweepFollowersAt = Math.max(64, 2 * followers.size);
  }
  followers.add(new WeakRef(follower));
  follower.follow(exporters.attached);
}

export function updateAttached(): void {
  const attached = exporters.otel || exporters.prometheus > 0;
  if (attached === exporters.attached) return;
  exporters.attached = attached;
  for (const ref of followers) {
    const follower = ref.deref();
    if (follower === undefined) followers.delete(ref);
    else follower.follow(attached);
  }
}

/** The cell of `labels`, created at first use. */
export function counterCell(id: CounterId, labels: Labels): CounterCell {
  const map = counters[id];
  const key = labelKey(labels);
  let cell = map.get(key);
  if (cell === undefined) {
    cell = new CounterCell(labels);
    map.set(key, cell);
  }
  return cell;
}

export function histogramCell(id: HistogramId, labels: Labels): HistogramCell {
  const map = histograms[id];
  const key = labelKey(labels);
  let cell = map.get(key);
  if (cell === undefined) {
    cell = new HistogramCell(labels, BOUNDS[id]);
    map.set(key, cell);
  }
  return cell;
}

export function histogramBounds(id: HistogramId): readonly number[] {
  return BOUNDS[id];
}

export function counterCells(id: CounterId): Iterable<CounterCell> {
  return counters[id].values();
}

export function histogramCells(id: HistogramId): Iterable<HistogramCell> {
  return histograms[id].values();
}

/**
 * Adds a gauge source; returns the function that removes it. The source is held weakly: a limiter that
 * is dropped without `close()` stops reporting instead of being kept alive by its metrics.
 */
export function addGaugeSource(id: GaugeId, source: GaugeSource): () => void {
  const ref = new WeakRef(source);
  gauges[id].add(ref);
  return () => {
    gauges[id].delete(ref);
  };
}

/** The gauge's points, summed over the sources by attribute set. */
export function gaugePoints(id: GaugeId): GaugePoint[] {
  const sums = new Map<string, { labels: Labels; value: number }>();
  for (const ref of gauges[id]) {
    const source = ref.deref();
    if (source === undefined) {
      gauges[id].delete(ref);
      continue;
    }
    for (const point of source()) {
      const key = labelKey(point.labels);
      const sum = sums.get(key);
      if (sum === undefined) sums.set(key, { labels: point.labels, value: point.value });
      else sum.value += point.value;
    }
  }
  return [...sums.values()];
}

/** OpenTelemetry attributes of `labels`, cached per attribute set for gauges. */
const gaugeAttributes = new Map<string, OtelAttributes>();
export function attributesOf(labels: Labels): OtelAttributes {
  const key = labelKey(labels);
  let attrs = gaugeAttributes.get(key);
  if (attrs === undefined) {
    attrs = otelAttributes(labels);
    if (gaugeAttributes.size < 10_000) gaugeAttributes.set(key, attrs);
  }
  return attrs;
}
