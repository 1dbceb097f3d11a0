/**
 * @module Section O's measurement (bench/src/observability/overhead.ts) from the command line, against
 * any build of the core, e.g. a checkout before the feature:
 *
 *   npx tsx --conditions=@tollgate/source bench/src/micro/observability.ts \
 *     [--baseline <index.ts>[,<index.ts>...]] [--current <index.ts>[,...]] [--copies 4] \
 *     [--exporter none|otel|prometheus] [--passes 21] [--case over]
 *
 * Without `--baseline`, the baseline is `--copies` copies of this checkout's core with the observability
 * hooks cut out (bench/src/observability/baseline.ts), as `pnpm bench --sections O` uses; `--current`
 * defaults to as many unchanged copies of this checkout's core written the same way
 * (`buildObservabilityCurrent`). Given paths are the copies (each in a folder of its own, as many of one
 * build as of the other). Prints one table.
 */
import { join } from 'node:path';
import { buildCopies, buildObservabilityBaseline, buildObservabilityCurrent, COPIES_DIR } from '../observability/baseline.js';
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
const copies = Number(arg('--copies', '4'));
if (!Number.isInteger(copies) || copies < 1) throw new TypeError(`--copies must be a whole number from 1; received ${copies}`);
const copiesOf = (given: string, build: (dir: string) => string, name: string): string[] =>
  given !== '' ? given.split(',') : buildCopies(build, join(COPIES_DIR, `micro-${name}`), copies);
const baseline = copiesOf(arg('--baseline', ''), buildObservabilityBaseline, 'obs-baseline');
const current = copiesOf(arg('--current', ''), buildObservabilityCurrent, 'obs-current');
const cases = OVERHEAD_CASES.filter((c) => c.id.includes(only) || c.label.includes(only));

const rows = await measureOverhead({
  exporter,
  current,
  baseline,
  cases: cases.map((c) => c.id),
  passes,
  batch: 20_000,
});
console.log(
  `exporter: ${exporter}; ${current.length} copies of each build, ${passes} passes of 20000 decisions per copy and case; CPU ns per decision; baseline ${baseline.join(', ')}`,
);
console.log('| case | baseline ns | current ns | current / baseline (median of passes) | ns of each copy (current; baseline) |');
console.log('| --- | --- | --- | --- | --- |');
for (const r of rows) {
  const label = OVERHEAD_CASES.find((c) => c.id === r.case)?.label ?? r.case;
  const each = (ns: readonly number[]): string => ns.map((x) => x.toFixed(1)).join(', ');
  console.log(
    `| ${label} | ${r.baselineNs.toFixed(1)} | ${r.currentNs.toFixed(1)} | ${median(r.ratios).toFixed(3)} | ${each(r.copyNs.current)}; ${each(r.copyNs.baseline)} |`,
  );
}
process.exit(0);
