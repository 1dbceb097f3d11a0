/**
 * @module The bench measures tollgate as users run it: the workspace packages' built JavaScript
 * (`dist/`, what npm publishes), not their TypeScript source through tsx. `assertBuilt` fails the run
 * before any cell when a package's build is missing or older than its source, so a stale build is never
 * measured by mistake (`pnpm bench` from the repository root builds first).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_DIR } from './child-process.js';

const PACKAGES_DIR = join(BENCH_DIR, '..', 'packages');

/** The mtimes (ms) of the files under `dir` that `keep` accepts. */
function mtimes(dir: string, keep: (name: string) => boolean): number[] {
  if (!existsSync(dir)) return [];
  const out: number[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && keep(entry.name)) out.push(statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return out;
}

/** Why the packages' builds cannot be measured (missing or older than their source), or undefined when they can. */
export function staleBuilds(packagesDir = PACKAGES_DIR): string | undefined {
  const stale: string[] = [];
  for (const dir of existsSync(packagesDir) ? readdirSync(packagesDir) : []) {
    const manifest = join(packagesDir, dir, 'package.json');
    if (!existsSync(manifest)) continue;
    const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; scripts?: Record<string, string> };
    if (pkg.scripts?.build === undefined) continue;
    const built = mtimes(join(packagesDir, dir, 'dist'), () => true);
    const source = mtimes(join(packagesDir, dir, 'src'), (name) => name.endsWith('.ts') && !name.endsWith('.test.ts'));
    if (built.length === 0) stale.push(`${pkg.name ?? dir} has no build (dist/)`);
    else if (Math.max(...source) > Math.min(...built)) stale.push(`${pkg.name ?? dir}'s build is older than its source`);
  }
  return stale.length === 0
    ? undefined
    : `${stale.join('; ')}: run \`npx -y pnpm@12.4.2 build\` (or \`pnpm bench\` from the repository root, which builds first)`;
}

/** Throws when a workspace package's build is missing or stale (see `staleBuilds`). */
export function assertBuilt(): void {
  const why = staleBuilds();
  if (why !== undefined) throw new Error(`the bench measures the built packages: ${why}`);
}
