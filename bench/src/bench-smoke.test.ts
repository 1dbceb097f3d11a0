/**
 * @module The benchmark harness's smoke test: `pnpm bench --smoke` end to end (a few tiny cells of
 * sections A, B, C and R) must exit 0 and write a report with every section. It checks that the harness
 * works, never how fast anything is.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BENCH_DIR } from './child-process.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-smoke-'));

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('pnpm bench --smoke', () => {
  it('runs a few cells of every section and writes the report', () => {
    const out = join(dir, 'RESULTS.md');
    const r = spawnSync(process.execPath, ['--conditions=@tollgate/source', '--import', 'tsx', 'src/main.ts', '--smoke', '--out', out], {
      cwd: BENCH_DIR,
      encoding: 'utf8',
      timeout: 110_000,
    });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    const report = readFileSync(out, 'utf8');
    for (const heading of [
      '## Machine',
      '## Versions',
      '## Targets (issues 5 and 12)',
      '## A. Decisions in process',
      '## B. Redis',
      '## C. HTTP',
      '## R. Replay',
    ]) {
      expect(report).toContain(heading);
    }
    expect(report).toMatch(/\| tollgate gcra \| [\d,.]+ \| [\d,.]+ \|/);
    expect(report).toMatch(/\| express-rate-limit MemoryStore \| [\d,.]+ \| [\d,.]+ \|/);
    expect(report).toMatch(/\| express \| allow \| express-rate-limit \| [\d,]+ \| [\d.]+ \|/);
    expect(report).toMatch(/\| express \| block \| @tollgate\/express \| [\d,]+ \| [\d.]+ \|/);
    // The ratios table: tollgate / bare, wire / bare, tollgate / wire, peer / bare, each measured.
    expect(report).toMatch(/\| express \| block \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \|/);
    if (!report.includes('Section B did not run')) {
      // One command per decision whatever the number of policies, each decision made by the store.
      for (const label of ['one policy (gcra)', 'two policies (gcra + daily fixed-window)', 'gcra + shadow sliding-window']) {
        const escaped = label.replace(/[()+]/g, '\\$&');
        expect(report).toMatch(
          new RegExp(`\\| tollgate RedisStore, ${escaped} \\| 16 \\| [\\d,]+ \\| [^|]+ \\| [\\d.]+ \\| [\\d.]+ \\| 1\\.00 \\|`),
        );
      }
      expect(report).toContain('Every decision was admitted, as expected.');
    }
    expect(r.stdout).toContain('Targets:');
    expect(report).toMatch(/median [\d,]+ lines\/s/);
  }, 120_000);
});
