import { defineConfig } from 'vitest/config';

/**
 * Suites that measure how the limiter behaves when the machine is starved (a blocked event loop, a
 * Redis restart, a killed Cluster master): their verdicts depend on the store's own processes getting
 * CPU, so they run last, one file at a time, instead of beside the soak or another Redis suite on a
 * 2-core machine.
 */
const TIMING = [
  'test/integration/redis/stress.test.ts',
  'test/integration/redis/faults.test.ts',
  'test/integration/redis/cluster-faults.test.ts',
  // A Sentinel failover under load: its switch time and degraded window are measured against the clock.
  'test/integration/redis/sentinel.test.ts',
  // The retry storm counts what 200 clients make a server receive; the naive client's count is bounded
  // by how fast this machine answers, so it runs alone too.
  'test/client/storm.test.ts',
  // The eviction watch reads INFO every 100 ms while a flood runs: its intervals hold when it runs alone.
  'test/integration/redis/eviction-watch.test.ts',
  // Faults that time every check (a slow or trickling Redis, a busy host, recovery per client): run alone.
  'test/integration/redis/slow-store.test.ts',
  'test/integration/redis/recovery.test.ts',
  // localBatch under faults: a Redis restart and a killed process, then a wait for the state's reset.
  'test/integration/redis/local-batch-faults.test.ts',
  // An open-loop overload against a 20 ms worker pool: its p99 bounds hold when the pool gets its CPU.
  'examples/concurrency/src/scenarios.test.ts',
];

export default defineConfig({
  resolve: { conditions: ['@tollgate/source'] },
  ssr: { resolve: { conditions: ['@tollgate/source'] } },
  test: {
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['packages/*/src/**/*.test.ts', 'test/**/*.test.ts', 'examples/*/src/**/*.test.ts', 'bench/src/**/*.test.ts'],
          exclude: [...TIMING, '**/node_modules/**'],
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'timing',
          include: TIMING,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
