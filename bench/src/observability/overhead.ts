/**
 * @module What observability costs a decision (issue 12), measured in pairs inside one process: section
 * A's loop (`await limiter.check(key)`, gcra on a MemoryStore) on two builds of the core loaded side by
 * side, `current` and `baseline` (see baseline.ts: the same source with the observability hooks cut
 * out). Batches of each alternate (in alternating order) and are timed in CPU time of the process, so a
 * busy shared machine inflates both sides of a pair alike; a case's figure is the median over pairs of
 * the ratio current / baseline. The exporter (none, the OpenTelemetry SDK, a prom-client registry) is
 * process-wide, so one process measures one exporter.
 */
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { Registry } from 'prom-client';
import type * as CoreModule from '../../../packages/core/src/index.js';
import { makeKeys } from '../keys.js';
import { median } from '../stats.js';

type Core = Pick<typeof CoreModule, 'createLimiter' | 'MemoryStore' | 'registerPrometheusMetrics'>;
type Limiter = ReturnType<Core['createLimiter']>;

export type Exporter = 'none' | 'otel' | 'prometheus';
export const EXPORTERS: readonly Exporter[] = ['none', 'otel', 'prometheus'];

export interface OverheadCase {
  readonly id: string;
  readonly label: string;
  readonly keys: number;
  readonly limit: number;
  readonly expectAllowed: boolean;
}

export const OVERHEAD_CASES: readonly OverheadCase[] = [
  { id: '1key', label: '1 key', keys: 1, limit: 1_000_000_000, expectAllowed: true },
  { id: '1k', label: '1k keys', keys: 1000, limit: 1_000_000_000, expectAllowed: true },
  { id: '100k', label: '100k keys', keys: 100_000, limit: 1_000_000_000, expectAllowed: true },
  { id: 'over', label: 'over the limit (1 key)', keys: 1, limit: 1, expectAllowed: false },
];

export interface OverheadInput {
  readonly exporter: Exporter;
  /** `import()` paths of the two builds. */
  readonly current: string;
  readonly baseline: string;
  readonly cases: readonly string[];
  readonly passes: number;
  readonly batch: number;
  /** The baseline must see no exporter (the providerless twin): checked, so a twin that found the package fails loudly. */
  readonly baselineUnwatched?: boolean;
}

export interface OverheadCaseResult {
  readonly case: string;
  /** Median CPU ns per decision of each side over the passes. */
  readonly baselineNs: number;
  readonly currentNs: number;
  /** current / baseline of every pair. */
  readonly ratios: readonly number[];
}

/** Attaches the exporter to `core` before any limiter exists, as an app would at startup. */
function attach(exporter: Exporter, core: Core): void {
  if (exporter === 'otel') {
    const reader = new PeriodicExportingMetricReader({
      exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
      exportIntervalMillis: 1000,
    });
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
  } else if (exporter === 'prometheus') {
    core.registerPrometheusMetrics({ registry: new Registry() });
  }
}

function limiterOf(core: Core, c: OverheadCase): Limiter {
  const store = new core.MemoryStore({ maxKeys: Math.max(c.keys, 1000) });
  return core.createLimiter({ policies: [{ algorithm: 'gcra', limit: c.limit, windowMs: 60_000 }], store });
}

/**
 * Pairs run and dropped before the measured ones. A process measures one case (section O), so it is
 * short-lived: the code an exporter runs now and then (the store call timed 1 in 1024, the SDK's record)
 * must be compiled before the measurement, as section A's warm-up does for its cells.
 */
export const WARM_UP_PAIRS = 10;

type Loop = (limiter: Limiter, keys: readonly string[], batch: number, expectAllowed: boolean) => Promise<number>;

const LOOP_BODY = `
  let wrong = 0;
  const start = process.cpuUsage();
  for (let i = 0; i < batch; i++) {
    const d = await limiter.check(keys[i % keys.length]);
    if (d.allowed !== expectAllowed) wrong++;
  }
  const used = process.cpuUsage(start);
  if (wrong > 0 && expectAllowed) throw new Error(wrong + ' unexpected verdicts');
  return ((used.user + used.system) * 1000) / batch;
`;

/**
 * A timing loop of its own for one side: CPU ns per decision of `batch` awaited checks over `keys`.
 * One loop shared by both builds would see two `check` functions and two Decision classes at its call
 * site, and V8 would inline (or not) the one it met first: a bias of several percent, which the control
 * showed. Compiled from text, each loop has its own feedback.
 */
function loopFor(): Loop {
  const AsyncFunction = (async () => {}).constructor as new (...args: string[]) => Loop;
  return new AsyncFunction('limiter', 'keys', 'batch', 'expectAllowed', LOOP_BODY);
}

export async function measureOverhead(input: OverheadInput): Promise<OverheadCaseResult[]> {
  const current = (await import(input.current)) as Core;
  const baseline = (await import(input.baseline)) as Core;
  attach(input.exporter, current);
  const out: OverheadCaseResult[] = [];
  for (const c of OVERHEAD_CASES.filter((x) => input.cases.includes(x.id))) {
    const keys = makeKeys(c.keys);
    const sides = { baseline: limiterOf(baseline, c), current: limiterOf(current, c) };
    const loops = { baseline: loopFor(), current: loopFor() };
    const time = (side: keyof typeof sides): Promise<number> => loops[side](sides[side], keys, input.batch, c.expectAllowed);
    for (const l of Object.values(sides)) for (const k of keys) await l.check(k);
    if (input.baselineUnwatched === true) {
      const store = (await import(input.baseline.replace(/index\.ts$/, 'observability/metric-store.ts'))) as {
        exporters: { attached: boolean };
      };
      if (store.exporters.attached) throw new Error(`the baseline ${input.baseline} sees an exporter; it must not`);
    }
    for (let w = 0; w < WARM_UP_PAIRS; w++) {
      await time('baseline');
      await time('current');
    }
    const b: number[] = [];
    const cur: number[] = [];
    const ratios: number[] = [];
    for (let p = 0; p < input.passes; p++) {
      let nb: number;
      let nc: number;
      if (p % 2 === 0) {
        nb = await time('baseline');
        nc = await time('current');
      } else {
        nc = await time('current');
        nb = await time('baseline');
      }
      b.push(nb);
      cur.push(nc);
      ratios.push(nc / nb);
    }
    out.push({ case: c.id, baselineNs: median(b), currentNs: median(cur), ratios });
    await Promise.all(Object.values(sides).map((l) => l.close()));
  }
  return out;
}
