/**
 * @module Where features that hold requests report them: concurrency policies their active leases,
 * queueing features their queue lengths. A feature calls `reportInFlight(source)` once and keeps the
 * returned function to stop; the source is asked only when metrics are collected, so reporting costs
 * nothing per request. Values are summed per policy across sources.
 */
import { limiterLabel } from './metric-names.js';
import { addGaugeSource, type GaugePoint } from './metric-store.js';

/** What a feature holds now, per policy. */
export interface InFlightPoint {
  readonly policy: string;
  /** The limiter's `name` (`tollgate.limiter`); undefined without one. */
  readonly limiter?: string;
  /** Concurrency leases held now (`tollgate.leases.active`). */
  readonly leases?: number;
  /** Requests waiting now (`tollgate.queue.length`). */
  readonly queued?: number;
}

/** A function that says what is in flight now. */
export type InFlightSource = () => Iterable<InFlightPoint>;

/**
 * Reports `source` as `tollgate.leases.active` and `tollgate.queue.length`; returns the function that
 * stops. The source is held weakly: keep a reference to it for as long as it should report.
 */
export function reportInFlight(source: InFlightSource): () => void {
  const leases = (): GaugePoint[] => pick(source, 'leases');
  const queued = (): GaugePoint[] => pick(source, 'queued');
  holders.set(source, [leases, queued]);
  const stopLeases = addGaugeSource('activeLeases', leases);
  const stopQueued = addGaugeSource('queuedRequests', queued);
  return () => {
    stopLeases();
    stopQueued();
    holders.delete(source);
  };
}

/** Keeps each source's two adapters alive exactly as long as the source itself. */
const holders = new WeakMap<InFlightSource, readonly [() => GaugePoint[], () => GaugePoint[]]>();

function pick(source: InFlightSource, field: 'leases' | 'queued'): GaugePoint[] {
  const out: GaugePoint[] = [];
  for (const point of source()) {
    const value = point[field];
    if (value === undefined) continue;
    out.push({ labels: { policy: point.policy, ...limiterLabel(point.limiter) }, value });
  }
  return out;
}
