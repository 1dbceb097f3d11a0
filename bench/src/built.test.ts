import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { staleBuilds } from './built.js';

const root = mkdtempSync(join(tmpdir(), 'tollgate-built-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A packages/ folder with one package `core` whose source and build were written at the given times (s). */
function packages(name: string, sourceAt: number, builtAt: number | undefined): string {
  const dir = join(root, name);
  mkdirSync(join(dir, 'core', 'src'), { recursive: true });
  writeFileSync(join(dir, 'core', 'package.json'), JSON.stringify({ name: '@tollgate/core', scripts: { build: 'tsdown' } }));
  const src = join(dir, 'core', 'src', 'index.ts');
  writeFileSync(src, 'export {};\n');
  utimesSync(src, sourceAt, sourceAt);
  // A test file edited after the build does not make it stale.
  const test = join(dir, 'core', 'src', 'index.test.ts');
  writeFileSync(test, '\n');
  utimesSync(test, sourceAt + 1000, sourceAt + 1000);
  if (builtAt !== undefined) {
    mkdirSync(join(dir, 'core', 'dist'));
    const out = join(dir, 'core', 'dist', 'index.mjs');
    writeFileSync(out, 'export {};\n');
    utimesSync(out, builtAt, builtAt);
  }
  return dir;
}

describe('staleBuilds', () => {
  it('accepts a build newer than its source', () => {
    expect(staleBuilds(packages('fresh', 1_000, 2_000))).toBeUndefined();
  });

  it('names a package without a build, and one whose source changed after it', () => {
    expect(staleBuilds(packages('missing', 1_000, undefined))).toMatch(/@tollgate\/core has no build \(dist\/\).*pnpm@12\.4\.2 build/);
    expect(staleBuilds(packages('stale', 3_000, 2_000))).toMatch(/@tollgate\/core's build is older than its source/);
  });
});
