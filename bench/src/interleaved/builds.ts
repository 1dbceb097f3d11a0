/**
 * @module The builds section I loads side by side in one process, each in several copies (a folder of
 * its own per copy, see observability/overhead.ts for why copies):
 * - this checkout's core, unchanged (`buildObservabilityCurrent`), and a copy of it that cannot see
 *   `@opentelemetry/api` (`buildProviderlessTwin`) for the exporter row;
 * - tollgate v0.1: `packages/core` at the last v0.1 commit (`V01_COMMIT`), exported with `git archive`
 *   from this repository's history into `bench/.results` (ignored by git) and bundled as the current
 *   core is (observability/baseline.ts `bundleCopy`), so the two differ by their source and nothing else. It is a bench subject, never committed;
 * - express-rate-limit: its ES module build copied into a folder per copy, with its own dependencies.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { BENCH_DIR } from '../child-process.js';
import {
  buildCopies,
  buildObservabilityCurrent,
  buildProviderlessTwin,
  bundleCopy,
  COPIES_DIR,
  TWINS_DIR,
} from '../observability/baseline.js';

/** The last commit of tollgate v0.1: the previous release, kept as a subject so that a regression shows in the same run. */
export const V01_COMMIT = '7771b86';

const REPO_DIR = join(BENCH_DIR, '..');
const CORE_MODULES = join(REPO_DIR, 'packages', 'core', 'node_modules');

export interface InterleavedBuilds {
  /** `import()` paths of each build's copies. */
  readonly current: readonly string[];
  readonly twin: readonly string[];
  /** undefined when the commit cannot be read (a shallow clone): v0.1's cells are then not available. */
  readonly v01: readonly string[] | undefined;
  readonly v01Error: string | undefined;
  readonly erl: readonly string[];
}

/** Exports v0.1's core source once per run into `bench/.results/int-v01-src`; returns its `src` folder. */
function exportV01(): string {
  const dir = join(COPIES_DIR, 'int-v01-src');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const tar = execFileSync('git', ['-C', REPO_DIR, 'archive', V01_COMMIT, 'packages/core/src'], { maxBuffer: 64 * 1024 * 1024 });
  execFileSync('tar', ['-x', '-C', dir], { input: tar });
  return join(dir, 'packages', 'core', 'src');
}

/** A copy of v0.1's core under `dir`, laid out as the current core's copies are (ES module, the core's dependencies linked). */
function v01Copy(src: string, dir: string): string {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  cpSync(src, join(dir, 'src'), { recursive: true, filter: (path) => !path.endsWith('.test.ts') });
  writeFileSync(join(dir, 'package.json'), '{ "type": "module", "private": true }\n');
  // v0.1 needs ipaddr.js and structured-headers, which the current core still depends on.
  if (existsSync(CORE_MODULES)) symlinkSync(CORE_MODULES, join(dir, 'node_modules'), 'dir');
  return bundleCopy(join(dir, 'src'));
}

/** A copy of express-rate-limit's ES module build under `dir`, finding its dependencies where pnpm put them. */
function erlCopy(dir: string): string {
  const pkg = realpathSync(join(BENCH_DIR, 'node_modules', 'express-rate-limit'));
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  cpSync(join(pkg, 'dist', 'index.mjs'), join(dir, 'index.mjs'));
  // pnpm puts a package's dependencies beside it, in the node_modules folder that holds it.
  symlinkSync(dirname(pkg), join(dir, 'node_modules'), 'dir');
  return join(dir, 'index.mjs');
}

/** What to write: copies of each build, more of the current core (the feature rows need a set per feature), the twin and v0.1 only when asked. */
export interface BuildPlan {
  readonly copies: number;
  readonly currentCopies: number;
  readonly twin: boolean;
  readonly v01: boolean;
}

/** Writes the copies of each build `plan` asks for. */
export function buildInterleaved(plan: BuildPlan): InterleavedBuilds {
  const { copies } = plan;
  const current = buildCopies(buildObservabilityCurrent, join(COPIES_DIR, 'int-current'), plan.currentCopies);
  const twin = plan.twin ? buildCopies(buildProviderlessTwin, join(TWINS_DIR, 'tollgate-bench-int-twin'), copies) : [];
  const erl = buildCopies(erlCopy, join(COPIES_DIR, 'int-erl'), copies);
  let v01: string[] | undefined;
  let v01Error: string | undefined;
  if (plan.v01) {
    try {
      const src = exportV01();
      v01 = buildCopies((dir) => v01Copy(src, dir), join(COPIES_DIR, 'int-v01'), 2 * copies);
    } catch (error) {
      v01Error = `tollgate v0.1 (${V01_COMMIT}) could not be exported: ${(error as Error).message.split('\n')[0]}`;
    }
  }
  return { current, twin, v01, v01Error, erl };
}
