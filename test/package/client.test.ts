/**
 * @module The built @tollgate/client as users get it: `import` and `require` by package name load dist/
 * (ESM .mjs, CJS .cjs), expose the same named exports, and a shaper and withRetry work from there.
 * Needs `pnpm build` first (the root `pnpm test` runs it).
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));

async function load(fixture: string): Promise<Record<string, unknown>> {
  const { stdout, stderr } = await run(process.execPath, [join(here, 'fixtures', fixture)], { timeout: 20_000 });
  expect(stderr).toBe('');
  return JSON.parse(stdout) as Record<string, unknown>;
}

it('@tollgate/client, built: import and require load dist/ with the same exports', async () => {
  const [esm, cjs] = await Promise.all([load('client.mjs'), load('client.cjs')]);
  expect(esm.resolved).toMatch(/packages\/client\/dist\/index\.mjs$/);
  expect(cjs.resolved).toMatch(/packages\/client\/dist\/index\.cjs$/);
  expect(cjs.exports).toEqual(esm.exports);
  expect(esm.exports).toEqual([
    'RateLimitClientError',
    'createShaper',
    'readRateLimitSignal',
    'readRetryAfter',
    'serverWaitMs',
    'withRetry',
  ]);
  for (const m of [esm, cjs]) expect([m.started, m.retryFetch]).toEqual(['started', 'function']);
});
