/**
 * @module The README's snippets type-check under `exactOptionalPropertyTypes` (issue 9: `keys.header(…,
 * { secret: process.env.X })` did not). Runs `tsc` on test/types/exact-optional with that flag on.
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const tsc = join(here, '..', '..', 'node_modules', 'typescript', 'bin', 'tsc');

it('compiles the README snippets with exactOptionalPropertyTypes', async () => {
  const out = await run(process.execPath, [tsc, '-p', join(here, 'exact-optional', 'tsconfig.json')], { timeout: 60_000 }).catch(
    (error: { stdout?: string }) => ({ stdout: error.stdout ?? String(error) }),
  );
  expect(out.stdout).toBe('');
}, 60_000);
