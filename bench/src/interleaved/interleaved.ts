/**
 * @module Section I's measurement, inside one process: awaited decisions of several subjects (this
 * checkout's tollgate, tollgate v0.1, express-rate-limit's MemoryStore, and tollgate with one feature
 * turned on) in alternating batches. Each subject runs on copies of its build (builds.ts), each copy with
 * a limiter and a timing loop of its own; a pass runs one batch of every copy, in an order rotated by one
 * each pass and reversed every other pass, timed in CPU time of the process, so the machine's other load
 * touches every subject alike. A pass's ratio of two subjects is the mean of one's copies over the mean of
 * the other's; a process reports, per pair, every pass's ratio.
 */
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { Registry } from 'prom-client';
import { makeKeys } from '../keys.js';
import { metricStoreOf } from '../observability/baseline.js';
import { median } from '../stats.js';

/** The window every subject uses, long enough that nothing expires during a process. */
export const WINDOW_MS = 60_000;
/** The per-key limit of the allow cells: never reached. */
export const ALLOW_LIMIT = 1_000_000_000;

export type CellSet = 'main' | 'extras' | 'otel';

export interface InterleavedCell {
  readonly id: string;
  readonly label: string;
  readonly set: CellSet;
  readonly keys: number;
  /** true: the limit is 1 per window, so every timed decision but a rare refill is a rejection. */
  readonly over: boolean;
}

export const INTERLEAVED_CELLS: readonly InterleavedCell[] = [
  { id: '1key', label: '1 key', set: 'main', keys: 1, over: false },
  { id: '100k', label: '100k keys (cycled)', set: 'main', keys: 100_000, over: false },
  { id: 'over', label: 'over the limit (1 key, limit 1 per 60 s)', set: 'main', keys: 1, over: true },
  { id: 'extras-1key', label: 'features, 1 key', set: 'extras', keys: 1, over: false },
  { id: 'extras-over', label: 'features, over the limit (1 key)', set: 'extras', keys: 1, over: true },
  { id: 'otel-1key', label: 'OpenTelemetry, 1 key', set: 'otel', keys: 1, over: false },
];

export type Build = 'current' | 'v01' | 'erl' | 'twin';

/** What a subject runs: a build, and for tollgate its algorithm and the one feature it turns on. */
export interface SubjectDef {
  readonly id: string;
  readonly label: string;
  readonly build: Build;
  readonly algorithm?: 'gcra' | 'fixed-window';
  readonly feature?: 'plans' | 'hot-keys' | 'concurrency' | 'prometheus' | 'otel';
}

export const SUBJECTS: Readonly<Record<CellSet, readonly SubjectDef[]>> = {
  main: [
    { id: 'tollgate-gcra', label: 'tollgate gcra', build: 'current', algorithm: 'gcra' },
    { id: 'tollgate-fixed-window', label: 'tollgate fixed-window', build: 'current', algorithm: 'fixed-window' },
    { id: 'v01-gcra', label: 'tollgate v0.1 gcra', build: 'v01', algorithm: 'gcra' },
    { id: 'v01-fixed-window', label: 'tollgate v0.1 fixed-window', build: 'v01', algorithm: 'fixed-window' },
    { id: 'erl', label: 'express-rate-limit MemoryStore', build: 'erl' },
  ],
  extras: [
    { id: 'plain', label: 'tollgate gcra, one policy', build: 'current', algorithm: 'gcra' },
    { id: 'plans', label: '+ a plan table (2 plans), check(key, { plan })', build: 'current', algorithm: 'gcra', feature: 'plans' },
    { id: 'hot-keys', label: '+ hotKeys: true', build: 'current', algorithm: 'gcra', feature: 'hot-keys' },
    { id: 'concurrency', label: '+ a concurrency policy, lease released', build: 'current', algorithm: 'gcra', feature: 'concurrency' },
    { id: 'prometheus', label: '+ a prom-client registry', build: 'current', algorithm: 'gcra', feature: 'prometheus' },
  ],
  otel: [
    { id: 'plain-unwatched', label: 'tollgate gcra, one policy, no provider', build: 'twin', algorithm: 'gcra' },
    { id: 'otel', label: '+ an OpenTelemetry MeterProvider', build: 'current', algorithm: 'gcra', feature: 'otel' },
  ],
};

/** The ratios each set reports: [numerator, denominator] subject ids. */
export const PAIRS: Readonly<Record<CellSet, readonly (readonly [string, string])[]>> = {
  main: [
    ['tollgate-gcra', 'erl'],
    ['tollgate-fixed-window', 'erl'],
    ['tollgate-gcra', 'v01-gcra'],
    ['tollgate-fixed-window', 'v01-fixed-window'],
    ['v01-gcra', 'erl'],
    ['v01-fixed-window', 'erl'],
  ],
  extras: [
    ['plans', 'plain'],
    ['hot-keys', 'plain'],
    ['concurrency', 'plain'],
    ['prometheus', 'plain'],
  ],
  otel: [['otel', 'plain-unwatched']],
};

export const pairId = (p: readonly [string, string]): string => `${p[0]}/${p[1]}`;

export interface InterleavedInput {
  readonly cell: string;
  /** `import()` paths of each subject's copies, by subject id. */
  readonly copies: Readonly<Record<string, readonly string[]>>;
  readonly passes: number;
  readonly warmUpPasses: number;
  readonly batch: number;
}

export interface InterleavedProcessResult {
  readonly cell: string;
  /** Per subject: median over the passes of its copies' mean CPU ns per decision. */
  readonly ns: Readonly<Record<string, number>>;
  /** Per pair id: every pass's ratio. */
  readonly ratios: Readonly<Record<string, readonly number[]>>;
  /** Per subject: verdicts that were not the cell's (over the limit: admissions, i.e. refills). */
  readonly unexpected: Readonly<Record<string, number>>;
}

interface TollgateModule {
  createLimiter(options: Record<string, unknown>): {
    check(key: string, options?: Record<string, unknown>): Promise<{ allowed: boolean; release?: () => void }>;
    close(): Promise<void> | void;
  };
  MemoryStore: new (options: { maxKeys: number }) => unknown;
  registerPrometheusMetrics?: (options: { registry: Registry }) => () => void;
}

interface ErlModule {
  MemoryStore: new () => {
    init(options: { windowMs: number }): void;
    increment(key: string): Promise<{ totalHits: number }>;
    shutdown(): void;
  };
}

type Loop = (subject: unknown, keys: readonly string[], cursor: Cursor, batch: number, expectAllowed: boolean) => Promise<number>;

interface Cursor {
  at: number;
  wrong: number;
}

/** The body of a timing loop: CPU ns per decision of `batch` awaited decisions, keys cycled from where the last batch stopped. */
function loopBody(call: string, verdict: string, after: string): string {
  return `
  let wrong = 0;
  let c = cursor.at;
  const n = keys.length;
  const start = process.cpuUsage();
  for (let i = 0; i < batch; i++) {
    const r = await ${call};
    if (${verdict} !== expectAllowed) wrong++;
    ${after}
    if (++c === n) c = 0;
  }
  const used = process.cpuUsage(start);
  cursor.at = c;
  cursor.wrong += wrong;
  return ((used.user + used.system) * 1000) / batch;
`;
}

/**
 * A timing loop of its own for one copy, compiled from text so that each has its own type feedback: one
 * loop shared by every subject would inline the `check` it met first and bias the others.
 */
function loopFor(def: SubjectDef, limit: number): Loop {
  const AsyncFunction = (async () => {}).constructor as new (...args: string[]) => Loop;
  const body =
    def.build === 'erl'
      ? // The middleware's test: `totalHits > limit` is a rejection.
        loopBody('subject.increment(keys[c])', `(r.totalHits <= ${limit})`, '')
      : def.feature === 'plans'
        ? loopBody('subject.check(keys[c], PLAN)', 'r.allowed', '')
        : def.feature === 'concurrency'
          ? loopBody('subject.check(keys[c])', 'r.allowed', 'if (r.release !== undefined) r.release();')
          : loopBody('subject.check(keys[c])', 'r.allowed', '');
  return new AsyncFunction('subject', 'keys', 'cursor', 'batch', 'expectAllowed', `const PLAN = { plan: 'pro' };\n${body}`);
}

interface Side {
  readonly def: SubjectDef;
  readonly subject: unknown;
  readonly close: () => unknown;
  readonly loop: Loop;
  readonly cursor: Cursor;
}

function makeSide(def: SubjectDef, mod: unknown, cell: InterleavedCell): Side {
  const limit = cell.over ? 1 : ALLOW_LIMIT;
  const cursor: Cursor = { at: 0, wrong: 0 };
  if (def.build === 'erl') {
    const store = new (mod as ErlModule).MemoryStore();
    store.init({ windowMs: WINDOW_MS });
    return { def, subject: store, close: () => store.shutdown(), loop: loopFor(def, limit), cursor };
  }
  const core = mod as TollgateModule;
  const policy = { algorithm: def.algorithm ?? 'gcra', limit, windowMs: WINDOW_MS };
  const store = new core.MemoryStore({ maxKeys: Math.max(cell.keys, 1000) });
  const options: Record<string, unknown> =
    def.feature === 'plans'
      ? // The plan asked for is the second, so the lookup is not the default's shortcut.
        { plans: { free: [{ ...policy, limit: cell.over ? 1 : 1000 }], pro: [policy] }, store }
      : def.feature === 'concurrency'
        ? { policies: [policy, { name: 'inflight', algorithm: 'concurrency', limit: 1_000_000 }], store }
        : def.feature === 'hot-keys'
          ? { policies: [policy], store, hotKeys: true }
          : { policies: [policy], store };
  const limiter = core.createLimiter(options);
  return { def, subject: limiter, close: () => limiter.close(), loop: loopFor(def, limit), cursor };
}

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Fails loudly when a copy that must not see the MeterProvider does (a twin that found `@opentelemetry/api`). */
async function checkUnwatched(paths: readonly string[]): Promise<void> {
  for (const path of paths) {
    const store = (await import(metricStoreOf(path))) as { exporters: { attached: boolean } };
    if (store.exporters.attached) throw new Error(`the providerless copy ${path} sees the MeterProvider; it must not`);
  }
}

export async function measureInterleaved(input: InterleavedInput): Promise<InterleavedProcessResult> {
  const cell = INTERLEAVED_CELLS.find((c) => c.id === input.cell);
  if (cell === undefined) throw new Error(`section I: unknown cell ${input.cell}`);
  const defs = SUBJECTS[cell.set].filter((d) => input.copies[d.id] !== undefined);
  const copies = Math.min(...defs.map((d) => (input.copies[d.id] as readonly string[]).length));
  // Exporters first, before any limiter exists, as an app attaches them at startup.
  if (cell.set === 'otel') {
    const reader = new PeriodicExportingMetricReader({
      exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
      exportIntervalMillis: 1000,
    });
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
  }
  // Copy by copy, every subject's, in an order rotated by one each copy: no build is always loaded first.
  const sides: Side[] = [];
  for (let i = 0; i < copies; i++) {
    for (let j = 0; j < defs.length; j++) {
      const def = defs[(i + j) % defs.length] as SubjectDef;
      const mod = (await import((input.copies[def.id] as readonly string[])[i] as string)) as TollgateModule;
      if (def.feature === 'prometheus') mod.registerPrometheusMetrics?.({ registry: new Registry() });
      sides.push(makeSide(def, mod, cell));
    }
  }
  const keys = makeKeys(cell.keys);
  for (const s of sides) {
    for (const k of keys)
      await (s.def.build === 'erl'
        ? (s.subject as { increment(k: string): Promise<unknown> }).increment(k)
        : (s.subject as { check(k: string): Promise<unknown> }).check(k));
  }
  if (cell.set === 'otel') await checkUnwatched(input.copies['plain-unwatched'] ?? []);
  const time = (s: Side): Promise<number> => s.loop(s.subject, keys, s.cursor, input.batch, !cell.over);
  for (let w = 0; w < input.warmUpPasses; w++) for (const s of sides) await time(s);
  for (const s of sides) s.cursor.wrong = 0;
  const perSubject = new Map<string, number[]>(defs.map((d) => [d.id, []]));
  const pairs = PAIRS[cell.set].filter(([a, b]) => perSubject.has(a) && perSubject.has(b));
  const ratios = new Map<string, number[]>(pairs.map((p) => [pairId(p), []]));
  for (let p = 0; p < input.passes; p++) {
    const rotated = [...sides.slice(p % sides.length), ...sides.slice(0, p % sides.length)];
    const order = p % 2 === 0 ? rotated : rotated.reverse();
    const pass = new Map<string, number[]>(defs.map((d) => [d.id, []]));
    for (const s of order) pass.get(s.def.id)?.push(await time(s));
    const means = new Map([...pass].map(([id, xs]) => [id, mean(xs)]));
    for (const [id, m] of means) perSubject.get(id)?.push(m);
    for (const pair of pairs) ratios.get(pairId(pair))?.push((means.get(pair[0]) as number) / (means.get(pair[1]) as number));
  }
  const unexpected: Record<string, number> = {};
  for (const s of sides) unexpected[s.def.id] = (unexpected[s.def.id] ?? 0) + s.cursor.wrong;
  if (!cell.over) {
    const wrong = Object.entries(unexpected).filter(([, n]) => n > 0);
    if (wrong.length > 0) throw new Error(`section I ${cell.id}: unexpected refusals: ${wrong.map(([id, n]) => `${id} ${n}`).join(', ')}`);
  }
  await Promise.all(sides.map((s) => s.close()));
  if (cell.set === 'otel') metrics.disable();
  return {
    cell: cell.id,
    ns: Object.fromEntries([...perSubject].map(([id, xs]) => [id, median(xs)])),
    ratios: Object.fromEntries(ratios),
    unexpected,
  };
}
