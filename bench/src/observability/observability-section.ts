/**
 * @module Section O of `pnpm bench`: what observability costs a decision (issue 12), in paired runs
 * (overhead.ts) of this checkout's core against another build in the same process (baseline.ts). The
 * core measured is a copy written like the others (`buildObservabilityCurrent`), so that two builds
 * differ by what the row is about and not also by where they live:
 * - no exporter, against the same core with the observability hooks cut out (the 2 % target);
 * - the OpenTelemetry SDK as the global MeterProvider, against the same core that cannot see it (no
 *   `@opentelemetry/api`), i.e. the same run without a provider (the 10 % target);
 * - a prom-client registry, against that same providerless core (for reference);
 * - a control: the core against its providerless copy with no exporter, i.e. the same code twice,
 *   which shows how small a difference the method resolves on this machine.
 * Each runs in its own processes (the exporter is process-wide), one case per process as section A runs
 * one cell per process, `processes` times, interleaved (control, none, otel, prometheus, control, ...) so
 * that a change of machine load touches them alike.
 * Each process loads `copies` copies of each build (overhead.ts: why copies). A case's figure is the
 * median of the pass ratios pooled over its processes.
 */
import { join } from 'node:path';
import { BENCH_DIR, runChild } from '../child-process.js';
import { bootstrapMedianInterval, median } from '../stats.js';
import {
  buildCopies,
  buildObservabilityBaseline,
  buildObservabilityCurrent,
  buildProviderlessTwin,
  COPIES_DIR,
  envWithoutNodePath,
  TWINS_DIR,
} from './baseline.js';
import { type Exporter, OVERHEAD_CASES, type OverheadCaseResult, type OverheadInput } from './overhead.js';

export type OverheadSubject = Exporter | 'control';
export const OVERHEAD_SUBJECTS: readonly OverheadSubject[] = ['control', 'none', 'otel', 'prometheus'];
export const SUBJECT_LABELS: Readonly<Record<OverheadSubject, string>> = {
  control: 'control: the core vs its providerless copy, no exporter',
  none: 'no exporter vs hooks cut',
  otel: 'OpenTelemetry SDK vs no provider',
  prometheus: 'prom-client registry vs no provider',
};

export interface OverheadRow {
  readonly subject: OverheadSubject;
  readonly case: string;
  readonly label: string;
  /** Medians over every pass of every process. */
  readonly baselineNs: number;
  readonly currentNs: number;
  /** Median of the pass ratios pooled over the processes. */
  readonly ratio: number;
  /** Each process's median ratio: the spread from process to process (JIT decisions differ). */
  readonly processRatios: readonly number[];
  /** 90 % bootstrap interval of `ratio`, processes resampled (stats.ts): how finely this run resolves it. */
  readonly interval: { readonly low: number; readonly high: number };
}

export interface ObservabilityResult {
  readonly rows: readonly OverheadRow[];
  readonly processes: number;
  readonly copies: number;
  readonly passes: number;
  readonly batch: number;
  /** Processes that failed, with why; the rows then hold what the others measured. */
  readonly errors: readonly string[];
}

export interface ObservabilitySectionOptions {
  readonly processes: number;
  /** Copies of each build loaded in every process (overhead.ts: why copies). */
  readonly copies: number;
  readonly passes: number;
  readonly batch: number;
  readonly cases?: readonly string[];
  readonly profile: boolean;
  readonly log: (line: string) => void;
}

export async function runObservabilitySection(o: ObservabilitySectionOptions): Promise<ObservabilityResult> {
  const cases = o.cases ?? OVERHEAD_CASES.map((c) => c.id);
  const real = buildCopies(buildObservabilityCurrent, join(COPIES_DIR, 'obs-current'), o.copies);
  const cut = buildCopies(buildObservabilityBaseline, join(COPIES_DIR, 'obs-baseline'), o.copies);
  const providerless = buildCopies(buildProviderlessTwin, join(TWINS_DIR, 'tollgate-bench-providerless'), o.copies);
  const builds: Readonly<Record<OverheadSubject, { current: readonly string[]; baseline: readonly string[] }>> = {
    control: { current: real, baseline: providerless },
    none: { current: real, baseline: cut },
    otel: { current: real, baseline: providerless },
    prometheus: { current: real, baseline: providerless },
  };
  o.log(
    `O: observability overhead, ${o.processes} process(es) per exporter and case, ${o.copies} copies of each build per process, ${o.passes} passes of ${o.batch.toLocaleString('en-US')} decisions per copy`,
  );
  const results = new Map<OverheadSubject, OverheadCaseResult[][]>();
  const errors: string[] = [];
  for (let p = 0; p < o.processes; p++) {
    for (const subject of OVERHEAD_SUBJECTS) {
      const line: string[] = [];
      // One case per process, as section A runs one cell per process: a case measured after others would
      // carry their JIT history (decision paths compiled for admissions, then recompiled on the first
      // rejections from mixed feedback, differently in each build).
      for (const c of cases) {
        if (OVERHEAD_CASES.find((x) => x.id === c)?.subjects?.includes(subject) === false) continue;
        const input: OverheadInput = {
          exporter: subject === 'control' ? 'none' : subject,
          ...builds[subject],
          baselineUnwatched: subject !== 'none',
          cases: [c],
          passes: o.passes,
          batch: o.batch,
        };
        try {
          const r = await runChild<OverheadInput, OverheadCaseResult[]>(
            join(BENCH_DIR, 'src', 'observability', 'overhead-cell.ts'),
            input,
            {
              timeoutMs: 10 * 60_000,
              env: envWithoutNodePath(),
              profile: o.profile,
              label: `O-${subject}-${c}-${p + 1}`,
            },
          );
          results.set(subject, [...(results.get(subject) ?? []), r]);
          line.push(...r.map((x) => `${x.case} ${median(x.ratios).toFixed(3)}`));
        } catch (error) {
          errors.push(`${subject} ${c} #${p + 1}: ${(error as Error).message.split('\n')[0]}`);
          line.push(`${c} failed`);
        }
      }
      o.log(`  ${subject} #${p + 1}: ${line.join(', ')}`);
    }
  }
  const rows: OverheadRow[] = [];
  for (const subject of OVERHEAD_SUBJECTS) {
    const runs = results.get(subject) ?? [];
    for (const c of OVERHEAD_CASES.filter((x) => cases.includes(x.id))) {
      const perProcess = runs.map((r) => r.find((x) => x.case === c.id)).filter((x) => x !== undefined);
      if (perProcess.length === 0) continue;
      rows.push({
        subject,
        case: c.id,
        label: c.label,
        baselineNs: median(perProcess.map((x) => x.baselineNs)),
        currentNs: median(perProcess.map((x) => x.currentNs)),
        ratio: median(perProcess.flatMap((x) => x.ratios)),
        processRatios: perProcess.map((x) => median(x.ratios)),
        interval: bootstrapMedianInterval(perProcess.map((x) => x.ratios)),
      });
    }
  }
  return { rows, processes: o.processes, copies: o.copies, passes: o.passes, batch: o.batch, errors };
}
