/**
 * @module Section I of `pnpm bench`: issue 24's in-process comparisons, interleaved in one process per run
 * (interleaved.ts): this checkout's awaited `limiter.check(key)` on MemoryStore (gcra, the default, and
 * fixed-window, the closest to express-rate-limit's counter) against express-rate-limit's
 * `MemoryStore.increment(key)` and against tollgate v0.1 (builds.ts); and what plans, an exporter, hot
 * keys and a concurrency policy each add to a plain one-policy limiter. Every cell runs `processes`
 * times, each time a new process, cells interleaved (1key, 100k, over, ..., 1key, ...); a row's figure
 * is the median of the per-process medians of the pass ratios, with their range as the spread.
 */
import { join } from 'node:path';
import { BENCH_DIR, runChild } from '../child-process.js';
import { envWithoutNodePath } from '../observability/baseline.js';
import { median, range } from '../stats.js';
import { buildInterleaved, V01_COMMIT } from './builds.js';
import { INTERLEAVED_CELLS, type InterleavedInput, type InterleavedProcessResult, PAIRS, pairId, SUBJECTS } from './interleaved.js';

export interface InterleavedRow {
  readonly cell: string;
  readonly cellLabel: string;
  /** `numerator/denominator` subject ids. */
  readonly pair: string;
  readonly numerator: string;
  readonly denominator: string;
  /** Median over the processes of each side's ns per decision (CPU time). */
  readonly numeratorNs: number;
  readonly denominatorNs: number;
  /** Median of the per-process medians of the pass ratios. */
  readonly ratio: number;
  readonly processRatios: readonly number[];
  readonly spread: { readonly min: number; readonly max: number };
}

export interface InterleavedResult {
  readonly rows: readonly InterleavedRow[];
  readonly labels: Readonly<Record<string, string>>;
  /** Over-the-limit cells: admissions per subject summed over processes (refills). */
  readonly unexpected: Readonly<Record<string, Readonly<Record<string, number>>>>;
  readonly processes: number;
  readonly copies: number;
  readonly passes: number;
  readonly warmUpPasses: number;
  readonly batch: number;
  readonly v01Commit: string;
  /** Why v0.1 is missing from the run (its history not in this clone), or undefined. */
  readonly v01Error: string | undefined;
  readonly errors: readonly string[];
}

export interface InterleavedSectionOptions {
  readonly processes: number;
  readonly copies: number;
  readonly passes: number;
  readonly warmUpPasses: number;
  readonly batch: number;
  readonly cells?: readonly string[];
  /** Only these subjects of the comparison cells (the smoke run: gcra against v0.1 and express-rate-limit); all when absent. */
  readonly subjects?: readonly string[];
  readonly only: RegExp | undefined;
  readonly profile: boolean;
  readonly log: (line: string) => void;
}

const slice = <T>(xs: readonly T[], from: number, n: number): T[] => xs.slice(from, from + n);

export async function runInterleavedSection(o: InterleavedSectionOptions): Promise<InterleavedResult> {
  const cells = INTERLEAVED_CELLS.filter(
    (c) => (o.cells === undefined || o.cells.includes(c.id)) && (o.only === undefined || o.only.test(`I/${c.id}`)),
  );
  const n = o.copies;
  const wanted = (id: string): boolean => o.subjects === undefined || o.subjects.includes(id);
  const builds = buildInterleaved({
    copies: n,
    currentCopies: cells.some((c) => c.set === 'extras') ? 5 * n : 2 * n,
    twin: cells.some((c) => c.set === 'otel'),
    v01: cells.some((c) => c.set === 'main') && (wanted('v01-gcra') || wanted('v01-fixed-window')),
  });
  const errors: string[] = [];
  if (builds.v01Error !== undefined) o.log(`  ${builds.v01Error}: its cells are not available`);
  const copiesOf = (set: 'main' | 'extras' | 'otel'): Record<string, readonly string[]> => {
    if (set === 'otel') return { 'plain-unwatched': builds.twin, otel: slice(builds.current, 0, n) };
    if (set === 'extras') return Object.fromEntries(SUBJECTS.extras.map((d, i) => [d.id, slice(builds.current, i * n, n)]));
    const all: Record<string, readonly string[]> = {
      'tollgate-gcra': slice(builds.current, 0, n),
      'tollgate-fixed-window': slice(builds.current, n, n),
      ...(builds.v01 === undefined ? {} : { 'v01-gcra': slice(builds.v01, 0, n), 'v01-fixed-window': slice(builds.v01, n, n) }),
      erl: builds.erl,
    };
    return Object.fromEntries(Object.entries(all).filter(([id]) => wanted(id)));
  };
  o.log(
    `I: interleaved in one process, ${o.processes} process(es) per cell, ${n} copies of each subject, ${o.passes} passes of ${o.batch.toLocaleString('en-US')} decisions per copy`,
  );
  const results = new Map<string, InterleavedProcessResult[]>();
  for (let p = 0; p < o.processes; p++) {
    for (const c of cells) {
      const input: InterleavedInput = {
        cell: c.id,
        copies: copiesOf(c.set),
        passes: o.passes,
        warmUpPasses: o.warmUpPasses,
        batch: o.batch,
      };
      try {
        const r = await runChild<InterleavedInput, InterleavedProcessResult>(
          join(BENCH_DIR, 'src', 'interleaved', 'interleaved-cell.ts'),
          input,
          {
            timeoutMs: 10 * 60_000,
            // The providerless twin must not find `@opentelemetry/api` through pnpm's NODE_PATH.
            env: envWithoutNodePath(),
            profile: o.profile,
            label: `I-${c.id}-${p + 1}`,
          },
        );
        results.set(c.id, [...(results.get(c.id) ?? []), r]);
        o.log(
          `  ${c.id} #${p + 1}: ${Object.entries(r.ratios)
            .map(([id, xs]) => `${id} ${median(xs).toFixed(3)}`)
            .join(', ')}`,
        );
      } catch (error) {
        errors.push(`${c.id} #${p + 1}: ${(error as Error).message.split('\n')[0]}`);
        o.log(`  ${c.id} #${p + 1}: failed`);
      }
    }
  }
  const rows: InterleavedRow[] = [];
  const unexpected: Record<string, Record<string, number>> = {};
  for (const c of cells) {
    const runs = results.get(c.id) ?? [];
    if (runs.length === 0) continue;
    if (c.over) {
      const sum: Record<string, number> = {};
      for (const r of runs) for (const [id, k] of Object.entries(r.unexpected)) sum[id] = (sum[id] ?? 0) + k;
      unexpected[c.id] = sum;
    }
    for (const pair of PAIRS[c.set]) {
      const id = pairId(pair);
      const perProcess = runs.filter((r) => r.ratios[id] !== undefined).map((r) => median(r.ratios[id] as readonly number[]));
      if (perProcess.length === 0) continue;
      rows.push({
        cell: c.id,
        cellLabel: c.label,
        pair: id,
        numerator: pair[0],
        denominator: pair[1],
        numeratorNs: median(runs.map((r) => r.ns[pair[0]] as number)),
        denominatorNs: median(runs.map((r) => r.ns[pair[1]] as number)),
        ratio: median(perProcess),
        processRatios: perProcess,
        spread: range(perProcess),
      });
    }
  }
  const labels = Object.fromEntries(Object.values(SUBJECTS).flatMap((defs) => defs.map((d) => [d.id, d.label])));
  return {
    rows,
    labels,
    unexpected,
    processes: o.processes,
    copies: n,
    passes: o.passes,
    warmUpPasses: o.warmUpPasses,
    batch: o.batch,
    v01Commit: V01_COMMIT,
    v01Error: builds.v01Error,
    errors,
  };
}
