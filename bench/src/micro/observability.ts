/**
 * @module Section O's measurement (bench/src/observability/overhead.ts) from the command line, against
 * any build of the core, e.g. a checkout before the feature:
 *
 *   npx tsx --conditions=@tollgate/source bench/src/micro/observability.ts \
 *     [--baseline <path of a core's index.ts>] [--current <path>] [--exporter none|otel|prometheus] [--passes 21] [--case over]
 *
 * Without `--baseline`, the baseline is this checkout's core with the observability hooks cut out
 * (bench/src/observability/baseline.ts), as `pnpm bench --sections O` uses; `--current` defaults to an
 * unchanged copy of this checkout's core written the same way (`buildObservabilityCurrent`). Prints one table.
 */
import { buildObservabilityBaseline, buildObservabilityCurrent } from '../observability/baseline.js';
import { EXPORTERS, type Exporter, measureOverhead, OVERHEAD_CASES } from '../observability/overhead.js';
import { median } from '../stats.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(name);
  return (i < 0 ? undefined : process.argv[i + 1]) ?? fallback;
}

const exporter = arg('--exporter', 'none') as Exporter;
if (!EXPORTERS.includes(exporter)) throw new TypeError(`--exporter must be ${EXPORTERS.join(', ')}; received ${exporter}`);
const only = arg('--case', '');
const passes = Number(arg('--passes', '21'));
const baseline = arg('--baseline', '') || buildObservabilityBaseline();
const cases = OVERHEAD_CASES.filter((c) => c.id.includes(only) || c.label.includes(only));

const rows = await measureOverhead({
  exporter,
  current: arg('--current', '') || buildObservabilityCurrent(),
  baseline,
  cases: cases.map((c) => c.id),
  passes,
  batch: 20_000,
});
console.log(`exporter: ${exporter}; ${passes} pairs of 20000 decisions per case; CPU ns per decision; baseline ${baseline}`);
console.log('| case | baseline ns | current ns | current / baseline (median of pairs) |');
console.log('| --- | --- | --- | --- |');
for (const r of rows) {
  const label = OVERHEAD_CASES.find((c) => c.id === r.case)?.label ?? r.case;
  console.log(`| ${label} | ${r.baselineNs.toFixed(1)} | ${r.currentNs.toFixed(1)} | ${median(r.ratios).toFixed(3)} |`);
}
process.exit(0);
