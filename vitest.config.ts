import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['@tollgate/source'] },
  ssr: { resolve: { conditions: ['@tollgate/source'] } },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'test/**/*.test.ts', 'examples/*/src/**/*.test.ts', 'bench/src/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});
