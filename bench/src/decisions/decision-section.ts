/**
 * @module Section A: runs every (subject, scenario) cell of the in-process decision benchmark, each in
 * its own child process, one after the other.
 */
import { join } from 'node:path';
import { BENCH_DIR, runChild } from '../child-process.js';
import type { DecisionRow } from '../results.js';
import type { DecisionCellInput, DecisionCellResult } from './decision-cell.js';
import { DECISION_SUBJECTS, type SubjectSpec } from './decision-subjects.js';
import type { DecisionScenario } from './scenarios.js';

export interface DecisionSectionOptions {
  readonly scenarios: readonly DecisionScenario[];
  /** Subject ids to run; all when undefined. */
  readonly subjects: readonly string[] | undefined;
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

export async function runDecisionSection(o: DecisionSectionOptions): Promise<DecisionRow[]> {
  const subjects = DECISION_SUBJECTS.filter((s) => o.subjects === undefined || o.subjects.includes(s.id));
  const rows: DecisionRow[] = [];
  for (const scenario of o.scenarios) {
    for (const subject of subjects) {
      const id = decisionCellId(subject, scenario);
      if (o.only !== undefined && !o.only.test(id)) continue;
      const input: DecisionCellInput = {
        subject: subject.id,
        keys: scenario.keys,
        overLimit: scenario.overLimit,
        runs: o.runs,
        runMs: o.runMs,
        warmupMs: o.warmupMs,
        inner: 1000,
      };
      const base = { subject: subject.id, label: subject.label, kind: subject.kind, scenario: scenario.id };
      try {
        const result = await runChild<DecisionCellInput, DecisionCellResult>(CELL, input, {
          nodeFlags: ['--expose-gc', '--max-old-space-size=6144'],
          profile: o.profile,
          label: id.replaceAll('/', '_'),
          timeoutMs: 300_000,
        });
        rows.push({ ...base, outcome: { status: 'ok', ...result } });
        const heap = result.heapBytesPerKey === undefined ? '' : `, ${result.heapBytesPerKey.toFixed(0)} B/key`;
        o.log(`${id}: ${result.nsPerDecision.toFixed(1)} ns/decision${heap}`);
      } catch (error) {
        rows.push({ ...base, outcome: { status: 'failed', reason: (error as Error).message.split('\n')[0] ?? 'unknown error' } });
        o.log(`${id}: FAILED ${(error as Error).message}`);
      }
    }
  }
  return rows;
}
