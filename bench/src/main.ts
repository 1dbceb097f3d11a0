/**
 * @module `pnpm bench`: runs sections A (decisions in process), B (Redis), C (HTTP), D (concurrency and
 * shedding), H (hot keys on one Redis), I (interleaved in one process), O (observability overhead) and R (replay) one after the other on this machine, writes
 * RESULTS.md with every figure and the targets' verdicts, and prints a summary. A run of some sections
 * into an existing file rewrites only those (merge-results.ts). Exits 1 when a cell failed (a subject
 * that has not landed is "not available", not a failure).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { assertBuilt } from './built.js';
import { BENCH_DIR } from './child-process.js';
import { type BenchOptions, parseBenchOptions, USAGE } from './cli-options.js';
import { runConcurrencySection } from './concurrency/concurrency-section.js';
import { runDecisionSection } from './decisions/decision-section.js';
import { decisionScenarios } from './decisions/scenarios.js';
import { runHotKeySection } from './hotkeys/hot-key-section.js';
import { FRAMEWORKS, type Framework, type Mode } from './http/http-apps.js';
import { runHttpSection } from './http/http-section.js';
import { pickLoadGenerator } from './http/load-generator.js';
import { runInterleavedSection } from './interleaved/interleaved-section.js';
import { describeMachine, packageVersions } from './machine.js';
import { mergeResults, SECTION_ORDER } from './merge-results.js';
import { runObservabilitySection } from './observability/observability-section.js';
import { runRedisSection } from './redis/redis-section.js';
import { redisServerVersion } from './redis/redis-server.js';
import { runReplaySection } from './replay/replay-section.js';
import { renderResults, renderSummary } from './report.js';
import type { BenchResults } from './results.js';

type RunMode = BenchResults['mode'];

/** How long and how often each section measures, per mode. */
interface Plan {
  readonly decisions: { subjects: readonly string[] | undefined; passes: number; runs: number; runMs: number; warmupMs: number };
  readonly redis: {
    subjects: readonly string[] | undefined;
    keys: number;
    inFlight: readonly number[];
    rounds: number;
    runs: number;
    runMs: number;
  };
  readonly http: {
    frameworks: readonly Framework[];
    modes: readonly Mode[];
    rounds: number;
    roundSeconds: number;
    warmupSeconds: number;
    connections: number;
  };
  readonly concurrency: { runs: number; durationMs: number; rps: number };
  readonly observability: { processes: number; copies: number; passes: number; batch: number };
  readonly hotKeys: {
    processes: number;
    inFlight: number;
    runMs: number;
    coldKeys: number;
    rounds: number;
    leadMs: number;
    cells?: readonly string[];
  };
  readonly interleaved: {
    processes: number;
    copies: number;
    passes: number;
    warmUpPasses: number;
    batch: number;
    cells?: readonly string[];
    subjects?: readonly string[];
  };
}

const PLANS: Readonly<Record<RunMode, Plan>> = {
  full: {
    decisions: { subjects: undefined, passes: 2, runs: 3, runMs: 400, warmupMs: 500 },
    redis: { subjects: undefined, keys: 100_000, inFlight: [1, 256], rounds: 5, runs: 1, runMs: 3000 },
    http: { frameworks: FRAMEWORKS, modes: ['allow', 'block'], rounds: 12, roundSeconds: 2, warmupSeconds: 2, connections: 50 },
    concurrency: { runs: 3, durationMs: 3000, rps: 400 },
    observability: { processes: 10, copies: 8, passes: 15, batch: 20_000 },
    hotKeys: { processes: 4, inFlight: 32, runMs: 3000, coldKeys: 100_000, rounds: 3, leadMs: 1_500 },
    interleaved: { processes: 5, copies: 3, passes: 40, warmUpPasses: 10, batch: 4000 },
  },
  quick: {
    decisions: { subjects: undefined, passes: 1, runs: 2, runMs: 100, warmupMs: 100 },
    redis: { subjects: undefined, keys: 30_000, inFlight: [1, 256], rounds: 1, runs: 1, runMs: 1000 },
    http: { frameworks: FRAMEWORKS, modes: ['allow', 'block'], rounds: 1, roundSeconds: 1, warmupSeconds: 1, connections: 50 },
    concurrency: { runs: 1, durationMs: 2000, rps: 400 },
    observability: { processes: 2, copies: 2, passes: 11, batch: 10_000 },
    hotKeys: { processes: 4, inFlight: 32, runMs: 1500, coldKeys: 100_000, rounds: 1, leadMs: 1_500 },
    interleaved: { processes: 2, copies: 2, passes: 15, warmUpPasses: 5, batch: 2000 },
  },
  smoke: {
    decisions: { subjects: ['tollgate-gcra', 'express-rate-limit', 'map-counter'], passes: 1, runs: 1, runMs: 20, warmupMs: 20 },
    redis: {
      subjects: ['tollgate-redis-1', 'tollgate-redis-2', 'tollgate-redis-shadow', 'rate-limit-redis', 'evalsha-token-bucket'],
      keys: 1000,
      inFlight: [1, 16],
      rounds: 1,
      runs: 1,
      runMs: 200,
    },
    http: { frameworks: ['express'], modes: ['allow', 'block'], rounds: 1, roundSeconds: 1, warmupSeconds: 1, connections: 10 },
    concurrency: { runs: 1, durationMs: 500, rps: 400 },
    observability: { processes: 1, copies: 2, passes: 2, batch: 1000 },
    hotKeys: {
      processes: 2,
      inFlight: 8,
      runMs: 300,
      coldKeys: 1000,
      rounds: 1,
      leadMs: 300,
      cells: ['hot-roundtrip', 'hot-batched', 'cold-roundtrip'],
    },
    interleaved: {
      processes: 1,
      copies: 1,
      passes: 2,
      warmUpPasses: 1,
      batch: 500,
      cells: ['1key'],
      subjects: ['tollgate-gcra', 'v01-gcra', 'erl'],
    },
  },
};

function defaultOut(mode: RunMode): string {
  return mode === 'full' ? join(BENCH_DIR, 'RESULTS.md') : join(BENCH_DIR, '.results', `RESULTS.${mode}.md`);
}

function settingsOf(mode: RunMode, plan: Plan, loadTool: string): string[] {
  const d = plan.decisions;
  const r = plan.redis;
  const h = plan.http;
  const i = plan.interleaved;
  return [
    `mode ${mode}`,
    `A: ${d.passes} pass(es) over all cells, each cell a new process doing ${d.runs} runs of at least ${d.runMs} ms after ${d.warmupMs} ms of warm-up`,
    `B: ${r.keys.toLocaleString('en-US')} keys, ${r.rounds} round(s) over all subjects, each subject a new process doing ${r.runs} run(s) of ${r.runMs} ms at ${r.inFlight.join(' and ')} in flight`,
    `C: ${h.rounds} rounds of ${h.roundSeconds} s per variant after ${h.warmupSeconds} s of warm-up, ${h.connections} connections, ${loadTool}`,
    `H: ${plan.hotKeys.processes} processes per cell, ${plan.hotKeys.inFlight} in flight each, ${plan.hotKeys.runMs} ms, ${plan.hotKeys.rounds} round(s), ${plan.hotKeys.coldKeys.toLocaleString('en-US')} cold keys`,
    `I: ${i.processes} process(es) per cell, ${i.copies} copies of each subject, ${i.passes} passes of ${i.batch} decisions per copy after ${i.warmUpPasses} warm-up passes`,
  ];
}

async function run(options: BenchOptions): Promise<number> {
  const mode: RunMode = options.smoke ? 'smoke' : options.quick ? 'quick' : 'full';
  const plan = PLANS[mode];
  const log = (line: string): void => {
    process.stdout.write(`${line}\n`);
  };
  const load = pickLoadGenerator(options.load);
  const started = performance.now();
  const loadAtStart = loadavg()[0] ?? Number.NaN;
  log(`tollgate bench (${mode}): sections ${options.sections.join(', ')}`);

  const scenarios = decisionScenarios(mode);
  const decisions = options.sections.includes('A')
    ? await runDecisionSection({ ...plan.decisions, scenarios, only: options.only, profile: options.profile, log })
    : undefined;

  let redis: BenchResults['redis'];
  if (options.sections.includes('B')) {
    const section = await runRedisSection({ ...plan.redis, only: options.only, profile: options.profile, log });
    redis = { rows: section.rows, keys: plan.redis.keys, error: section.error };
  }

  let http: BenchResults['http'];
  if (options.sections.includes('C')) {
    const groups = await runHttpSection({ ...plan.http, load, only: options.only, profile: options.profile, log });
    http = { groups, tool: load.name, roundSeconds: plan.http.roundSeconds, rounds: plan.http.rounds };
  }

  const concurrency = options.sections.includes('D')
    ? await runConcurrencySection({ ...plan.concurrency, profile: options.profile, log })
    : undefined;
  const hotKeys = options.sections.includes('H')
    ? await runHotKeySection({ ...plan.hotKeys, only: options.only, profile: options.profile, log })
    : undefined;
  const interleaved = options.sections.includes('I')
    ? await runInterleavedSection({ ...plan.interleaved, only: options.only, profile: options.profile, log })
    : undefined;
  const observability = options.sections.includes('O')
    ? await runObservabilitySection({ ...plan.observability, profile: options.profile, log })
    : undefined;

  const replay = options.sections.includes('R') ? runReplaySection(mode, log) : undefined;

  const results: BenchResults = {
    mode,
    machine: describeMachine(redisServerVersion(), load.name, loadAtStart),
    versions: packageVersions(),
    decisions,
    decisionScenarios: scenarios.map((s) => ({ id: s.id, label: s.label })),
    redis,
    http,
    concurrency,
    hotKeys,
    interleaved,
    observability,
    replay,
    settings: settingsOf(mode, plan, load.name),
  };
  const out = resolve(options.out ?? defaultOut(mode));
  mkdirSync(dirname(out), { recursive: true });
  const partial = options.sections.length < SECTION_ORDER.length && existsSync(out);
  const rendered = renderResults(results);
  const m = results.machine;
  const stamp =
    `_Rewritten by \`pnpm bench${mode === 'full' ? '' : ` --${mode}`} --sections ${options.sections.join(',')}\` on ${m.date} at commit ${m.commit} ` +
    `(load average ${m.loadAverage.start.toFixed(2)} / ${m.loadAverage.end.toFixed(2)} on ${m.cores} cores); the sections not rewritten are from the run named at the top._`;
  writeFileSync(out, partial ? mergeResults(readFileSync(out, 'utf8'), rendered, options.sections, stamp) : rendered);
  const json = join(BENCH_DIR, '.results', `results.${mode}.json`);
  mkdirSync(dirname(json), { recursive: true });
  writeFileSync(json, `${JSON.stringify(results, null, 2)}\n`);

  log('');
  log(renderSummary(results));
  log(`\nWrote ${out} (raw figures: ${json}) in ${((performance.now() - started) / 1000).toFixed(0)} s.`);

  const requireRedis = process.env.TOLLGATE_REQUIRE_REDIS === '1';
  const failures = [
    ...(decisions ?? []).filter((r) => r.outcome.status === 'failed').map((r) => `A/${r.subject}/${r.scenario}`),
    ...(redis?.rows ?? [])
      .filter((r) => r.outcome.status === 'failed' || (requireRedis && redis?.error !== undefined))
      .map((r) => `B/${r.subject}`),
    ...(http?.groups ?? [])
      .filter((g) => g.error !== undefined || g.variants.some((v) => v.missing?.status === 'failed'))
      .map((g) => `C/${g.framework}/${g.mode}`),
    ...(concurrency?.error !== undefined ? ['D/concurrency'] : []),
    ...(hotKeys?.error !== undefined ? [`H: ${hotKeys.error}`] : []),
    ...(interleaved?.errors ?? []).map((e) => `I/${e}`),
    ...(observability?.errors ?? []).map((e) => `O/${e}`),
    ...(replay?.error !== undefined ? ['R/replay'] : []),
  ];
  if (failures.length > 0) {
    process.stderr.write(`bench: ${failures.length} cell(s) failed: ${failures.join(', ')}\n`);
    return 1;
  }
  return 0;
}

let options: BenchOptions;
try {
  options = parseBenchOptions(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`bench: ${(error as Error).message}\n`);
  process.exit(2);
}
if (options.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
try {
  assertBuilt();
} catch (error) {
  process.stderr.write(`bench: ${(error as Error).message}\n`);
  process.exit(2);
}
run(options).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
