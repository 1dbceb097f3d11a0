/**
 * @module Micro-benchmark of what observability costs per decision (issue 12): the same section A
 * decision loop (`await limiter.check(key)`, gcra on a MemoryStore) on this checkout's core and on a
 * baseline core without the feature, loaded side by side in one process:
 *
 *   npx tsx --conditions=@tollgate/source bench/src/micro/observability.ts \
 *     --baseline <checkout without observability>/packages/core/src/index.ts [--exporter none|otel|prometheus] [--passes 21]
 *
 * With `--exporter otel` the OpenTelemetry SDK is the global MeterProvider (every instrument registered,
 * collected every second); with `prometheus` a prom-client registry is attached; either is attached
 * before the limiters are created. Passes alternate baseline and current batches (in alternating order)
 * and time each batch in CPU time of the process, so a busy shared machine inflates both sides of a
 * pair alike; the figure is the median over passes of the per-pair ratio current / baseline. Not part
 * of the test suite.
 */
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { Registry } from 'prom-client';
import * as current from '../../../packages/core/src/index.js';
import { makeKeys } from '../keys.js';

type Core = Pick<typeof current, 'createLimiter' | 'MemoryStore'>;
type Limiter = ReturnType<typeof current.createLimiter>;

interface Case {
  readonly name: string;
  readonly keys: number;
  readonly limit: number;
  readonly expectAllowed: boolean;
}

const CASES: readonly Case[] = [
  { name: '1 key', keys: 1, limit: 1_000_000_000, expectAllowed: true },
  { name: '1k keys', keys: 1000, limit: 1_000_000_000, expectAllowed: true },
  { name: '100k keys', keys: 100_000, limit: 1_000_000_000, expectAllowed: true },
  { name: 'over the limit (1 key)', keys: 1, limit: 1, expectAllowed: false },
];

function arg(name: string, fallback?: string): string {
  const i = process.argv.indexOf(name);
  const v = i < 0 ? fallback : process.argv[i + 1];
  if (v === undefined) throw new TypeError(`${name} is required; see the header of this file`);
  return v;
}

const baselinePath = arg('--baseline');
const exporter = arg('--exporter', 'none');
const passes = Number(arg('--passes', '21'));
const BATCH = 20_000;

if (exporter === 'otel') {
  const reader = new PeriodicExportingMetricReader({
    exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
    exportIntervalMillis: 1000,
  });
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
} else if (exporter === 'prometheus') {
  current.registerPrometheusMetrics({ registry: new Registry() });
} else if (exporter !== 'none') {
  throw new TypeError(`--exporter must be none, otel or prometheus; received ${exporter}`);
}

const baseline = (await import(baselinePath)) as Core;

function limiterOf(core: Core, c: Case): Limiter {
  const store = new core.MemoryStore({ maxKeys: Math.max(c.keys, 1000) });
  return core.createLimiter({ policies: [{ algorithm: 'gcra', limit: c.limit, windowMs: 60_000 }], store }) as Limiter;
}

/** CPU ns per decision of BATCH awaited checks over `keys`, starting at `offset`. */
async function timeBatch(limiter: Limiter, keys: readonly string[], expectAllowed: boolean): Promise<number> {
  let wrong = 0;
  const start = process.cpuUsage();
  for (let i = 0; i < BATCH; i++) {
    const d = await limiter.check(keys[i % keys.length] as string);
    if (d.allowed !== expectAllowed) wrong++;
  }
  const used = process.cpuUsage(start);
  if (wrong > 0 && expectAllowed) throw new Error(`${wrong} unexpected verdicts`);
  return ((used.user + used.system) * 1000) / BATCH;
}

function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

console.log(`exporter: ${exporter}; ${passes} passes of ${BATCH} decisions per side; CPU ns per decision`);
console.log('| case | baseline ns | current ns | current / baseline (median of pairs) |');
console.log('| --- | --- | --- | --- |');
for (const c of CASES) {
  const keys = makeKeys(c.keys);
  const sides = { baseline: limiterOf(baseline, c), current: limiterOf(current, c) };
  for (const l of Object.values(sides)) for (const k of keys) await l.check(k);
  for (let w = 0; w < 3; w++) {
    await timeBatch(sides.baseline, keys, c.expectAllowed);
    await timeBatch(sides.current, keys, c.expectAllowed);
  }
  const b: number[] = [];
  const cur: number[] = [];
  const ratios: number[] = [];
  for (let p = 0; p < passes; p++) {
    let nb: number;
    let nc: number;
    if (p % 2 === 0) {
      nb = await timeBatch(sides.baseline, keys, c.expectAllowed);
      nc = await timeBatch(sides.current, keys, c.expectAllowed);
    } else {
      nc = await timeBatch(sides.current, keys, c.expectAllowed);
      nb = await timeBatch(sides.baseline, keys, c.expectAllowed);
    }
    b.push(nb);
    cur.push(nc);
    ratios.push(nc / nb);
  }
  console.log(`| ${c.name} | ${median(b).toFixed(1)} | ${median(cur).toFixed(1)} | ${median(ratios).toFixed(3)} |`);
  await Promise.all(Object.values(sides).map((l) => l.close()));
}
process.exit(0);
