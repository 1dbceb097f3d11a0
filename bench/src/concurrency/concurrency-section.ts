/**
 * @module Section D of `pnpm bench`: concurrency limits and load shedding (issue 11), measured with
 * examples/concurrency's own scenarios in a child process: the same open-loop overload (twice the
 * pool's capacity) against the app with adaptive shedding and against its unprotected twin, `runs`
 * times, then one user's burst of exports against a per-key concurrency limit of 2.
 */
import { join } from 'node:path';
import type { Comparison, ExportBurst } from '../../../examples/concurrency/src/scenarios.js';
import { BENCH_DIR, runChild } from '../child-process.js';
import type { ConcurrencyCellResult, ConcurrencyInput } from './concurrency-cell.js';

export interface ConcurrencyResult {
  readonly durationMs: number;
  readonly rps: number;
  readonly runs: readonly Comparison[];
  readonly burst: ExportBurst | undefined;
  readonly error: string | undefined;
}

export interface ConcurrencySectionOptions extends ConcurrencyInput {
  readonly profile: boolean;
  readonly log: (line: string) => void;
}

export async function runConcurrencySection(o: ConcurrencySectionOptions): Promise<ConcurrencyResult> {
  o.log(
    `D: concurrency and shedding, ${o.runs} run(s) of ${o.durationMs} ms at ${o.rps} requests/s against each app, then a burst of exports`,
  );
  const input: ConcurrencyInput = { runs: o.runs, durationMs: o.durationMs, rps: o.rps };
  try {
    const r = await runChild<ConcurrencyInput, ConcurrencyCellResult>(join(BENCH_DIR, 'src', 'concurrency', 'concurrency-cell.ts'), input, {
      // Each run: two loads of durationMs plus up to 10 s of draining each.
      timeoutMs: o.runs * (2 * o.durationMs + 25_000) + 30_000,
      profile: o.profile,
      label: 'D-concurrency',
    });
    for (const [i, c] of r.runs.entries()) {
      o.log(
        `  run ${i + 1}: shedding p99 ${c.protectedRun.ok.p99} ms (${c.protectedRun.byStatus['200'] ?? 0} x 200, ${c.protectedRun.byStatus['503'] ?? 0} x 503), ` +
          `unprotected p99 ${c.unprotectedRun.ok.p99} ms`,
      );
    }
    return { durationMs: o.durationMs, rps: o.rps, runs: r.runs, burst: r.burst, error: undefined };
  } catch (error) {
    const message = (error as Error).message.split('\n')[0] ?? 'failed';
    o.log(`  failed: ${message}`);
    return { durationMs: o.durationMs, rps: o.rps, runs: [], burst: undefined, error: message };
  }
}
