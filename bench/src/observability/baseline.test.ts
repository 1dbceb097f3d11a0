/**
 * @module Section O's baseline must differ from the core exactly by the two cut hooks, and the
 * measurement must run on it (tiny: it checks the harness, not the figures).
 */

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BENCH_DIR } from '../child-process.js';
import {
  buildObservabilityBaseline,
  buildObservabilityCurrent,
  buildProviderlessTwin,
  envWithoutNodePath,
  metricStoreOf,
} from './baseline.js';
import { measureOverhead } from './overhead.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-obs-baseline-'));

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('the observability baseline', () => {
  it('cuts the observer and the store timer out of a copy of the core, and it decides like an unchanged copy', async () => {
    const index = buildObservabilityBaseline(join(dir, 'baseline'));
    const observer = readFileSync(join(dir, 'baseline', 'src', 'observability', 'decision-observer.ts'), 'utf8');
    expect(observer).toMatch(/observe\(d: Decision, options: CheckOptions \| undefined, at: number\): Decision \{\n\s+return d;/);
    const timer = readFileSync(join(dir, 'baseline', 'src', 'observability', 'store-timer.ts'), 'utf8');
    expect(timer).toMatch(/\): StoreResult \| Promise<StoreResult> \{\n\s+return this\.store\.apply\(key, plan, cost, now, lease\);/);
    const current = buildObservabilityCurrent(join(dir, 'current'));
    // The copy measured against it is the core unchanged, with the core's dependencies.
    const source = join(BENCH_DIR, '..', 'packages', 'core', 'src');
    for (const file of ['observability/decision-observer.ts', 'observability/store-timer.ts', 'limiter/create-limiter.ts']) {
      expect(readFileSync(join(dir, 'current', 'src', file), 'utf8')).toBe(readFileSync(join(source, file), 'utf8'));
    }
    expect(existsSync(join(dir, 'current', 'node_modules', '@opentelemetry', 'api'))).toBe(true);
    // Each copy runs as the published package does: one JavaScript bundle, no name-keeping helper per closure.
    expect(current).toMatch(/dist\/index\.mjs$/);
    expect(readFileSync(current, 'utf8')).not.toContain('__name(');
    expect(readFileSync(index, 'utf8')).toContain('return this.store.apply(key, plan, cost, now, lease);');
    const second = {
      current: buildObservabilityCurrent(join(dir, 'current-2')),
      baseline: buildObservabilityBaseline(join(dir, 'baseline-2')),
    };
    const rows = await measureOverhead({
      exporter: 'none',
      current: [current, second.current],
      baseline: [index, second.baseline],
      cases: ['1key', 'over'],
      passes: 2,
      batch: 50,
    });
    expect(rows.map((r) => [r.case, r.ratios.length])).toEqual([
      ['1key', 2],
      ['over', 2],
    ]);
    for (const r of rows) {
      expect(r.baselineNs).toBeGreaterThan(0);
      // Each copy measured on its own: two of each build.
      expect(r.copyNs.current).toHaveLength(2);
      expect(r.copyNs.baseline).toHaveLength(2);
      for (const ns of [...r.copyNs.current, ...r.copyNs.baseline]) expect(ns).toBeGreaterThan(0);
    }
  });

  it('gives the providerless twin every dependency but @opentelemetry/api, so a global MeterProvider never reaches it', async () => {
    const index = buildProviderlessTwin(join(dir, 'twin'));
    expect(existsSync(join(dir, 'twin', 'node_modules', '@opentelemetry'))).toBe(false);
    expect(existsSync(join(dir, 'twin', 'node_modules', 'ipaddr.js'))).toBe(true);
    // In a process of its own, as section O runs it (vitest's module loader resolves packages its own way).
    const script = [
      "import { metrics } from '@opentelemetry/api';",
      "import { MeterProvider } from '@opentelemetry/sdk-metrics';",
      'metrics.setGlobalMeterProvider(new MeterProvider());',
      `const twin = await import(${JSON.stringify(index)});`,
      "await twin.createLimiter({ policies: [{ limit: 10, windowMs: 1000 }] }).check('k');",
      `const store = await import(${JSON.stringify(metricStoreOf(index))});`,
      'console.log(JSON.stringify(store.exporters));',
    ].join('\n');
    const r = spawnSync(process.execPath, ['--conditions=@tollgate/source', '--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: BENCH_DIR,
      env: envWithoutNodePath(),
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ attached: false, otel: false });
  });
});
