/**
 * @module The load the fault suites put on a limiter while they inject a fault: `concurrency` loops, each
 * checking its key (of `keys`) back to back with a 1 ms pause (or none: `pauseMs`), recording per decision when it was asked,
 * how long it waited, and what it said. `summarize` reads a stretch of the run the same way for every
 * fault and every version: decisions, degraded ones, the longest wait, and admissions (over the limit,
 * once the keys are exhausted).
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
  /**
   * The pause between a loop's checks, ms (default 1). 0 yields with `setImmediate` instead: the event
   * loop never sits idle, as in a server busy with its requests.
   */
  readonly pauseMs?: number;
}

/** Starts the loops; `stop()` ends them and gives every sample. */
export function startLoad(check: (key: string) => Promise<Decision>, { concurrency, keys, pauseMs = 1 }: LoadOptions) {
  const samples: Sample[] = [];
  let running = true;
  const loops = Array.from({ length: concurrency }, async (_, i) => {
    const key = keys[i % keys.length] as string;
    while (running) {
      const at = performance.now();
      const d = await check(key);
      samples.push({ at, waitMs: performance.now() - at, key, allowed: d.allowed, degraded: d.degraded });
      await new Promise((r) => (pauseMs === 0 ? setImmediate(r) : setTimeout(r, pauseMs)));
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
  /**
   * Admissions in the stretch. The suites start a fault once Redis has refused every key (`exhausted`),
   * with limits that refill once a day: each is one over the limit.
   */
  readonly admitted: number;
  /** Of those, admitted by the failure mode (degraded). */
  readonly degradedAdmitted: number;
}

/** The samples asked in `[from, to)`. */
export function summarize(samples: readonly Sample[], from: number, to: number): Summary {
  const inside = samples.filter((s) => s.at >= from && s.at < to);
  const waits = inside.map((s) => s.waitMs).sort((a, b) => a - b);
  return {
    decisions: inside.length,
    degraded: inside.filter((s) => s.degraded).length,
    maxWaitMs: Math.round(waits.at(-1) ?? 0),
    p99WaitMs: Math.round(waits[Math.floor(waits.length * 0.99)] ?? 0),
    admitted: inside.filter((s) => s.allowed).length,
    degradedAdmitted: inside.filter((s) => s.allowed && s.degraded).length,
  };
}

/** One line for the log of a suite: what a fault did. */
export function line(name: string, s: Summary): string {
  return `${name}: ${s.decisions} decisions, ${s.degraded} degraded, longest wait ${s.maxWaitMs} ms (p99 ${s.p99WaitMs} ms), ${s.admitted} admitted (${s.degradedAdmitted} by the failure mode)`;
}

/** Waits until Redis itself (not the failure mode) has refused a check on every key of the load. */
export async function exhausted(samples: readonly Sample[], timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const keys = new Set(samples.map((s) => s.key));
    const refused = new Set(samples.filter((s) => !s.allowed && !s.degraded).map((s) => s.key));
    if (keys.size > 0 && refused.size === keys.size) return;
    if (performance.now() > deadline) throw new Error(`the keys were not exhausted within ${timeoutMs} ms`);
    await sleep(20);
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
