/**
 * @module The built adapters as users get them: `import` and `require` by package name load dist/
 * (ESM .mjs, CJS .cjs) with the same exports, and every published package passes publint --strict.
 * Needs `pnpm build` first (the root `pnpm test` runs it).
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const packagesDir = join(here, '..', '..', 'packages');

async function load(fixture: string): Promise<Record<string, unknown>> {
  const { stdout, stderr } = await run(process.execPath, [join(here, 'fixtures', fixture)], { timeout: 20_000 });
  expect(stderr).toBe('');
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe('the adapters, built', () => {
  it('import and require by package name load dist/ and expose the same exports', async () => {
    const [esm, cjs] = await Promise.all([load('adapters.mjs'), load('adapters.cjs')]);
    expect(esm.resolved).toEqual([
      expect.stringMatching(/packages\/express\/dist\/index\.mjs$/),
      expect.stringMatching(/packages\/fastify\/dist\/index\.mjs$/),
      expect.stringMatching(/packages\/koa\/dist\/index\.mjs$/),
    ]);
    expect(cjs.resolved).toEqual([
      expect.stringMatching(/packages\/express\/dist\/index\.cjs$/),
      expect.stringMatching(/packages\/fastify\/dist\/index\.cjs$/),
      expect.stringMatching(/packages\/koa\/dist\/index\.cjs$/),
    ]);
    for (const field of ['express', 'fastify', 'koa', 'fastifyDefaultIsNamed', 'middleware']) expect(cjs[field]).toEqual(esm[field]);
    expect(esm.express).toEqual(['rateLimit']);
    expect(esm.koa).toEqual(['rateLimit']);
    expect(esm.fastify).toEqual(['default', 'fastifyRateLimit']);
    expect(esm.fastifyDefaultIsNamed).toBe(true);
    expect(esm.middleware).toEqual(['function', 'function']);
  });

  it.each(['core', 'express', 'fastify', 'koa', 'client'])(
    '@tollgate/%s passes publint --strict (exports map, types, files)',
    async (name) => {
      const pkgDir = join(packagesDir, name);
      const { messages } = await publint({ pkgDir, strict: true, level: 'suggestion', pack: 'npm' });
      const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
      expect(messages.map((m) => `${m.type}: ${formatMessage(m, manifest)}`)).toEqual([]);
    },
  );
});
