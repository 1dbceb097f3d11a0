/**
 * @module Section H: hot keys on one Redis (issue 27). Cells run P processes at once against the
 * benchmark's own redis-server, one emptied database per cell: one hot key through the round trip and
 * through `localBatch` (a limit no process reaches, then a limit the run passes), and 100k cold keys
 * cycled with and without `localBatch`. Reports decisions per second over all processes, p50 and p99
 * per decision in process, store calls per decision, and for the limited cell the admitted total
 * against the policy's allowance (never above) and the units held elsewhere when the run stopped.
 *
 * The cold pair is one cell, not two (cold-pair-cell.ts): its target is a ratio near 1, which two cells
 * run one after the other cannot measure on a shared machine (the second runs on a different machine
 * state: other load, a Redis that just freed the first's keys; rounds of the same code measured 0.80 to
 * 1.03). In the pair, each of the P processes holds both subjects, each on its own connection and key
 * names, and they take turns in short slices (A B B A, on one schedule across processes, the first
 * subject alternating per round, after untimed slices that warm both up), so both meet the same load,
 * Redis and JIT. Both subjects as the round trip (an A/A run) read 0.98 to 1.06 per round on this
 * 2-core machine at load 9: that spread is the method's noise there, a quiet machine's is smaller. The target is the median
 * over rounds of each round's ratio; the CPU time per decision each subject cost its processes is
 * reported beside it, a figure the machine's other load moves less than throughput.
 */
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { BENCH_DIR, runChild } from '../child-process.js';
import { startRedisServer } from '../redis/redis-server.js';
import { median } from '../stats.js';
import type { ColdPairCellInput, ColdPairCellResult, ColdPairSubjectResult } from './cold-pair-cell.js';
import type { HotKeyCellInput, HotKeyCellResult } from './hot-key-cell.js';

export interface HotKeySectionOptions {
  readonly processes: number;
  readonly inFlight: number;
  readonly runMs: number;
  readonly coldKeys: number;
  /** Rounds over all cells; medians are reported. */
  readonly rounds: number;
  /** How long before the shared start the processes are launched, ms (time to load). */
  readonly leadMs: number;
  /** Cells to run (ids without `H/`); all when undefined. */
  readonly cells?: readonly string[];
  readonly only: RegExp | undefined;
  readonly profile: boolean;
  readonly log: (line: string) => void;
}

export interface HotKeyRow {
  readonly cell: string;
  readonly label: string;
  readonly batched: boolean;
  readonly keys: number;
  readonly limit: number;
  readonly decisionsPerSec: number;
  /** Decisions over all processes (of the round closest to its allowance, after merging). */
  readonly decisions: number;
  readonly p50Us: number;
  readonly p99Us: number;
  readonly callsPerDecision: number;
  readonly admitted: number;
  /** The policy's allowance over the windows the run touched. */
  readonly allowance: number;
  /** Units charged in Redis but not admitted by the end: held by the processes, or stranded. */
  readonly heldAtEnd: number;
  /** CPU time per decision in process, µs (the cold pair only; NaN for the other cells). */
  readonly cpuUsPerDecision: number;
}

/** One round of the cold pair: the batched subject's figures over the round trip's, from the same run. */
export interface ColdPairRound {
  readonly batchedFirst: boolean;
  /** Decisions/s with `localBatch` / without. */
  readonly throughput: number;
  /** CPU per decision with `localBatch` / without. */
  readonly cpu: number;
}

export interface HotKeyResult {
  readonly processes: number;
  readonly inFlight: number;
  readonly runMs: number;
  readonly rows: readonly HotKeyRow[];
  /** The cold pair's rounds (empty when it did not run). */
  readonly coldRounds: readonly ColdPairRound[];
  readonly error: string | undefined;
}

const CELL = join(BENCH_DIR, 'src', 'hotkeys', 'hot-key-cell.ts');
const PAIR_CELL = join(BENCH_DIR, 'src', 'hotkeys', 'cold-pair-cell.ts');
/** The cold pair's slice: long next to a check's latency (ms at 32 in flight), short next to load bursts. */
export const SLICE_MS = 150;
/** A window longer than any run: the limited cell's allowance is its limit times the windows the run touched. */
const WINDOW_MS = 3_600_000;

interface CellSpec {
  readonly cell: string;
  readonly label: string;
  readonly batched: boolean;
  readonly cold: boolean;
  /** Limit per process-run: undefined for one no process reaches. */
  readonly limited: boolean;
}

const CELLS: readonly CellSpec[] = [
  { cell: 'hot-roundtrip', label: '1 hot key, round trip', batched: false, cold: false, limited: false },
  { cell: 'hot-batched', label: '1 hot key, localBatch', batched: true, cold: false, limited: false },
  { cell: 'hot-batched-limited', label: '1 hot key, localBatch, limit passed', batched: true, cold: false, limited: true },
  { cell: 'cold-roundtrip', label: 'cold keys cycled, round trip', batched: false, cold: true, limited: false },
  { cell: 'cold-batched', label: 'cold keys cycled, localBatch', batched: true, cold: true, limited: false },
];

async function runCell(spec: CellSpec, port: number, o: HotKeySectionOptions, limit: number): Promise<HotKeyRow> {
  const admin = new Redis({ port, host: '127.0.0.1' });
  await admin.flushall();
  admin.disconnect();
  const startAt = Date.now() + o.leadMs;
  const input: HotKeyCellInput = {
    port,
    batched: spec.batched,
    keys: spec.cold ? o.coldKeys : 1,
    limit,
    windowMs: WINDOW_MS,
    inFlight: o.inFlight,
    startAt,
    runMs: o.runMs,
  };
  const results = await Promise.all(
    Array.from({ length: o.processes }, (_, i) =>
      runChild<HotKeyCellInput, HotKeyCellResult>(CELL, input, { profile: o.profile, label: `H_${spec.cell}_${i}`, timeoutMs: 120_000 }),
    ),
  );
  const end = Date.now();
  const windows = Math.floor(end / WINDOW_MS) - Math.floor(startAt / WINDOW_MS) + 1;
  const decisions = results.reduce((s, r) => s + r.decisions, 0);
  const seconds = Math.max(...results.map((r) => r.seconds));
  return {
    cell: spec.cell,
    label: spec.label,
    batched: spec.batched,
    keys: input.keys,
    limit,
    decisionsPerSec: decisions / seconds,
    decisions,
    p50Us: median(results.map((r) => r.p50Us)),
    p99Us: median(results.map((r) => r.p99Us)),
    callsPerDecision: results.reduce((s, r) => s + r.storeCalls, 0) / decisions,
    admitted: results.reduce((s, r) => s + r.admitted, 0),
    allowance: spec.cold ? Number.NaN : limit * windows,
    heldAtEnd: results.reduce((s, r) => s + r.heldAtEnd, 0) / 1000,
    cpuUsPerDecision: Number.NaN,
  };
}

/** Both cold cells from one run of the pair: each subject runs `runMs` in slices, the first one alternating per round. */
async function runColdPair(port: number, o: HotKeySectionOptions, batchedFirst: boolean): Promise<[HotKeyRow, HotKeyRow]> {
  const admin = new Redis({ port, host: '127.0.0.1' });
  await admin.flushall();
  admin.disconnect();
  const input: ColdPairCellInput = {
    port,
    keys: o.coldKeys,
    inFlight: o.inFlight,
    startAt: Date.now() + o.leadMs,
    runMs: o.runMs,
    sliceMs: SLICE_MS,
    batchedFirst,
  };
  const results = await Promise.all(
    Array.from({ length: o.processes }, (_, i) =>
      runChild<ColdPairCellInput, ColdPairCellResult>(PAIR_CELL, input, {
        profile: o.profile,
        label: `H_cold-pair_${i}`,
        timeoutMs: 120_000,
      }),
    ),
  );
  const row = (spec: CellSpec, side: (r: ColdPairCellResult) => ColdPairSubjectResult): HotKeyRow => {
    const sides = results.map(side);
    const decisions = sides.reduce((s, r) => s + r.decisions, 0);
    return {
      cell: spec.cell,
      label: spec.label,
      batched: spec.batched,
      keys: o.coldKeys,
      limit: 1e9,
      decisionsPerSec: decisions / Math.max(...sides.map((r) => r.seconds)),
      decisions,
      p50Us: median(sides.map((r) => r.p50Us)),
      p99Us: median(sides.map((r) => r.p99Us)),
      callsPerDecision: sides.reduce((s, r) => s + r.storeCalls, 0) / decisions,
      admitted: sides.reduce((s, r) => s + r.admitted, 0),
      allowance: Number.NaN,
      heldAtEnd: 0,
      cpuUsPerDecision: sides.reduce((s, r) => s + r.cpuUs, 0) / decisions,
    };
  };
  const [rt, b] = [CELLS[3] as CellSpec, CELLS[4] as CellSpec];
  return [row(rt, (r) => r.roundTrip), row(b, (r) => r.batched)];
}

/** Medians of one cell's rounds (the admitted and allowance of the worst round: the one closest to its allowance). */
function mergeRows(rows: readonly HotKeyRow[]): HotKeyRow {
  const first = rows[0] as HotKeyRow;
  const worst = rows.reduce((w, r) => (r.admitted - r.allowance > w.admitted - w.allowance ? r : w), first);
  return {
    ...first,
    decisionsPerSec: median(rows.map((r) => r.decisionsPerSec)),
    p50Us: median(rows.map((r) => r.p50Us)),
    p99Us: median(rows.map((r) => r.p99Us)),
    callsPerDecision: median(rows.map((r) => r.callsPerDecision)),
    cpuUsPerDecision: median(rows.map((r) => r.cpuUsPerDecision)),
    admitted: worst.admitted,
    allowance: worst.allowance,
    decisions: worst.decisions,
    heldAtEnd: Math.max(...rows.map((r) => r.heldAtEnd)),
  };
}

export async function runHotKeySection(o: HotKeySectionOptions): Promise<HotKeyResult> {
  const cells = CELLS.filter((c) => (o.cells === undefined || o.cells.includes(c.cell)) && (o.only?.test(`H/${c.cell}`) ?? true));
  const base = { processes: o.processes, inFlight: o.inFlight, runMs: o.runMs };
  if (cells.length === 0) return { ...base, rows: [], coldRounds: [], error: undefined };
  let server: Awaited<ReturnType<typeof startRedisServer>>;
  try {
    server = await startRedisServer();
  } catch (error) {
    o.log(`H: ${(error as Error).message}`);
    return { ...base, rows: [], coldRounds: [], error: (error as Error).message };
  }
  const done = new Map<string, HotKeyRow[]>();
  const coldRounds: ColdPairRound[] = [];
  const keep = (row: HotKeyRow, round: number): void => {
    done.set(row.cell, [...(done.get(row.cell) ?? []), row]);
    const cpu = Number.isNaN(row.cpuUsPerDecision) ? '' : `, ${row.cpuUsPerDecision.toFixed(1)} µs CPU/decision`;
    o.log(
      `H/${row.cell} (round ${round}/${o.rounds}): ${Math.round(row.decisionsPerSec)} decisions/s, p50 ${row.p50Us.toFixed(1)} µs, ` +
        `${row.callsPerDecision.toFixed(4)} calls/decision${cpu}, admitted ${row.admitted}${Number.isNaN(row.allowance) ? '' : ` of ${row.allowance} allowed`}`,
    );
  };
  let error: string | undefined;
  try {
    // The limited cell's limit: about half of what the batched processes decide in one run.
    let limitedAt = 100_000;
    for (let round = 1; round <= o.rounds; round++) {
      for (const spec of cells.filter((c) => !c.cold)) {
        try {
          const row = await runCell(spec, server.port, o, spec.limited ? limitedAt : 1e9);
          if (spec.cell === 'hot-batched') limitedAt = Math.max(1_000, Math.round((row.decisionsPerSec * o.runMs) / 2000));
          keep(row, round);
        } catch (e) {
          error = `H/${spec.cell}: ${(e as Error).message}`;
          o.log(`${error}`);
        }
      }
      if (!cells.some((c) => c.cold)) continue;
      // Odd rounds give the round trip the first slice, even rounds the batched store.
      const batchedFirst = round % 2 === 0;
      try {
        const [rt, b] = await runColdPair(server.port, o, batchedFirst);
        keep(rt, round);
        keep(b, round);
        const pair = { batchedFirst, throughput: b.decisionsPerSec / rt.decisionsPerSec, cpu: b.cpuUsPerDecision / rt.cpuUsPerDecision };
        coldRounds.push(pair);
        o.log(
          `H/cold pair (round ${round}/${o.rounds}): localBatch ${pair.throughput.toFixed(3)}x decisions/s, ${pair.cpu.toFixed(3)}x CPU/decision`,
        );
      } catch (e) {
        error = `H/cold pair: ${(e as Error).message}`;
        o.log(`${error}`);
      }
    }
  } finally {
    await server.stop();
  }
  // The cold pair runs whole: both its rows, even when a filter named one.
  const shown = CELLS.filter((c) => cells.includes(c) || (c.cold && cells.some((x) => x.cold)));
  return { ...base, rows: shown.flatMap((c) => (done.has(c.cell) ? [mergeRows(done.get(c.cell) ?? [])] : [])), coldRounds, error };
}
