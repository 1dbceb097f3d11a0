/**
 * @module The published packages as a user installs them (issue 9): `pnpm pack` applies `publishConfig`,
 * so the tarball's package.json has no `@tollgate/source` export condition (it points at src/, which the
 * tarball does not ship), names the same entries as the workspace's manifest (an entry missing from
 * `publishConfig.exports`, as `@tollgate/core/adapter` once was, breaks every package that imports it
 * once installed, while every workspace test passes), and ships every file its exports name. Then the
 * tarballs are unpacked into an app's node_modules, beside the third-party packages they need (linked from
 * this workspace: no registry), and each package is imported and used by name there, as ESM and CommonJS.
 * Needs `pnpm build` first.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const packagesDir = join(here, '..', '..', 'packages');
const out = mkdtempSync(join(tmpdir(), 'tollgate-pack-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

const PACKAGES = ['core', 'express', 'fastify', 'koa', 'client', 'cli'] as const;
/**
 * Third-party packages the installed app needs (the packages' dependencies, and the frameworks the fixture
 * runs), each with the workspace folder whose package.json resolves it.
 */
const THIRD_PARTY: Readonly<Record<string, string>> = {
  'ipaddr.js': join(packagesDir, 'core'),
  'structured-headers': join(packagesDir, 'core'),
  'fastify-plugin': join(packagesDir, 'fastify'),
  express: join(here, '..'),
  fastify: join(here, '..'),
  koa: join(here, '..'),
};

function exportPaths(exports: unknown, into: string[] = []): string[] {
  if (typeof exports === 'string') into.push(exports);
  else if (exports !== null && typeof exports === 'object') for (const v of Object.values(exports)) exportPaths(v, into);
  return into;
}

/** The folder of package `name` that holds `entry` (not every package exports its package.json). */
function packageRoot(entry: string, name: string): string {
  for (let dir = dirname(entry); dir !== dirname(dir); dir = dirname(dir)) {
    try {
      if ((JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string }).name === name) return dir;
    } catch {}
  }
  throw new Error(`no package.json of ${name} above ${entry}`);
}

const tarballs = new Map<string, string>();

beforeAll(async () => {
  // One at a time: two cores, and each pack is a pnpm process of its own.
  for (const name of PACKAGES) {
    const { stdout } = await run('npx', ['-y', 'pnpm@12.4.2', 'pack', '--pack-destination', out, '--json'], {
      cwd: join(packagesDir, name),
      timeout: 60_000,
    });
    tarballs.set(name, (JSON.parse(stdout) as { filename: string }).filename);
  }
}, 240_000);

async function packedManifest(tarball: string): Promise<Record<string, unknown>> {
  return JSON.parse((await run('tar', ['-xOzf', tarball, 'package/package.json'])).stdout) as Record<string, unknown>;
}

describe.each(PACKAGES)('@tollgate/%s, packed', (name) => {
  it('has no @tollgate/source condition, names the entries the workspace does, and ships every file its exports name', async () => {
    const tarball = tarballs.get(name) as string;
    const files = (await run('tar', ['-tzf', tarball])).stdout.split('\n').filter((f) => f !== '');
    const manifest = await packedManifest(tarball);
    // In the exports map; a script of the repository (never run from the tarball) may still name it.
    expect(JSON.stringify(manifest.exports)).not.toContain('@tollgate/source');
    expect(manifest.publishConfig).toBeUndefined();
    const workspace = JSON.parse(readFileSync(join(packagesDir, name, 'package.json'), 'utf8')) as { exports?: object };
    expect(Object.keys(manifest.exports ?? {})).toEqual(Object.keys(workspace.exports ?? {}));
    for (const path of exportPaths(manifest.exports)) expect(files, path).toContain(`package/${path.replace(/^\.\//, '')}`);
  });
});

describe('the tarballs, installed in an app', () => {
  let app: string;

  beforeAll(async () => {
    app = join(out, 'app');
    const modules = join(app, 'node_modules');
    for (const name of PACKAGES) {
      const dir = join(modules, '@tollgate', name);
      mkdirSync(dir, { recursive: true });
      await run('tar', ['-xzf', tarballs.get(name) as string, '-C', dir, '--strip-components=1']);
    }
    // Each third-party package as this workspace resolves it for the package that depends on it.
    for (const [dep, from] of Object.entries(THIRD_PARTY)) {
      const entry = createRequire(join(from, 'package.json')).resolve(dep);
      symlinkSync(packageRoot(entry, dep), join(modules, dep), 'dir');
    }
    for (const file of ['installed.mjs', 'installed.cjs']) copyFileSync(join(here, 'fixtures', file), join(app, file));
  });

  async function fixture(file: string): Promise<Record<string, unknown>> {
    const { stdout, stderr } = await run(process.execPath, [join(app, file)], { cwd: app, timeout: 30_000 });
    expect(stderr).toBe('');
    return JSON.parse(stdout) as Record<string, unknown>;
  }

  it('every package imports by name (ESM) from the app, and answers a request through each framework', async () => {
    const r = await fixture('installed.mjs');
    for (const path of r.resolved as string[]) expect(path).toContain(`${out}/app/node_modules/@tollgate/`);
    expect(r.statuses).toEqual({ express: [200, 429], fastify: [200, 429], koa: [200, 429] });
    expect(r.policyHeader).toBe('"default";q=1;w=60');
    expect(r.shaped).toBe('done');
    expect(r.decision).toEqual({ allowed: true, remaining: 0 });
  });

  it('every package requires by name (CommonJS) with the same exports as its ESM entry', async () => {
    const [esm, cjs] = await Promise.all([fixture('installed.mjs'), fixture('installed.cjs')]);
    expect(cjs.exports).toEqual(esm.exports);
    expect(Object.keys(cjs.exports as object)).toEqual(['core', 'coreAdapter', 'express', 'fastify', 'koa', 'client', 'cli']);
  });

  it('the tollgate command runs', async () => {
    const { stdout } = await run(process.execPath, [join(app, 'node_modules', '@tollgate', 'cli', 'dist', 'main.mjs'), '--help'], {
      cwd: app,
      timeout: 30_000,
    });
    expect(stdout).toContain('tollgate replay');
  });
});
