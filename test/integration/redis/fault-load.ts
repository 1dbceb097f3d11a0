/**
 * @module The load the fault suites put on a limiter while they inject a fault: `concurrency` loops, each
 * checking its key (of `keys`) back to back with a 1 ms pause, recording per decision when it was asked,
 * how long it waited, and what it said. `summarize` reads a stretch of the run the same way for every
 * fault and every version: decisions, degraded ones, the longest wait, and admissions over the limit.
 */
import type { Decision } from '@tollgate/core';

export interface Sample {
  /** When the check was asked (performance.now). */
  readonly at: number;
  readonly waitMs: number;
  readonly key: string;
  readonly allowed: boolean;
  readonly degraded: boolean;
}

export interface LoadOptions {
  readonly concurrency: number;
  readonly keys: readonly string[];
}

/** Starts the loops; `stop()` ends them and gives every sample. */
export function startLoad(check: (key: string) => Promise<Decision>, { concurrency, keys }: LoadOptions) {
  const samples: Sample[] = [];
  let running = true;
  const loops = Array.from({ length: concurrency }, async (_, i) => {
    const key = keys[i % keys.length] as string;
    while (running) {
      const at = performance.now();
      const d = await check(key);
      samples.push({ at, waitMs: performance.now() - at, key, allowed: d.allowed, degraded: d.degraded });
      await new Promise((r) => setTimeout(r, 1));
    }
  });
  return {
    samples,
    async stop(): Promise<Sample[]> {
      running = false;
      await Promise.all(loops);
      return samples;
    },
  };
}

export interface Summary {
  readonly decisions: number;
  readonly degraded: number;
  readonly maxWaitMs: number;
  readonly p99WaitMs: number;
  /** Admissions over `limit`, summed over keys (over the whole run). */
  readonly overAdmitted: number;
}

/** The samples asked in `[from, to)`; over-admission over all of them, per key against `limit`. */
export function summarize(samples: readonly Sample[], from: number, to: number, limit: number): Summary {
  const inside = samples.filter((s) => s.at >= from && s.at < to);
  const waits = inside.map((s) => s.waitMs).sort((a, b) => a - b);
  const admitted = new Map<string, number>();
  for (const s of samples) if (s.allowed) admitted.set(s.key, (admitted.get(s.key) ?? 0) + 1);
  let over = 0;
  for (const n of admitted.values()) over += Math.max(0, n - limit);
  return {
    decisions: inside.length,
    degraded: inside.filter((s) => s.degraded).length,
    maxWaitMs: Math.round(waits.at(-1) ?? 0),
    p99WaitMs: Math.round(waits[Math.floor(waits.length * 0.99)] ?? 0),
    overAdmitted: over,
  };
}

/** One line for the log of a suite: what a fault did. */
export function line(name: string, s: Summary): string {
  return `${name}: ${s.decisions} decisions, ${s.degraded} degraded, longest wait ${s.maxWaitMs} ms (p99 ${s.p99WaitMs} ms), ${s.overAdmitted} admitted over the limit`;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
