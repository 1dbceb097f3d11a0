/**
 * @module Section O's baseline must differ from the core exactly by the two cut hooks, and the
 * measurement must run on it (tiny: it checks the harness, not the figures).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BENCH_DIR } from '../child-process.js';
import { buildObservabilityBaseline } from './baseline.js';
import { measureOverhead } from './overhead.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-obs-baseline-'));

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('the observability baseline', () => {
  it('cuts the observer and the store timer out of a copy of the core, and both builds decide alike', async () => {
    const index = buildObservabilityBaseline(join(dir, 'baseline'));
    const observer = readFileSync(join(dir, 'baseline', 'src', 'observability', 'decision-observer.ts'), 'utf8');
    expect(observer).toMatch(/observe\(d: Decision, options: CheckOptions \| undefined\): Decision \{\n\s+return d;/);
    const timer = readFileSync(join(dir, 'baseline', 'src', 'observability', 'store-timer.ts'), 'utf8');
    expect(timer).toMatch(/\): StoreResult \| Promise<StoreResult> \{\n\s+return this\.store\.apply\(key, plan, cost, now\);/);
    const rows = await measureOverhead({
      exporter: 'none',
      current: join(BENCH_DIR, '..', 'packages', 'core', 'src', 'index.ts'),
      baseline: index,
      cases: ['1key', 'over'],
      passes: 2,
      batch: 50,
    });
    expect(rows.map((r) => [r.case, r.ratios.length])).toEqual([
      ['1key', 2],
      ['over', 2],
    ]);
    for (const r of rows) expect(r.baselineNs).toBeGreaterThan(0);
  });
});
