/**
 * @module Section A: runs every (subject, scenario) cell of the in-process decision benchmark, each in
 * its own child process, one after the other.
 */
import { join } from 'node:path';
import { BENCH_DIR, runChild } from '../child-process.js';
import type { DecisionRow } from '../results.js';
import { median } from '../stats.js';
import type { DecisionCellInput, DecisionCellResult } from './decision-cell.js';
import { DECISION_SUBJECTS, type SubjectSpec } from './decision-subjects.js';
import type { DecisionScenario } from './scenarios.js';

export interface DecisionSectionOptions {
  readonly scenarios: readonly DecisionScenario[];
  /** Subject ids to run; all when undefined. */
  readonly subjects: readonly string[] | undefined;
  /** Times every cell runs, each time in a new process. */
  readonly passes: number;
  /** mitata runs per process. */
  readonly runs: number;
  readonly runMs: number;
  readonly warmupMs: number;
  readonly only: RegExp | undefined;
  readonly profile: boolean;
  readonly log: (line: string) => void;
}

const CELL = join(BENCH_DIR, 'src', 'decisions', 'decision-cell.ts');

export function decisionCellId(subject: SubjectSpec, scenario: DecisionScenario): string {
  return `A/${subject.id}/${scenario.id}`;
}

/** One cell's passes merged: every run of every pass, the medians over them, the sums of the counts. */
export function mergePasses(passes: readonly DecisionCellResult[]): DecisionCellResult {
  const runNs = passes.flatMap((p) => p.runNs);
  const heaps = passes.flatMap((p) => (p.heapBytesPerKey === undefined ? [] : [p.heapBytesPerKey]));
  return {
    nsPerDecision: median(runNs),
    runNs,
    heapBytesPerKey: heaps.length === 0 ? undefined : median(heaps),
    populateMs: median(passes.map((p) => p.populateMs)),
    unexpected: passes.reduce((sum, p) => sum + p.unexpected, 0),
    decisions: passes.reduce((sum, p) => sum + p.decisions, 0),
  };
}

/**
 * Runs every cell once per pass (pass 1 over all cells, then pass 2, ...), so a burst of load from
 * elsewhere on the machine lands on one pass of many cells rather than on every run of one cell.
 */
export async function runDecisionSection(o: DecisionSectionOptions): Promise<DecisionRow[]> {
  const subjects = DECISION_SUBJECTS.filter((s) => o.subjects === undefined || o.subjects.includes(s.id));
  const cells = o.scenarios.flatMap((scenario) =>
    subjects.filter((subject) => o.only?.test(decisionCellId(subject, scenario)) ?? true).map((subject) => ({ subject, scenario })),
  );
  const passes = new Map<string, DecisionCellResult[]>();
  const failures = new Map<string, string>();
  for (let pass = 1; pass <= o.passes; pass++) {
    for (const { subject, scenario } of cells) {
      const id = decisionCellId(subject, scenario);
      if (failures.has(id)) continue;
      const input: DecisionCellInput = {
        subject: subject.id,
        keys: scenario.keys,
        overLimit: scenario.overLimit,
        runs: o.runs,
        runMs: o.runMs,
        warmupMs: o.warmupMs,
        inner: 1000,
      };
      try {
        const result = await runChild<DecisionCellInput, DecisionCellResult>(CELL, input, {
          nodeFlags: ['--expose-gc', '--max-old-space-size=6144'],
          profile: o.profile,
          label: `${id.replaceAll('/', '_')}_pass${pass}`,
          timeoutMs: 300_000,
        });
        passes.set(id, [...(passes.get(id) ?? []), result]);
        const heap = result.heapBytesPerKey === undefined ? '' : `, ${result.heapBytesPerKey.toFixed(0)} B/key`;
        o.log(`${id} (pass ${pass}/${o.passes}): ${result.nsPerDecision.toFixed(1)} ns/decision${heap}`);
      } catch (error) {
        failures.set(id, (error as Error).message.split('\n')[0] ?? 'unknown error');
        o.log(`${id}: FAILED ${(error as Error).message}`);
      }
    }
  }
  return cells.map(({ subject, scenario }) => {
    const id = decisionCellId(subject, scenario);
    const base = { subject: subject.id, label: subject.label, kind: subject.kind, scenario: scenario.id };
    const failure = failures.get(id);
    if (failure !== undefined) return { ...base, outcome: { status: 'failed', reason: failure } };
    return { ...base, outcome: { status: 'ok', ...mergePasses(passes.get(id) ?? []) } };
  });
}
