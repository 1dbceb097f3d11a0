/**
 * @module Section R of `pnpm bench`: `tollgate replay` throughput, log lines per second with three
 * candidates. Runs the CLI package's own bench (packages/cli/bench/replay-bench.ts) in a child process,
 * sized by the run mode, and keeps the lines it prints; its last line is the headline figure.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { BENCH_DIR, baseFlags } from '../child-process.js';

export interface ReplayResult {
  /** Every line the replay bench printed (one per run, then the median). */
  readonly lines: readonly string[];
  /** Why the section produced no figure; undefined when it did. */
  readonly error: string | undefined;
}

/** Runs and log length per mode: the full run replays two hours of traffic (~1.4M lines) five times. */
const SIZES = {
  full: { runs: 5, durationS: 7200 },
  quick: { runs: 3, durationS: 1800 },
  smoke: { runs: 1, durationS: 60 },
} as const;

export function runReplaySection(mode: keyof typeof SIZES, log: (line: string) => void): ReplayResult {
  const size = SIZES[mode];
  log(`R: tollgate replay, ${size.runs} run(s) over ${size.durationS} s of synthetic nginx traffic, three candidates`);
  const child = spawnSync(process.execPath, [...baseFlags(), 'bench/replay-bench.ts'], {
    cwd: join(BENCH_DIR, '..', 'packages', 'cli'),
    env: { ...process.env, REPLAY_BENCH_RUNS: String(size.runs), REPLAY_BENCH_DURATION_S: String(size.durationS) },
    encoding: 'utf8',
    timeout: 15 * 60_000,
  });
  const lines = (child.stdout ?? '').split('\n').filter((line) => line.trim() !== '');
  for (const line of lines) log(`  ${line}`);
  const failed = child.status !== 0 || lines.length === 0;
  const error = failed ? `exit ${child.status ?? child.signal}: ${(child.stderr ?? '').trim().split('\n').slice(-3).join(' ')}` : undefined;
  return { lines, error };
}
