/**
 * @module Suites that need an outside program (redis-server, nginx, chromium, promtool, redis-sentinel):
 * they run where it can be run, skip LOUDLY where it cannot, and fail instead of skipping when the
 * program's `TOLLGATE_REQUIRE_*` variable is `1` (`.ci/run` sets every one and installs the programs),
 * so CI never passes by skipping. One helper, so every such suite says the same thing the same way.
 */
import { spawnSync } from 'node:child_process';
import { describe, it } from 'vitest';

/** An outside program a suite needs. */
export interface RequiredTool {
  /** How the skip line names it, e.g. `'Redis'`. */
  readonly label: string;
  /** The command run, e.g. `'redis-server'` (or the path an environment variable gave). */
  readonly command: string;
  /** Its version line, or undefined when it cannot be run (see `versionOf`). */
  readonly version: string | undefined;
  /** The variable that turns the skip into a failure, e.g. `'TOLLGATE_REQUIRE_REDIS'`. */
  readonly requireVar: string;
  /** How to install it, e.g. `'apt-get install redis-server'`. */
  readonly install: string;
}

/** The first line `command args` prints (on stdout, else stderr), or undefined when it cannot be run. */
export function versionOf(command: string, args: readonly string[] = ['--version']): string | undefined {
  const r = spawnSync(command, [...args], { encoding: 'utf8' });
  if (r.status !== 0) return undefined;
  return (r.stdout || r.stderr).split('\n')[0]?.trim();
}

/** `describe` that runs only when `tool` can be run: skipped loudly without it, failed under its `requireVar=1`. */
export function describeWith(tool: RequiredTool, name: string, fn: () => void): void {
  if (tool.version !== undefined) {
    describe(name, fn);
    return;
  }
  if (process.env[tool.requireVar] === '1') {
    describe(name, () => {
      it(`needs ${tool.command}`, () => {
        throw new Error(`${tool.requireVar}=1 but '${tool.command}' cannot be run: install it (${tool.install})`);
      });
    });
    return;
  }
  console.warn(`\n*** ${tool.label} not available, skipping "${name}": '${tool.command}' cannot be run (${tool.install}) ***\n`);
  describe.skip(name, fn);
}
