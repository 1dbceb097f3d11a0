/**
 * @module What the figures were measured on: CPU, cores, memory, OS, Node, redis-server, the load
 * generator, the commit, and the versions of every benchmarked package.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem, type } from 'node:os';
import { join } from 'node:path';
import { BENCH_DIR } from './child-process.js';
import type { Machine } from './results.js';

export const BENCHMARKED_PACKAGES = [
  'express-rate-limit',
  'rate-limit-redis',
  '@fastify/rate-limit',
  'koa-ratelimit',
  'rate-limiter-flexible',
  'ioredis',
  'express',
  'fastify',
  'koa',
  'mitata',
  'autocannon',
  'tsx',
] as const;

const WORKSPACE_PACKAGES = ['core', 'express', 'fastify', 'koa', 'redis'] as const;

function git(args: readonly string[]): string | undefined {
  const r = spawnSync('git', args, { cwd: BENCH_DIR, encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** The machine as the run ends; `loadAtStart` is `loadavg()[0]` read when it began. */
export function describeMachine(redis: string | undefined, loadGenerator: string, loadAtStart: number): Machine {
  const list = cpus();
  const dirty = (git(['status', '--porcelain', '--untracked-files=no']) ?? '') !== '';
  return {
    cpu: list[0]?.model.trim() ?? 'unknown',
    cores: list.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: `${type()} ${release()}`,
    node: process.version,
    redis,
    loadGenerator,
    loadAverage: { start: loadAtStart, end: loadavg()[0] ?? Number.NaN },
    commit: `${git(['rev-parse', '--short', 'HEAD']) ?? 'unknown'}${dirty ? ' (with uncommitted changes)' : ''}`,
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  };
}

function versionAt(manifest: string): string | undefined {
  if (!existsSync(manifest)) return undefined;
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version?: string }).version;
}

/** Installed versions of the peers and tools, and of the tollgate packages in the workspace. */
export function packageVersions(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const dir of WORKSPACE_PACKAGES) {
    const v = versionAt(join(BENCH_DIR, '..', 'packages', dir, 'package.json'));
    if (v !== undefined) out[`@tollgate/${dir}`] = `${v} (workspace)`;
  }
  for (const name of BENCHMARKED_PACKAGES) {
    out[name] = versionAt(join(BENCH_DIR, 'node_modules', name, 'package.json')) ?? 'not installed';
  }
  return out;
}
