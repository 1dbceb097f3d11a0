/**
 * @module The benchmark harness's smoke test: `pnpm bench --smoke` end to end (a few tiny cells of
 * sections A, B, C, D, H, I, O and R) must exit 0 and write a report with every section. It checks that the harness
 * works, never how fast anything is.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BENCH_DIR, baseFlags } from './child-process.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-smoke-'));

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('pnpm bench --smoke', () => {
  it('runs a few cells of every section and writes the report', () => {
    const out = join(dir, 'RESULTS.md');
    const r = spawnSync(process.execPath, [...baseFlags(), 'src/main.ts', '--smoke', '--out', out], {
      cwd: BENCH_DIR,
      encoding: 'utf8',
      timeout: 280_000,
    });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    const report = readFileSync(out, 'utf8');
    for (const heading of [
      '## Machine',
      '## Versions',
      '## Targets (issues 5, 11 and 12)',
      '## A. Decisions in process',
      '## B. Redis',
      '## C. HTTP',
      '## D. Concurrency and load shedding (issue 11)',
      '## H. Hot keys on one Redis (issue 27)',
      '## I. Interleaved in one process (issue 24)',
      '## O. Observability overhead (issue 12)',
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
    // D: both apps answered, and the per-key burst ran; O: every exporter and the control measured every case.
    expect(report).toMatch(/\| 1 \| adaptive shedding \| [\d,]+ \| [\d,]+ \| \d+ ms \|/);
    expect(report).toMatch(/\| 1 \| unprotected twin \| [\d,]+ \|/);
    expect(report).toMatch(/statuses (\d{3} ){5}\d{3}, at most \d running/);
    for (const exporter of [
      'control: the core vs its providerless copy, no exporter',
      'no exporter vs hooks cut',
      'OpenTelemetry SDK vs no provider',
      'prom-client registry vs no provider',
    ]) {
      for (const c of ['1 key', '1k keys', '100k keys', 'over the limit (1 key)']) {
        expect(report).toContain(`| ${exporter} | ${c} | `);
      }
    }
    // I: tollgate, v0.1 (unless this clone lacks its commit) and express-rate-limit, interleaved in one process.
    expect(report).toMatch(/\| 1 key \| tollgate gcra \/ express-rate-limit MemoryStore \| [\d,.]+ \| [\d,.]+ \| [\d.]+ \|/);
    if (!report.includes('could not be exported')) {
      expect(report).toMatch(/\| 1 key \| tollgate gcra \/ tollgate v0\.1 gcra \| [\d,.]+ \| [\d,.]+ \| [\d.]+ \|/);
    }
    expect(report).toContain(
      "| I | gcra: awaited check() at or below express-rate-limit's MemoryStore.increment, 1 key, interleaved in one process |",
    );
    expect(report).toContain('| O | gcra without a provider within 1.02x of the build without observability, 1 key |');
    expect(r.stdout).toContain('Targets:');
    expect(report).toMatch(/median [\d,]+ lines\/s/);
  }, 300_000);
});
