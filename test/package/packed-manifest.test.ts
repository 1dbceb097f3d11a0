/**
 * @module The published manifests (issue 9): `pnpm pack` applies `publishConfig`, so the tarball's
 * package.json has no `@tollgate/source` export condition (it points at src/, which the tarball does not
 * ship), and every path its exports map names is in the tarball. Needs `pnpm build` first.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const packagesDir = join(here, '..', '..', 'packages');
const out = mkdtempSync(join(tmpdir(), 'tollgate-pack-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

function exportPaths(exports: unknown, into: string[] = []): string[] {
  if (typeof exports === 'string') into.push(exports);
  else if (exports !== null && typeof exports === 'object') for (const v of Object.values(exports)) exportPaths(v, into);
  return into;
}

describe.each(['core', 'express', 'fastify', 'koa', 'client'])('@tollgate/%s, packed', (name) => {
  it('has no @tollgate/source condition, and ships every file its exports name', async () => {
    const { stdout } = await run('npx', ['-y', 'pnpm@12.4.2', 'pack', '--pack-destination', out, '--json'], {
      cwd: join(packagesDir, name),
      timeout: 60_000,
    });
    const tarball = (JSON.parse(stdout) as { filename: string }).filename;
    const files = (await run('tar', ['-tzf', tarball])).stdout.split('\n').filter((f) => f !== '');
    const manifest = JSON.parse((await run('tar', ['-xOzf', tarball, 'package/package.json'])).stdout) as Record<string, unknown>;
    expect(JSON.stringify(manifest)).not.toContain('@tollgate/source');
    expect(manifest.publishConfig).toBeUndefined();
    for (const path of exportPaths(manifest.exports)) expect(files, path).toContain(`package/${path.replace(/^\.\//, '')}`);
  }, 60_000);
});
