/**
 * @module Event-loop delay for the adaptive shedder: `perf_hooks.monitorEventLoopDelay`, read as the
 * p99 in milliseconds since the previous read, then reset (one reading per controller window).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

export interface EventLoopDelaySampler {
  /** p99 event-loop delay (ms) since the last read, minus the timer resolution; 0 when nothing was recorded. */
  read(): number;
  close(): void;
}

/** Starts the monitor (resolution 10 ms, as @fastify/under-pressure uses). */
export function createEventLoopDelaySampler(resolutionMs = 10): EventLoopDelaySampler {
  const histogram = monitorEventLoopDelay({ resolution: resolutionMs });
  histogram.enable();
  return {
    read() {
      const p99 = histogram.count > 0 ? histogram.percentile(99) / 1e6 : 0;
      histogram.reset();
      return Math.max(0, p99 - resolutionMs);
    },
    close() {
      histogram.disable();
    },
  };
}
