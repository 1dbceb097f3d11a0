/**
 * @module stryker.config
 * Mutation testing of the core's kernels (`pnpm mutate`, issue 29): the algorithms, the refund kernels and
 * the memory store's apply path, against the core's whole unit suite (vitest.mutate.config.ts). Scores are
 * recorded in bench/MUTATION.md. One file while iterating: `pnpm mutate --mutate packages/core/src/algorithms/gcra.ts`.
 */

// The memory store's apply path: apply, peek and refund (not release/renew/leases), then
// applySingle, applyNew, applyGroups and applyGroup. Keep these ranges in step with the file.
const MEMORY_STORE_APPLY = ['packages/core/src/stores/memory-store.ts:269-298', 'packages/core/src/stores/memory-store.ts:325-446'];

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
    'packages/core/src/plans/refund-kernels.ts',
    ...MEMORY_STORE_APPLY,
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
