/**
 * @module The core's unit suite alone, for `pnpm mutate` (stryker.config.mjs): every `*.test.ts` under
 * packages/core/src, resolved to source through the `@tollgate/source` condition as the root config does.
 * `TOLLGATE_MUTATE_TESTS` narrows it to one glob while iterating (e.g. `packages/core/src/algorithms/*.test.ts`):
 * a mutant that survives the narrow suite may still die in the whole one, so record scores without it.
 */
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['@tollgate/source'] },
  ssr: { resolve: { conditions: ['@tollgate/source'] } },
  test: {
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 60_000,
    include: [process.env.TOLLGATE_MUTATE_TESTS ?? 'packages/core/src/**/*.test.ts'],
    exclude: ['**/node_modules/**'],
  },
});
