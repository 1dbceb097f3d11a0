/**
 * @module What observability costs a decision (issue 12), measured in pairs inside one process: section
 * A's loop (`await limiter.check(key)`, gcra on a MemoryStore) on two builds of the core loaded side by
 * side, `current` and `baseline` (see baseline.ts: the same source with the observability hooks cut
 * out), each build in several copies. Batches of every copy alternate (in alternating order) and are
 * timed in CPU time of the process, so a busy shared machine inflates both sides of a pass alike; a
 * pass's ratio is the mean over the current copies over the mean over the baseline copies, and a case's
 * figure is the median of those ratios. The exporter (none, the OpenTelemetry SDK, a prom-client
 * registry) is process-wide, so one process measures one exporter.
 *
 * Why copies: identical code loaded twice in one process runs at speeds up to 10 % apart, copy against
 * copy, whatever the pass (where V8 puts each copy's machine code and objects, not what it compiles: the
 * inlining is the same). One copy per side made that luck most of a process's error; the mean of
 * `copies` per side divides it by the square root of `copies`, for much less than as many processes cost.
 */
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { Registry } from 'prom-client';
import type * as CoreModule from '../../../packages/core/src/index.js';
import { makeKeys } from '../keys.js';
import { median } from '../stats.js';
import { metricStoreOf } from './baseline.js';

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
  /** The limiters of both builds turn hot keys on (`hotKeys: true`); otherwise they keep the default (off). */
  readonly hotKeys?: true;
  /** The row sets (observability-section.ts) that measure this case; all when absent. */
  readonly subjects?: readonly ('control' | Exporter)[];
}

export const OVERHEAD_CASES: readonly OverheadCase[] = [
  { id: '1key', label: '1 key', keys: 1, limit: 1_000_000_000, expectAllowed: true },
  { id: '1k', label: '1k keys', keys: 1000, limit: 1_000_000_000, expectAllowed: true },
  { id: '100k', label: '100k keys', keys: 100_000, limit: 1_000_000_000, expectAllowed: true },
  { id: 'over', label: 'over the limit (1 key)', keys: 1, limit: 1, expectAllowed: false },
  // What opting in to hot keys costs a rejection (a reference: the default leaves them off), against the cut build with them on too.
  {
    id: 'over-hot',
    label: 'over the limit (1 key), hot keys on',
    keys: 1,
    limit: 1,
    expectAllowed: false,
    hotKeys: true,
    subjects: ['none'],
  },
];

export interface OverheadInput {
  readonly exporter: Exporter;
  /** `import()` paths of the copies of each build (as many of one as of the other, each copy a folder of its own). */
  readonly current: readonly string[];
  readonly baseline: readonly string[];
  readonly cases: readonly string[];
  readonly passes: number;
  readonly batch: number;
  /** The baseline must see no exporter (the providerless twin): checked, so a twin that found the package fails loudly. */
  readonly baselineUnwatched?: boolean;
}

export interface OverheadCaseResult {
  readonly case: string;
  /** Median over the passes of each side's mean CPU ns per decision (mean over its copies). */
  readonly baselineNs: number;
  readonly currentNs: number;
  /** current / baseline of every pass. */
  readonly ratios: readonly number[];
  /** Each copy's median CPU ns per decision, in load order: the copy-to-copy spread the copies average out. */
  readonly copyNs: { readonly current: readonly number[]; readonly baseline: readonly number[] };
}

/** Attaches the exporter to the current copies before any limiter exists, as an app would at startup. */
function attach(exporter: Exporter, copies: readonly Core[]): void {
  if (exporter === 'otel') {
    const reader = new PeriodicExportingMetricReader({
      exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
      exportIntervalMillis: 1000,
    });
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
  } else if (exporter === 'prometheus') {
    // A registry each: the copies register the same series names.
    for (const core of copies) core.registerPrometheusMetrics({ registry: new Registry() });
  }
}

function limiterOf(core: Core, c: OverheadCase): Limiter {
  const store = new core.MemoryStore({ maxKeys: Math.max(c.keys, 1000) });
  return core.createLimiter({ policies: [{ algorithm: 'gcra', limit: c.limit, windowMs: 60_000 }], store, hotKeys: c.hotKeys === true });
}

/**
 * Passes (a batch of every copy) run and dropped before the measured ones. A process measures one case (section O), so it is
 * short-lived: the code an exporter runs now and then (the store call timed 1 in 1024, the SDK's record)
 * must be compiled before the measurement, as section A's warm-up does for its cells.
 */
export const WARM_UP_PASSES = 10;

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

/** One copy of one build in a case: its limiter, its own timing loop, and its batches' ns. */
interface Side {
  readonly build: 'current' | 'baseline';
  readonly limiter: Limiter;
  readonly loop: Loop;
  readonly ns: number[];
}

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * Imports the copies, alternating which build comes first in each pair (current 0, baseline 0, baseline
 * 1, current 1, ...), so that neither build is always the one loaded, compiled or placed first.
 */
async function importCopies(input: OverheadInput): Promise<{ current: Core[]; baseline: Core[] }> {
  if (input.current.length === 0 || input.current.length !== input.baseline.length)
    throw new Error(
      `section O needs as many current copies as baseline copies, at least one (${input.current.length} and ${input.baseline.length})`,
    );
  const current: Core[] = [];
  const baseline: Core[] = [];
  for (let i = 0; i < input.current.length; i++) {
    const order = i % 2 === 0 ? (['current', 'baseline'] as const) : (['baseline', 'current'] as const);
    for (const build of order) {
      const core = (await import(input[build][i] as string)) as Core;
      (build === 'current' ? current : baseline).push(core);
    }
  }
  return { current, baseline };
}

/** Fails loudly when a baseline copy that must not see the exporter does (a twin that found `@opentelemetry/api`). */
async function checkUnwatched(paths: readonly string[]): Promise<void> {
  for (const path of paths) {
    const store = (await import(metricStoreOf(path))) as { exporters: { attached: boolean } };
    if (store.exporters.attached) throw new Error(`the baseline ${path} sees an exporter; it must not`);
  }
}

export async function measureOverhead(input: OverheadInput): Promise<OverheadCaseResult[]> {
  const copies = await importCopies(input);
  attach(input.exporter, copies.current);
  const out: OverheadCaseResult[] = [];
  for (const c of OVERHEAD_CASES.filter((x) => input.cases.includes(x.id))) {
    const keys = makeKeys(c.keys);
    // In pairs, in the order they were loaded.
    const sides: Side[] = copies.current.flatMap((core, i) => {
      const pair: Side[] = [
        { build: 'current', limiter: limiterOf(core, c), loop: loopFor(), ns: [] },
        { build: 'baseline', limiter: limiterOf(copies.baseline[i] as Core, c), loop: loopFor(), ns: [] },
      ];
      return i % 2 === 0 ? pair : pair.reverse();
    });
    for (const s of sides) for (const k of keys) await s.limiter.check(k);
    // Once limiters exist: a copy looks for `@opentelemetry/api` at its first limiter.
    if (input.baselineUnwatched === true) await checkUnwatched(input.baseline);
    const time = (s: Side): Promise<number> => s.loop(s.limiter, keys, input.batch, c.expectAllowed);
    for (let w = 0; w < WARM_UP_PASSES; w++) for (const s of sides) await time(s);
    const b: number[] = [];
    const cur: number[] = [];
    const ratios: number[] = [];
    for (let p = 0; p < input.passes; p++) {
      const pass = { current: [] as number[], baseline: [] as number[] };
      for (const s of p % 2 === 0 ? sides : [...sides].reverse()) {
        const ns = await time(s);
        s.ns.push(ns);
        pass[s.build].push(ns);
      }
      b.push(mean(pass.baseline));
      cur.push(mean(pass.current));
      ratios.push(mean(pass.current) / mean(pass.baseline));
    }
    const copyNs = (build: Side['build']): number[] => sides.filter((s) => s.build === build).map((s) => median(s.ns));
    out.push({
      case: c.id,
      baselineNs: median(b),
      currentNs: median(cur),
      ratios,
      copyNs: { current: copyNs('current'), baseline: copyNs('baseline') },
    });
    await Promise.all(sides.map((s) => s.limiter.close()));
  }
  return out;
}
