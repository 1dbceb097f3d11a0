/**
 * @module Loads tollgate pieces that may not exist yet (the Redis store, the framework adapters), so a
 * cell whose subject has not landed reports "not available" with the reason instead of failing the run.
 * A workspace package is found through bench's own dependencies first, then by name among the
 * monorepo's packages/* (so a package that lands later plugs in before bench/package.json lists it).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BENCH_DIR } from './child-process.js';

export type Loaded<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string };

const PACKAGES_DIR = join(BENCH_DIR, '..', 'packages');

function isNotFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND' || code === 'ERR_PACKAGE_PATH_NOT_EXPORTED';
}

/** The source entry of the workspace package called `name` under packages/, if there is one. */
function workspaceEntry(name: string): string | undefined {
  if (!existsSync(PACKAGES_DIR)) return undefined;
  for (const dir of readdirSync(PACKAGES_DIR)) {
    const manifest = join(PACKAGES_DIR, dir, 'package.json');
    if (!existsSync(manifest)) continue;
    const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; exports?: Record<string, unknown> };
    if (pkg.name !== name) continue;
    const root = pkg.exports?.['.'];
    const source = typeof root === 'object' && root !== null ? (root as Record<string, unknown>)['@tollgate/source'] : undefined;
    const entry = typeof source === 'string' ? source : 'src/index.ts';
    const file = join(PACKAGES_DIR, dir, entry);
    return existsSync(file) ? file : undefined;
  }
  return undefined;
}

/** Imports the package `name`; `{ ok: false }` with the reason when it is not in the workspace. */
export async function importPackage(name: string): Promise<Loaded<Record<string, unknown>>> {
  try {
    return { ok: true, value: (await import(name)) as Record<string, unknown> };
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  const file = workspaceEntry(name);
  if (file === undefined) return { ok: false, reason: `${name} is not in the workspace yet` };
  return { ok: true, value: (await import(pathToFileURL(file).href)) as Record<string, unknown> };
}

/** The export `exportName` of the first of `packages` that has it. */
export async function importExport<T>(packages: readonly string[], exportName: string): Promise<Loaded<T>> {
  const reasons: string[] = [];
  for (const name of packages) {
    const loaded = await importPackage(name);
    if (!loaded.ok) {
      reasons.push(loaded.reason);
      continue;
    }
    const value = loaded.value[exportName];
    if (value !== undefined) return { ok: true, value: value as T };
    reasons.push(`${name} has no export '${exportName}'`);
  }
  return { ok: false, reason: reasons.join('; ') };
}
