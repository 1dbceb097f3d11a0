/**
 * @module The built declarations accept every Redis client as a user's project types it, with
 * `exactOptionalPropertyTypes` on (ioredis' `Cluster` used to be refused there): compiles
 * test/types/redis-clients.exact.ts with tsc. Needs `pnpm build` first (the root `pnpm test` runs it).
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

it('new RedisStore({ client }) type-checks for ioredis, iovalkey and node-redis clients and clusters under exactOptionalPropertyTypes', async () => {
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = await run(process.execPath, [tsc, '-p', join(root, 'test', 'types', 'tsconfig.exact.json')], { timeout: 120_000 }).then(
    () => '',
    (error: { stdout?: string }) => error.stdout ?? String(error),
  );
  expect(result).toBe('');
}, 150_000);
