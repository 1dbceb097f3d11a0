/**
 * @module The `tollgate` bin as the root `tollgate` script runs it (tsx on the sources): exit codes, stdout for
 * the report, stderr for errors, no stack trace for a usage error.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'tollgate-bin-'));

function tollgate(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  // The root package.json's `tollgate` script, run with this node.
  const script =
    (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.tollgate ?? '';
  const [, condition, main] = /^tsx (--conditions=\S+) (\S+)$/.exec(script) ?? [];
  expect(condition).toBe('--conditions=@tollgate/source');
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [condition as string, '--import', 'tsx', join(root, main as string), ...args],
      { cwd: root, timeout: 30_000 },
      (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : ((error as { code?: number }).code ?? 1), stdout, stderr });
      },
    );
  });
}

describe('the tollgate bin', () => {
  it('replays a file and exits 0', async () => {
    const csv = join(dir, 'in.csv');
    writeFileSync(csv, '1700000000,a\n1700000000,a\n1700000000,a\n');
    const { code, stdout, stderr } = await tollgate(['replay', csv, '--policy', '{"limit":2,"windowMs":1000}']);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toMatch(/#1\s+gcra 2\/1s\s+3\s+2\s+1/);
  });

  it('prints the usage and exits 0 on --help and -h (help asked for is not an unknown option)', async () => {
    for (const flag of ['--help', '-h']) {
      const { code, stdout, stderr } = await tollgate([flag]);
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      expect(stdout).toMatch(/^Usage:\n {2}tollgate replay <file\.\.\.\|->/);
    }
  });

  it('prints the package version and exits 0 on --version, -v and version', async () => {
    const { version } = JSON.parse(readFileSync(join(here, '..', 'package.json'), 'utf8')) as { version: string };
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    for (const flag of ['--version', '-v', 'version']) {
      const { code, stdout, stderr } = await tollgate([flag]);
      expect({ code, stdout, stderr }).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    }
  });

  it('exits 2 with the coded message and no stack trace on a usage error', async () => {
    const { code, stdout, stderr } = await tollgate(['replay', join(dir, 'missing.log'), '--policy', '{"limit":2,"windowMs":1000}']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^ERR_RL_REPLAY_INPUT: cannot read '.*missing\.log' \(ENOENT\)\. See https:\/\/\S+#err_rl_replay_input\n$/);
  });
});
