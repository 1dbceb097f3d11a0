/**
 * @module The capacity guide's figures (docs/capacity.md): how much Redis CPU one decision costs, per
 * algorithm and number of policies, on this machine's redis-server. Starts its own server, runs
 * `decisions` checks over 10,000 keys with 64 in flight per cell, and reads the server's own CPU
 * (`INFO cpu`, user + sys) and `INFO commandstats` (EVALSHA's µs per call) around each cell; decisions per
 * second per Redis core is 1e6 / (CPU µs per decision). One warm-up cell first (script loading, allocator).
 * Bytes per key are in the core README's "Memory per key" (MEMORY USAGE, test/integration/redis/memory.test.ts).
 * Run: `pnpm --filter @tollgate/bench exec node --conditions=@tollgate/source --import tsx src/hotkeys/redis-capacity.ts`.
 */
import { type AlgorithmId, createLimiter, type PolicyOptions, RedisStore } from '@tollgate/core';
import { Redis } from 'ioredis';
import { startRedisServer } from '../redis/redis-server.js';

const ALGORITHMS: readonly AlgorithmId[] = ['fixed-window', 'sliding-window', 'token-bucket', 'gcra', 'leaky-bucket', 'sliding-log'];
const decisions = Number(process.env.DECISIONS ?? 40_000);
const KEYS = 10_000;

function field(info: string, name: string): number {
  return Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? Number.NaN);
}

async function cell(client: Redis, policies: PolicyOptions[]): Promise<{ cpuUs: number; evalUs: number }> {
  await client.flushall();
  await client.config('RESETSTAT');
  const limiter = createLimiter({ name: 'cap', policies, store: new RedisStore({ client, validate: false }), storeTimeoutMs: 10_000 });
  const before = await client.info('cpu');
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < decisions) await limiter.check(`user:${next++ % KEYS}`);
    }),
  );
  const after = await client.info('cpu');
  const cpu = (name: string) => field(after, name) - field(before, name);
  const stats = await client.info('commandstats');
  const evalUs = Number(/cmdstat_evalsha:calls=\d+,usec=\d+,usec_per_call=([\d.]+)/.exec(stats)?.[1] ?? Number.NaN);
  await limiter.close();
  return { cpuUs: ((cpu('used_cpu_sys') + cpu('used_cpu_user')) * 1e6) / decisions, evalUs };
}

const server = await startRedisServer();
const client = new Redis({ port: server.port, host: '127.0.0.1', autoResendUnfulfilledCommands: false });
try {
  console.log(`redis-server ${server.version}, ${decisions} decisions per cell over ${KEYS} keys, 64 in flight`);
  await cell(client, [{ name: 'warm-up', limit: 1_000_000, windowMs: 60_000 }]);
  console.log('| algorithm | policies | Redis CPU per decision | EVALSHA µs per call | decisions/s per Redis core |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const algorithm of ALGORITHMS) {
    for (const count of [1, 2, 4]) {
      const policies = Array.from({ length: count }, (_, i) => ({
        name: `p${i}`,
        algorithm,
        limit: 1_000_000 * (i + 1),
        windowMs: 60_000 * (i + 1),
      }));
      const r = await cell(client, policies);
      console.log(
        `| ${algorithm} | ${count} | ${r.cpuUs.toFixed(1)} µs | ${r.evalUs.toFixed(1)} | ${Math.round(1e6 / r.cpuUs).toLocaleString('en-US')} |`,
      );
    }
  }
} finally {
  client.disconnect();
  await server.stop();
}
