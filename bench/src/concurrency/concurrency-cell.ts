/**
 * @module One process of section D: runs examples/concurrency's two demonstrations (the app and the
 * open-loop load generator share this process, as in the example) and answers over IPC.
 */
import { burstExports, type Comparison, compareShedding, type ExportBurst } from '../../../examples/concurrency/src/scenarios.js';
import { childMain } from '../child-process.js';

export interface ConcurrencyInput {
  readonly runs: number;
  readonly durationMs: number;
  readonly rps: number;
}

export interface ConcurrencyCellResult {
  readonly runs: readonly Comparison[];
  readonly burst: ExportBurst;
}

childMain(async (input: ConcurrencyInput): Promise<ConcurrencyCellResult> => {
  const runs: Comparison[] = [];
  for (let i = 0; i < input.runs; i++) runs.push(await compareShedding(input.durationMs, input.rps));
  return { runs, burst: await burstExports() };
});
