/**
 * @module Child entry of one section A cell: one subject, one scenario, in a fresh process started
 * with --expose-gc. It pre-generates the keys, measures the heap growth of populating them (one
 * decision per key), then times awaited decisions over the keys in a shuffled order with mitata:
 * a warm-up, then `runs` measurements, each the median of at least 12 samples of `inner` decisions.
 */
import { measure } from 'mitata';
import { childMain } from '../child-process.js';
import { makeKeys, shuffledOrder } from '../keys.js';
import { median } from '../stats.js';
import { decisionSubject, WINDOW_MS } from './decision-subjects.js';

export interface DecisionCellInput {
  readonly subject: string;
  readonly keys: number;
  readonly overLimit: boolean;
  readonly runs: number;
  /** mitata's minimum time per run, ms. */
  readonly runMs: number;
  readonly warmupMs: number;
  /** Decisions per mitata sample. */
  readonly inner: number;
}

export interface DecisionCellResult {
  /** Median over runs of each run's median ns per decision. */
  readonly nsPerDecision: number;
  readonly runNs: readonly number[];
  /** (heapUsed + external) after populating the keys minus before, per key; undefined below 1000 keys. */
  readonly heapBytesPerKey: number | undefined;
  readonly populateMs: number;
  /**
   * Decisions whose verdict was not the expected one: allow cells, any rejection; over-limit cells (a limit of 1 per
   * WINDOW_MS), any admission beyond one per WINDOW_MS the cell spanned (a fixed window that rolls over, a bucket that refills).
   */
  readonly unexpected: number;
  readonly decisions: number;
}

declare const gc: (() => void) | undefined;

function collect(): void {
  if (typeof gc !== 'function') throw new Error('run the cell with --expose-gc');
  gc();
  gc();
}

function heapNow(): number {
  const m = process.memoryUsage();
  // Typed-array backing stores live outside the V8 heap: count them (external) too.
  return m.heapUsed + m.external;
}

export async function runDecisionCell(input: DecisionCellInput): Promise<DecisionCellResult> {
  const spec = decisionSubject(input.subject);
  const n = input.keys;
  const keys = makeKeys(n);
  const order = shuffledOrder(n);
  const subject = spec.create({ keys: n, overLimit: input.overLimit });
  const verify = spec.kind !== 'baseline';
  const expectAllowed = !input.overLimit;

  collect();
  const before = heapNow();
  const t0 = performance.now();
  // Over-limit cells: how long the limit of 1 has been in force, for the admissions its refills allow.
  const began = Date.now();
  for (let i = 0; i < n; i++) await subject.decide(keys[i] as string);
  const populateMs = performance.now() - t0;
  collect();
  const heapBytesPerKey = n >= 1000 ? (heapNow() - before) / n : undefined;

  let pos = 0;
  let unexpected = 0;
  let decisions = 0;
  const inner = input.inner;
  const batch = async (): Promise<void> => {
    for (let j = 0; j < inner; j++) {
      const key = keys[order[pos] as number] as string;
      pos = pos + 1 === n ? 0 : pos + 1;
      const r = await subject.decide(key);
      if (verify && subject.allowed(r) !== expectAllowed) unexpected++;
    }
    decisions += inner;
  };

  const warmEnd = performance.now() + input.warmupMs;
  while (performance.now() < warmEnd) await batch();
  const runNs: number[] = [];
  for (let r = 0; r < input.runs; r++) {
    // batch_threshold 0: one sample is one call of `batch` (already `inner` decisions), never a mitata batch.
    const stats = await measure(batch, { min_cpu_time: input.runMs * 1e6, min_samples: 12, batch_threshold: 0 });
    runNs.push(stats.p50 / inner);
  }
  subject.close();
  if (!expectAllowed) unexpected = Math.max(0, unexpected - Math.ceil((Date.now() - began) / WINDOW_MS));
  return { nsPerDecision: median(runNs), runNs, heapBytesPerKey, populateMs, unexpected, decisions };
}

childMain(runDecisionCell);
