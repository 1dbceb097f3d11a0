/**
 * @module Renders one run's results as bench/RESULTS.md (every figure, the method, the targets) and as
 * the short summary `pnpm bench` prints at the end.
 */

import type { Comparison } from '../../examples/concurrency/src/scenarios.js';
import { renderHotKeySection } from './hotkeys/hot-key-report.js';
import { INTERLEAVED_CELLS } from './interleaved/interleaved.js';
import { OVERHEAD_SUBJECTS, SUBJECT_LABELS } from './observability/observability-section.js';
import { WARM_UP_PASSES } from './observability/overhead.js';
import type { BenchResults, DecisionRow, HttpGroup, HttpVariantResult, Missing, RedisRow } from './results.js';
import { range } from './stats.js';
import { checkTargets, type TargetCheck } from './targets.js';

const int = (v: number): string => (Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : 'n/a');
const ns = (v: number): string => (Number.isFinite(v) ? (v < 100 ? v.toFixed(1) : int(v)) : 'n/a');
const ms = (v: number): string => (Number.isFinite(v) ? v.toFixed(3) : 'n/a');
const ratio = (v: number): string => (Number.isFinite(v) ? v.toFixed(3) : 'n/a');

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

function missing(m: Missing): string {
  return m.status === 'not available' ? 'not available' : 'failed';
}

function verdict(t: TargetCheck): string {
  if (t.met === undefined) return 'not measured';
  if (t.reference === true) return t.met ? 'reference: reaches it' : 'reference: below it';
  return t.met ? 'met' : 'not met';
}

/** One variant's median ratio to bare in a group, or why there is none. */
function groupRatio(g: HttpGroup, variant: HttpVariantResult['variant'], toWire = false): string {
  if (g.error !== undefined) return 'failed';
  const v = g.variants.find((y) => y.variant === variant);
  if (v === undefined) return '-';
  if (v.missing !== undefined) return missing(v.missing);
  return ratio(toWire ? v.ratioToWire : v.ratio);
}

/** framework, mode, tollgate / bare, wire / bare, tollgate / wire, peer / bare. */
function httpRatioRows(groups: readonly HttpGroup[]): string[][] {
  return groups.map((g) => [
    g.framework,
    g.mode,
    groupRatio(g, 'tollgate'),
    groupRatio(g, 'wire'),
    groupRatio(g, 'tollgate', true),
    groupRatio(g, 'peer'),
  ]);
}

const HTTP_RATIO_HEADER = ['framework', 'mode', 'tollgate / bare', 'wire / bare', 'tollgate / wire', 'peer / bare'];

/** Why the wire variant is there, in two sentences (the report and the README say the same). */
export const WIRE_EXPLAINED =
  'On this machine the load generator shares the CPU with the server, so every extra response byte and header costs throughput by itself, whoever sends it. ' +
  'The wire variant is the bare server answering with exactly the status, rate-limit header fields and body tollgate sends in that mode, set statically: ' +
  "wire / bare is what sending the draft-11 fields and a problem+json 429 costs, tollgate / wire is what tollgate's own logic costs, and the issue's targets stay on tollgate / bare.";

/** Rows of one metric per subject, columns per scenario. */
function decisionMatrix(
  rows: readonly DecisionRow[],
  scenarios: BenchResults['decisionScenarios'],
  value: (r: Extract<DecisionRow['outcome'], { status: 'ok' }>) => string,
): string {
  const subjects: DecisionRow[] = [];
  for (const r of rows) if (!subjects.some((s) => s.subject === r.subject)) subjects.push(r);
  return table(
    ['subject', ...scenarios.map((s) => s.label)],
    subjects.map((s) => [
      s.label,
      ...scenarios.map((sc) => {
        const r = rows.find((x) => x.subject === s.subject && x.scenario === sc.id);
        if (r === undefined) return '-';
        return r.outcome.status === 'ok' ? value(r.outcome) : missing(r.outcome);
      }),
    ]),
  );
}

function decisionSection(results: BenchResults, rows: readonly DecisionRow[]): string {
  const scenarios = results.decisionScenarios;
  const heapScenarios = scenarios.filter((s) =>
    rows.some((r) => r.scenario === s.id && r.outcome.status === 'ok' && r.outcome.heapBytesPerKey !== undefined),
  );
  const problems = rows.filter((r) => r.outcome.status !== 'ok' || r.outcome.unexpected > 0);
  return [
    '## A. Decisions in process',
    '',
    'Each cell runs in its own Node process (`--expose-gc`). Every subject goes through the same loop: ' +
      "`const r = await subject.decide(key)`, where `decide` returns the limiter's own promise " +
      '(tollgate: `limiter.check(key)` on a MemoryStore with `maxKeys` eviction on, sized to the cell; ' +
      'express-rate-limit: `MemoryStore.increment`; @fastify/rate-limit: `LocalStore.incr` wrapped in a Promise as the plugin does, LRU sized to the cell; ' +
      'koa-ratelimit: a memory-driver `Limiter` built per request, as the middleware does, with a `db` Map, then `get()`; ' +
      'rate-limiter-flexible: `RateLimiterMemory.consume` in try/await/catch; the floor: `async decide(key) { m.set(key, (m.get(key) ?? 0) + 1) }`). ' +
      'Keys (`ip:10.x.y.z`) are generated before anything is measured and visited in one fixed shuffled order. ' +
      'A cell populates its keys (one decision per key), warms up, then runs mitata several times; each run is the median of at least 12 samples of 1000 decisions. ' +
      'Every cell runs once per pass (all cells in pass 1, then all in pass 2), each time in a new process; the figure is the median over all runs of all passes. Allow cells use a limit no key reaches (1e9 per 60 s; 7.5e7 for sliding-window, the most its exact arithmetic allows) ' +
      'and count any rejection as unexpected; over-the-limit cells use a limit of 1 per 60 s, so every timed decision is a rejection ' +
      'but for the one admission each 60 s the cell spans may bring (a fixed window rolling over, a bucket refilled), which is not counted as unexpected.',
    '',
    '### ns per decision (median of runs, lower is better)',
    '',
    decisionMatrix(rows, scenarios, (o) => ns(o.nsPerDecision)),
    '',
    '### Decisions per second (1e9 / ns per decision)',
    '',
    decisionMatrix(rows, scenarios, (o) => int(1e9 / o.nsPerDecision)),
    '',
    '### Heap bytes per key',
    '',
    'Measured while populating the cell: `gc()` twice, read `heapUsed + external` (typed-array backing stores live outside the V8 heap, so `external` counts them), ' +
      'one decision for each of N pre-generated keys, `gc()` twice, read again; (after - before) / N. The key strings exist before the first reading, so they are not counted; ' +
      'what a limiter copies or builds per key (prefixed key strings, entry objects, timers, table slack) is.',
    '',
    heapScenarios.length === 0
      ? 'No cell with 1000 keys or more ran.'
      : decisionMatrix(rows, heapScenarios, (o) => (o.heapBytesPerKey === undefined ? '-' : int(o.heapBytesPerKey))),
    '',
    '### Spread: ns per decision of each run (min - max)',
    '',
    decisionMatrix(rows, scenarios, (o) => {
      const { min, max } = range(o.runNs);
      return `${ns(min)} - ${ns(max)}`;
    }),
    '',
    problems.length === 0
      ? 'Every cell ran, and every decision had the expected verdict.'
      : problems
          .map((r) =>
            r.outcome.status === 'ok'
              ? `- ${r.label}, ${r.scenario}: ${int(r.outcome.unexpected)} of ${int(r.outcome.decisions)} decisions had an unexpected verdict.`
              : `- ${r.label}, ${r.scenario}: ${r.outcome.status}: ${r.outcome.reason}`,
          )
          .join('\n'),
  ].join('\n');
}

function redisSection(redis: NonNullable<BenchResults['redis']>): string {
  const rows: string[][] = [];
  const inFlights = [
    ...new Set(redis.rows.flatMap((r) => (r.outcome.status === 'ok' ? r.outcome.concurrency.map((c) => c.inFlight) : []))),
  ];
  for (const r of redis.rows) {
    if (r.outcome.status !== 'ok') {
      rows.push([r.label, '-', missing(r.outcome), '', '', '', '', '', '', '', '']);
      continue;
    }
    for (const c of r.outcome.concurrency) {
      const { min, max } = range(c.runOpsPerSec);
      rows.push([
        r.label,
        String(c.inFlight),
        int(c.opsPerSec),
        `${int(min)} - ${int(max)}`,
        ms(c.p50Ms),
        ms(c.p99Ms),
        r.outcome.roundTripsPerDecision.toFixed(2),
        int(r.outcome.memoryUsageBytes),
        r.outcome.usedMemoryPerRedisKey.toFixed(1),
        r.outcome.usedMemoryPerRedisKeyNet.toFixed(1),
        r.outcome.redisKeysPerClientKey.toFixed(2),
      ]);
    }
  }
  const notes = redis.rows
    .filter((r: RedisRow) => r.outcome.status !== 'ok' || r.outcome.unexpected > 0)
    .map((r) =>
      r.outcome.status === 'ok'
        ? `- ${r.label}: ${int(r.outcome.unexpected)} unexpected verdicts (refused, or answered without the store).`
        : `- ${r.label}: ${r.outcome.status}: ${r.outcome.reason}`,
    );
  return [
    '## B. Redis',
    '',
    `The harness starts its own \`redis-server\` on a free loopback port (no persistence). Each subject runs in its own Node process with one ioredis connection (default options but \`autoResendUnfulfilledCommands: false\`, which RedisStore asks for and which changes nothing while the connection stays up) ` +
      `on an emptied database: it touches each of ${int(redis.keys)} keys once (256 in flight), reads Redis memory, counts the commands the client sends for one decision ` +
      `(1 = one round trip), then runs timed runs at ${inFlights.join(' and ')} requests in flight over the keys in a shuffled order. Every subject does this once per round ` +
      '(all subjects in round 1, then all in round 2, ..., each round in an order rotated by one so that no subject always runs first or after the same one), each time in a new process on an emptied database. ops/s is the median over all runs; ' +
      "p50/p99 and the memory figures are medians over rounds. Policies: 1000 per day (never reached; it keeps every algorithm's key alive for minutes, " +
      "so memory is measured on live keys). `MEMORY USAGE` is the mean over 200 random keys; `used_memory / dbsize` includes the server's own baseline, as the issue defines it; the target compares it in whole bytes, because the part of used_memory that is not the keys' own (script cache, client buffers, allocator state) moves it by about half a byte per key between runs, and gives the keys alone beside it: (used_memory − used_memory after `FLUSHALL SYNC`) / dbsize, taken at the end of each cell. The p50 and throughput targets compare the one-policy cell with the peers, which limit one policy per call; the two-policy cells' lines are references.",
    '',
    table(
      [
        'subject',
        'in flight',
        'ops/s',
        'rounds min - max',
        'p50 ms',
        'p99 ms',
        'round trips',
        'MEMORY USAGE B',
        'used_memory / dbsize B',
        'keys alone B',
        'Redis keys per client key',
      ],
      rows,
    ),
    '',
    ...(redis.error === undefined ? [] : [`Section B did not run: ${redis.error}`, '']),
    notes.length === 0 ? 'Every decision was admitted, as expected.' : notes.join('\n'),
  ].join('\n');
}

function httpSection(http: NonNullable<BenchResults['http']>): string {
  const rows: string[][] = [];
  const notes: string[] = [];
  for (const g of http.groups as readonly HttpGroup[]) {
    if (g.error !== undefined) {
      rows.push([g.framework, g.mode, 'failed', '', '', '', '', '']);
      notes.push(`- ${g.framework} ${g.mode}: ${g.error}`);
      continue;
    }
    for (const v of g.variants) {
      if (v.missing !== undefined) {
        rows.push([g.framework, g.mode, v.label, missing(v.missing), '', '', '', '']);
        notes.push(`- ${g.framework} ${g.mode}, ${v.label}: ${v.missing.status}: ${v.missing.reason}`);
        continue;
      }
      rows.push([
        g.framework,
        g.mode,
        v.label,
        int(v.rps),
        v.variant === 'bare' ? '1' : ratio(v.ratio),
        v.variant === 'bare' ? '' : v.ratios.map(ratio).join(', '),
        v.ratiosToWire.length === 0 ? '' : `${ratio(v.ratioToWire)} (${v.ratiosToWire.map(ratio).join(', ')})`,
        `${int(v.unexpected)} / ${int(v.requests)}`,
      ]);
    }
  }
  return [
    '## C. HTTP',
    '',
    `Hello-world route (\`GET /\` -> \`hello world\`), one server process per variant, load from ${http.tool} in its own process ` +
      `(one thread, 50 connections), ${http.rounds} rounds of ${http.roundSeconds} s alternated bare, wire, tollgate, peer after a warm-up of each. ` +
      "The ratio is the variant's requests/s over bare's in the same round (tollgate's also over wire's); the tables give the median of the ratios and every round's ratio. " +
      'Allow mode: a limit never reached (1e9 per hour). Block mode: a limit of 1 per hour, so every timed request is answered 429 by the limiter (bare keeps serving 200). ' +
      'Each limiter keeps its defaults otherwise (key by client IP, its own headers and 429 body). "unexpected" counts responses outside the mode\'s status and socket errors.',
    '',
    `${WIRE_EXPLAINED} The wire server copies a real tollgate response when it starts (a tollgate app of its own, stopped before the wire app listens), ` +
      "sets the fields in the same place tollgate's adapter does (an Express or Koa middleware, a Fastify onRequest hook), and the run checks that it sends the same status, " +
      'header lines (digits aside: `RateLimit` and `Retry-After` count down), Content-Length and body as the tollgate server before timing it.',
    '',
    table(HTTP_RATIO_HEADER, httpRatioRows(http.groups)),
    '',
    table(
      [
        'framework',
        'mode',
        'variant',
        'requests/s (median)',
        'ratio to bare (median)',
        'ratio per round',
        'ratio to wire (median, per round)',
        'unexpected / requests',
      ],
      rows,
    ),
    '',
    notes.length === 0 ? 'Every variant ran.' : notes.join('\n'),
  ].join('\n');
}

export function renderResults(results: BenchResults, targets: readonly TargetCheck[] = checkTargets(results)): string {
  const m = results.machine;
  const parts: string[] = [
    '# tollgate benchmarks',
    '',
    `Written by \`pnpm bench${results.mode === 'full' ? '' : ` --${results.mode}`}\` on ${m.date} at commit ${m.commit}. Do not edit by hand: run it again. ` +
      'Ratios between subjects measured in the same run matter more than absolute figures.',
    '',
    '## Machine',
    '',
    table(
      ['CPU', 'cores', 'memory', 'OS', 'Node', 'redis-server', 'load generator', 'load average (1 min) at start / end'],
      [
        [
          m.cpu,
          String(m.cores),
          `${m.memoryGiB} GiB`,
          m.os,
          m.node,
          m.redis ?? 'not installed',
          m.loadGenerator,
          `${m.loadAverage.start.toFixed(2)} / ${m.loadAverage.end.toFixed(2)}`,
        ],
      ],
    ),
    '',
    `The load average counts every process on the machine, this run's included (a cell keeps about one core busy, ` +
      `an HTTP round about ${m.cores >= 2 ? 'two' : 'all'}); well above that, other work shared the CPU and the spread of the figures below grows.`,
    '',
    '## Versions',
    '',
    table(
      ['package', 'version'],
      Object.entries(results.versions).map(([k, v]) => [k, v]),
    ),
    '',
    `Settings: ${results.settings.join('; ')}.`,
    '',
    '## Targets (issues 5, 11 and 12)',
    '',
    table(
      ['section', 'target', 'figure', 'verdict'],
      targets.map((t) => [t.section, t.target, t.figure, verdict(t)]),
    ),
    '',
  ];
  if (results.decisions !== undefined) parts.push(decisionSection(results, results.decisions), '');
  if (results.redis !== undefined) parts.push(redisSection(results.redis), '');
  if (results.http !== undefined) parts.push(httpSection(results.http), '');
  if (results.concurrency !== undefined) parts.push(concurrencySection(results.concurrency), '');
  if (results.hotKeys !== undefined) parts.push(renderHotKeySection(results.hotKeys, table), '');
  if (results.interleaved !== undefined) parts.push(interleavedSection(results.interleaved), '');
  if (results.observability !== undefined) parts.push(observabilitySection(results.observability), '');
  if (results.replay !== undefined) parts.push(replaySection(results.replay), '');
  return `${parts.join('\n').trimEnd()}\n`;
}

const msOf = (v: number): string => `${int(v)} ms`;

function sheddingRows(runs: readonly Comparison[]): string[][] {
  return runs.flatMap((c, i) => [
    [
      String(i + 1),
      'adaptive shedding',
      int(c.protectedRun.byStatus['200'] ?? 0),
      int(c.protectedRun.byStatus['503'] ?? 0),
      msOf(c.protectedRun.ok.p50),
      msOf(c.protectedRun.ok.p99),
      msOf(c.protectedRun.refusedP99),
      int(c.protectedRun.goodput),
      String(c.finalLimit),
    ],
    [
      String(i + 1),
      'unprotected twin',
      int(c.unprotectedRun.byStatus['200'] ?? 0),
      int(c.unprotectedRun.byStatus['503'] ?? 0),
      msOf(c.unprotectedRun.ok.p50),
      msOf(c.unprotectedRun.ok.p99),
      '',
      int(c.unprotectedRun.goodput),
      '',
    ],
  ]);
}

function concurrencySection(d: NonNullable<BenchResults['concurrency']>): string {
  const burst = d.burst;
  return [
    '## D. Concurrency and load shedding (issue 11)',
    '',
    "examples/concurrency's scenarios (`compareShedding`, `burstExports`) in one child process: an Express app on loopback and an open-loop load generator. " +
      '`GET /work` queries a pool of 4 connections x 20 ms, 200 requests/s of capacity, and slows down past it (queries wait for a connection). ' +
      `Offered ${int(d.rps)} requests/s for ${(d.durationMs / 1000).toFixed(1)} s whatever the answers (a new request every ${(1000 / d.rps).toFixed(1)} ms on average), ` +
      'once to the app with `shed: { adaptive: { initialLimit: 10, minLimit: 2, maxLimit: 200, windowMs: 100, minSamples: 5 } }` and once to its unprotected twin ' +
      '(same app, no `shed`), then again for each run. Latency is from sending to the last byte; goodput is 200s per second.',
    '',
    d.error !== undefined
      ? `Section D failed: ${d.error}`
      : table(
          ['run', 'app', '200s', '503s', 'p50 of 200s', 'p99 of 200s', 'p99 of 503s', 'goodput /s', 'final limit'],
          sheddingRows(d.runs),
        ),
    '',
    'How to read it: the unprotected twin queues everything past the pool, so every admitted request waits for all before it and its latency grows with the ' +
      "length of the overload; the shedder keeps admitted latency near the pool's own at the limit it finds and answers the rest 503 with `Retry-After`. " +
      'Server and load generator share one process and, on a shared machine, the CPU with other work: a 503 costs the server microseconds, so a slow 503 is time ' +
      "spent waiting for a core, and the shedder's event-loop delay cut (100 ms) then admits fewer requests than the pool could serve. " +
      "The bound the targets use is the one examples/concurrency/src/scenarios.test.ts asserts for that reason: admitted p99 under 1 s and under a quarter of the twin's.",
    '',
    burst === undefined
      ? ''
      : `Per-key concurrency, same example: alice starts six exports at once (300 ms each, \`limit: 2\`, \`queue: { size: 2, timeoutMs: 2_000 }\`): ` +
        `statuses ${burst.alice.join(' ')}, at most ${burst.peak} running at any instant; bob's export, sent meanwhile, gets ${burst.bob}. ` +
        'test/shedding/concurrency-adapters.test.ts proves the invariant on Express, Fastify and Koa over real HTTP (random durations, handler errors, client aborts, queue timeouts).',
  ].join('\n');
}

function interleavedRows(r: NonNullable<BenchResults['interleaved']>, set: 'main' | 'extras' | 'otel'): string[][] {
  const cells = INTERLEAVED_CELLS.filter((c) => c.set === set);
  return r.rows
    .filter((x) => cells.some((c) => c.id === x.cell))
    .map((x) => [
      x.cellLabel,
      `${r.labels[x.numerator] ?? x.numerator} / ${r.labels[x.denominator] ?? x.denominator}`,
      ns(x.numeratorNs),
      ns(x.denominatorNs),
      ratio(x.ratio),
      `${ratio(x.spread.min)} to ${ratio(x.spread.max)}`,
      x.processRatios.map(ratio).join(', '),
    ]);
}

function interleavedSection(r: NonNullable<BenchResults['interleaved']>): string {
  const header = [
    'cell',
    'subject / reference',
    'subject ns',
    'reference ns',
    'ratio (median of processes)',
    'spread (processes)',
    'per process',
  ];
  const main = interleavedRows(r, 'main');
  const features = [...interleavedRows(r, 'extras'), ...interleavedRows(r, 'otel')];
  const refills = Object.entries(r.unexpected)
    .map(
      ([cell, by]) =>
        `${cell}: ${Object.entries(by)
          .map(([id, n]) => `${r.labels[id] ?? id} ${int(n)}`)
          .join(', ')}`,
    )
    .join('; ');
  return [
    '## I. Interleaved in one process (issue 24)',
    '',
    "Every subject loaded side by side in one process, as a user would run it: this checkout's awaited `limiter.check(key)` on a MemoryStore (gcra, the default, and fixed-window, " +
      "express-rate-limit's algorithm; each copy bundled with esbuild into one ES module, as the published package is built), tollgate v0.1 (`packages/core` at " +
      `\`${r.v01Commit}\`, the last v0.1 commit, exported with \`git archive\` into bench/.results and bundled the same way) and express-rate-limit's \`MemoryStore.increment(key)\` ` +
      '(verdict `totalHits <= limit`, as its middleware tests it). Allow cells use a limit never reached (1e9 per 60 s); 100k keys are cycled in order, each batch going on where the last stopped; ' +
      'over the limit is 1 key, limit 1 per 60 s. ' +
      `Each subject runs on ${r.copies} copies of its build, each a folder of its own with its own limiter and timing loop (identical code loaded twice runs up to 10 % apart from where V8 places it; see section O). ` +
      `A pass runs one batch of ${int(r.batch)} awaited decisions on every copy, in an order rotated by one each pass and reversed every other pass, timed in CPU time of the process; ` +
      `${r.passes} passes after ${r.warmUpPasses} warm-up passes. A pass's ratio is one subject's mean over its copies against the other's; a process's figure is the median of its passes' ratios; ` +
      `each cell runs in ${r.processes} processes (cells interleaved), and the ratio below is the median of those, with their range as the spread. ns are CPU ns per decision (median over processes), for scale only: read the ratios.`,
    '',
    ...(r.v01Error === undefined ? [] : [`${r.v01Error}: its rows are missing.`, '']),
    main.length === 0 ? 'No process of the comparison cells produced figures.' : table(header, main),
    '',
    ...(refills === '' ? [] : [`Admissions in the over-the-limit cells (refills, summed over processes): ${refills}.`, '']),
    '### What each feature adds',
    '',
    'The same method, a plain limiter (gcra, one policy, no plan table, no exporter, hot keys off) against the same limiter with one thing turned on, each on copies of its own: ' +
      "a plan table of two plans with the second asked for (`check(key, { plan: 'pro' })`, the option object made once); `hotKeys: true`; a concurrency policy beside the rate policy " +
      "(`{ algorithm: 'concurrency', limit: 1e6 }`, each admitted decision's lease released at once); a prom-client registry (`registerPrometheusMetrics`). " +
      'The OpenTelemetry row runs in processes of its own (the MeterProvider is process-wide, every instrument collected each second into an in-memory exporter), against copies of the core that cannot load `@opentelemetry/api` ' +
      '(as section O does), so its reference sees no provider.',
    '',
    features.length === 0 ? 'No process of the feature cells produced figures.' : table(header, features),
    '',
    r.errors.length === 0 ? 'Every process ran.' : r.errors.map((e) => `- ${e}`).join('\n'),
  ].join('\n');
}

function observabilitySection(o: NonNullable<BenchResults['observability']>): string {
  const rows = OVERHEAD_SUBJECTS.flatMap((subject) =>
    o.rows
      .filter((r) => r.subject === subject)
      .map((r) => [
        SUBJECT_LABELS[subject],
        r.label,
        ns(r.baselineNs),
        ns(r.currentNs),
        ratio(r.ratio),
        `${ratio(r.interval.low)} to ${ratio(r.interval.high)}`,
        r.processRatios.map(ratio).join(', '),
      ]),
  );
  return [
    '## O. Observability overhead (issue 12)',
    '',
    "Section A's loop (`await limiter.check(key)`, gcra on a MemoryStore sized to the case) on a copy of this checkout's core and on another build of the same source, " +
      'both written alike and loaded in one process (bench/src/observability/baseline.ts writes the builds on every run, so two builds differ by what the row is about and not also by where they live): ' +
      '**no exporter vs hooks cut**: no MeterProvider and no registry (hot keys off, the default), against the core whose two per-decision hooks of observability are cut out ' +
      '(`DecisionObserver.observe` returns its decision, `StoreTimer.apply` calls the store): the issue\'s "within 2 % without a provider"; its row "hot keys on" gives both builds `hotKeys: true`, ' +
      'what opting in to hot keys costs a rejection, for reference (the cut build never feeds its sketches); ' +
      '**OpenTelemetry SDK vs no provider**: `@opentelemetry/sdk-metrics` as the global MeterProvider, every tollgate instrument registered and collected every second into an in-memory exporter, ' +
      'against the unchanged core that cannot load `@opentelemetry/api` and so never sees the provider: the "within 10 % of the same run without"; ' +
      '**prom-client registry vs no provider**: `registerPrometheusMetrics({ registry })` on the measured copy only, for reference. ' +
      'The control measures the core against its providerless copy with no exporter, the same code twice: its distance from 1.000 is what the method cannot resolve on this machine at this load. ' +
      `Each process loads ${o.copies} copies of each build, every copy a folder of its own (identical code loaded twice in one process runs up to 10 % apart, copy against copy, from where V8 places each copy and not from what it compiles: the mean over copies divides that luck by the square root of their number). ` +
      `Batches of ${int(o.batch)} decisions of every copy alternate, in alternating order, ${o.passes} passes per case after ${WARM_UP_PASSES} warm-up passes, each copy with a timing loop of its own, ` +
      "timed in CPU time of the process (a busy machine inflates both sides of a pass alike); a pass's ratio is the current copies' mean over the baseline copies' mean. The exporter is process-wide, so each row set runs in processes of its own, " +
      `and each case in a process of its own as in section A (a case measured after others would carry their JIT history), ${o.processes} per case and set, interleaved; the ratio is the median of the pass ratios of all its processes; its 90 % interval comes from resampling the processes ` +
      "(a bootstrap: one process's passes share its copies' luck, so processes are what varies), and the last column gives each process's median. " +
      'Section A cannot load two builds of the core side by side, so its own issue 12 rows compare the `tollgate-gcra-otel` and `tollgate-gcra-prometheus` cells with `tollgate-gcra` across processes.',
    '',
    o.rows.length === 0
      ? 'No process of section O produced figures.'
      : table(
          ['exporter', 'case', 'baseline ns', 'current ns', 'current / baseline (median of passes)', '90 % interval', 'per process'],
          rows,
        ),
    '',
    o.errors.length === 0 ? 'Every process ran.' : o.errors.map((e) => `- ${e}`).join('\n'),
  ].join('\n');
}

function replaySection(replay: NonNullable<BenchResults['replay']>): string {
  return [
    '## R. Replay',
    '',
    '`tollgate replay` over a synthetic nginx log (gzip) with three candidates (gcra, sliding-window, leaky-bucket), one process, ' +
      'as `pnpm --filter @tollgate/cli bench` runs it; the issue 13 target is 500,000 lines per second.',
    '',
    replay.error === undefined ? ['```text', ...replay.lines, '```'].join('\n') : `Failed: ${replay.error}`,
  ].join('\n');
}

/** The console summary: headline figures per section and the targets' verdicts. */
export function renderSummary(results: BenchResults, targets: readonly TargetCheck[] = checkTargets(results)): string {
  const out: string[] = [];
  if (results.decisions !== undefined) {
    out.push(
      'A. ns per decision (median)',
      decisionMatrix(results.decisions, results.decisionScenarios, (o) => ns(o.nsPerDecision)),
      '',
    );
  }
  if (results.redis !== undefined) {
    out.push(
      'B. Redis ops/s',
      table(
        [
          'subject',
          ...((
            results.redis.rows.find((r) => r.outcome.status === 'ok')?.outcome as { concurrency: { inFlight: number }[] } | undefined
          )?.concurrency.map((c) => `${c.inFlight} in flight`) ?? []),
        ],
        results.redis.rows.map((r) => [
          r.label,
          ...(r.outcome.status === 'ok' ? r.outcome.concurrency.map((c) => int(c.opsPerSec)) : [missing(r.outcome)]),
        ]),
      ),
      '',
    );
  }
  if (results.http !== undefined) {
    out.push('C. HTTP throughput ratios (medians of per-round ratios)', table(HTTP_RATIO_HEADER, httpRatioRows(results.http.groups)), '');
  }
  if (results.concurrency !== undefined) {
    const d = results.concurrency;
    out.push(
      'D. Adaptive shedding against the unprotected twin',
      d.error ?? table(['run', 'app', '200s', '503s', 'p50', 'p99', 'p99 of 503s', 'goodput /s', 'final limit'], sheddingRows(d.runs)),
      '',
    );
  }
  if (results.observability !== undefined) {
    out.push(
      'O. Observability overhead (current / baseline, median of passes)',
      table(
        ['exporter', 'case', 'ratio'],
        results.observability.rows.map((r) => [r.subject, r.label, ratio(r.ratio)]),
      ),
      '',
    );
  }
  if (results.interleaved !== undefined) {
    out.push(
      'I. Interleaved in one process (ratio, median of processes)',
      table(
        ['cell', 'pair', 'ratio'],
        results.interleaved.rows.map((r) => [r.cell, r.pair, ratio(r.ratio)]),
      ),
      '',
    );
  }
  if (results.replay !== undefined) out.push('R. Replay', results.replay.error ?? results.replay.lines.at(-1) ?? '', '');
  const issue = targets.filter((t) => t.reference !== true);
  const met = issue.filter((t) => t.met === true).length;
  const notMet = issue.filter((t) => t.met === false).length;
  out.push(`Targets: ${met} met, ${notMet} not met, ${issue.length - met - notMet} not measured.`);
  return out.join('\n');
}
