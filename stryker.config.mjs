/**
 * @module stryker.config
 * Mutation testing of the core's kernels (`pnpm mutate`, issue 29): the algorithms, the refund kernels and
 * the memory store's apply path, against the core's whole unit suite (vitest.mutate.config.ts). Scores are
 * recorded in bench/MUTATION.md. One file while iterating: `pnpm mutate --mutate packages/core/src/algorithms/gcra.ts`.
 */

import { readFileSync } from 'node:fs';

const MEMORY_STORE = 'packages/core/src/stores/memory-store.ts';

/** The 1-based line of the first line of `file` that starts with `prefix`. */
function lineOf(lines, prefix) {
  const i = lines.findIndex((l) => l.startsWith(prefix));
  if (i < 0) throw new Error(`stryker.config.mjs: no line starting with ${JSON.stringify(prefix)} in ${MEMORY_STORE}`);
  return i + 1;
}

/**
 * The memory store's apply path, found by its methods so that the ranges follow the file: `apply`, `peek` and
 * `refund` (up to `release`), then `applySingle`, `applyNew`, `applyGroups` and `applyGroup` (up to `evict`).
 */
function memoryStoreApplyPath() {
  const lines = readFileSync(MEMORY_STORE, 'utf8').split('\n');
  return [
    `${MEMORY_STORE}:${lineOf(lines, '  apply(')}-${lineOf(lines, '  release(') - 1}`,
    `${MEMORY_STORE}:${lineOf(lines, '  private applySingle(')}-${lineOf(lines, '  private evict(') - 1}`,
  ];
}

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'pnpm',
  // Listed because pnpm's symlinked node_modules hides the plugin from Stryker's own lookup.
  plugins: ['@stryker-mutator/vitest-runner'],
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutate.config.ts', related: false },
  coverageAnalysis: 'perTest',
  mutate: [
    'packages/core/src/algorithms/*.ts',
    '!packages/core/src/algorithms/*.test.ts',
    '!packages/core/src/algorithms/index.ts',
    ...memoryStoreApplyPath(),
  ],
  // The sandbox needs the core and the root configs only; the rest of the monorepo stays out of it.
  ignorePatterns: ['/*', '!/packages', '/packages/*', '!/packages/core', '!/package.json', '!/tsconfig*.json', '!/vitest.mutate.config.ts'],
  inPlace: false,
  tempDirName: '.stryker-tmp',
  concurrency: 2,
  timeoutMS: 10_000,
  reporters: ['clear-text', 'json', 'progress'],
  // TOLLGATE_MUTATE_REPORT: another file for the JSON report, so that two runs on different files keep both.
  jsonReporter: { fileName: process.env.TOLLGATE_MUTATE_REPORT ?? 'reports/mutation/mutation.json' },
  incrementalFile: 'reports/mutation/stryker-incremental.json',
  cleanTempDir: true,
};
