/**
 * @module The builds issue 12's targets are judged with, copies of this checkout's core rebuilt from
 * the working tree on every call:
 * - `buildObservabilityCurrent`: the core unchanged, written the way the baseline is (same layout, same
 *   dependencies), so that a pair of them differs by the cut hooks and nothing else, not also by where
 *   the modules live. (The control row still strays by up to 3 % from 1.000 in a run: that is the
 *   method's resolution on a 2-core VM, not a difference between the builds.)
 * - `buildObservabilityBaseline`: the two per-decision hooks of observability cut out
 *   (`DecisionObserver.observe` returns its decision untouched, `StoreTimer.apply` calls the store
 *   directly). Everything else is the same source, so a paired run of the copy and the real core
 *   measures what observability costs a decision and nothing else ("within 2 % without a provider").
 * - `buildProviderlessTwin`: the same source, unchanged, where `@opentelemetry/api` cannot be found, so
 *   no MeterProvider ever reaches it: the "same run without" a provider that "within 10 %" compares to,
 *   in the same process as the real core with the provider.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { BENCH_DIR } from '../child-process.js';

const CORE_DIR = join(BENCH_DIR, '..', 'packages', 'core');

/** Each hook: the file, the method's first line, and the statement put first in its body. */
const CUTS: readonly { readonly file: string; readonly head: RegExp; readonly body: string }[] = [
  {
    file: 'observability/decision-observer.ts',
    head: /^(\s*)observe\(d: Decision, options: CheckOptions \| undefined, at: number\): Decision \{$/m,
    body: 'return d;',
  },
  {
    file: 'observability/store-timer.ts',
    head: /^(\s*)apply\(key: StoreKey, plan: StorePlan, cost: number, now: number, lease\?: number\): StoreResult \| Promise<StoreResult> \{$/m,
    body: 'return this.store.apply(key, plan, cost, now, lease);',
  },
];

/** Copies the core's source (tests left out) under `dir`, as an ES module package. */
function copyCore(dir: string): string {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const src = join(dir, 'src');
  cpSync(join(CORE_DIR, 'src'), src, { recursive: true, filter: (path) => !path.endsWith('.test.ts') });
  // A module of its own (ESM, as the core is): without it, a copy outside the workspace loads as CommonJS, twice as slow.
  writeFileSync(join(dir, 'package.json'), '{ "type": "module", "private": true }\n');
  return src;
}

/**
 * Builds a copy's source as the published package is built (one ES module bundle, dependencies left to
 * Node, no minifying, no kept names), so a copy runs what users run: JavaScript, not TypeScript through
 * tsx (whose transform adds a `__name` call to every closure it creates). `metric-store.mjs` is a second
 * entry sharing the bundle's chunks, for the check that a providerless copy does not see the provider.
 * Returns the bundle's entry.
 */
export function bundleCopy(src: string): string {
  const out = join(src, '..', 'dist');
  const metricStore = join(src, 'observability', 'metric-store.ts');
  buildSync({
    // tollgate v0.1 (interleaved/builds.ts) has no metric store.
    entryPoints: existsSync(metricStore) ? { index: join(src, 'index.ts'), 'metric-store': metricStore } : { index: join(src, 'index.ts') },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    outdir: out,
    outExtension: { '.js': '.mjs' },
    logLevel: 'warning',
  });
  return join(out, 'index.mjs');
}

/** The path of a bundled copy's `metric-store.mjs`, from its `index.mjs` (see `bundleCopy`). */
export function metricStoreOf(index: string): string {
  return index.replace(/index\.mjs$/, 'metric-store.mjs');
}

/** Links the core's dependencies into a copy at `dir`. */
function linkModules(dir: string): void {
  const modules = join(CORE_DIR, 'node_modules');
  if (existsSync(modules)) symlinkSync(modules, join(dir, 'node_modules'), 'dir');
}

/** Where the copies inside the workspace go (bench/.results, ignored by git). */
export const COPIES_DIR = join(BENCH_DIR, '.results');

/**
 * Where the providerless twins go: outside the workspace, since below bench/ Node would find the bench's
 * own `@opentelemetry/api` by walking up the folders.
 */
export const TWINS_DIR = tmpdir();

/** `n` copies of a build, each in a folder of its own (`<base>-1`, `<base>-2`, ...); returns their entries' paths (overhead.ts: why copies). */
export function buildCopies(build: (dir: string) => string, base: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => build(`${base}-${i + 1}`));
}

/** Writes the unchanged core under `dir`, with the core's dependencies, bundled; returns the bundle's entry. */
export function buildObservabilityCurrent(dir: string): string {
  const src = copyCore(dir);
  linkModules(dir);
  return bundleCopy(src);
}

/**
 * Writes the baseline core under `dir`, bundled, and returns the path of
 * the bundle's entry, for `import()`. Throws when a hook is not where it is expected: the baseline must
 * never silently equal the real core.
 */
export function buildObservabilityBaseline(dir: string): string {
  const src = copyCore(dir);
  for (const c of CUTS) {
    const file = join(src, c.file);
    const text = readFileSync(file, 'utf8');
    if (!c.head.test(text))
      throw new Error(`observability baseline: the hook in ${c.file} moved; update bench/src/observability/baseline.ts`);
    writeFileSync(
      file,
      text.replace(c.head, (line, indent: string) => `${line}\n${indent}  ${c.body}`),
    );
  }
  linkModules(dir);
  return bundleCopy(src);
}

/**
 * Writes the core, unchanged, under `dir` with every dependency but `@opentelemetry/api`, bundled; returns
 * the bundle's entry. `dir` must lie outside the workspace (`TWINS_DIR`). Load it in a process started with `envWithoutNodePath()`:
 * pnpm's bin shims (vitest's, for one) export a NODE_PATH through which it would find the package anyway.
 */
export function buildProviderlessTwin(dir: string): string {
  const src = copyCore(dir);
  const from = join(CORE_DIR, 'node_modules');
  const to = join(dir, 'node_modules');
  mkdirSync(to);
  for (const name of existsSync(from) ? readdirSync(from) : []) {
    if (name !== '@opentelemetry') symlinkSync(join(from, name), join(to, name), 'dir');
  }
  return bundleCopy(src);
}

/** This process's environment without NODE_PATH (see `buildProviderlessTwin`). */
export function envWithoutNodePath(): NodeJS.ProcessEnv {
  const { NODE_PATH: _ignored, ...env } = process.env;
  return env;
}
