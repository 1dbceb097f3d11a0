/**
 * @module Section H: hot keys on one Redis (issue 27). Cells run P processes at once against the
 * benchmark's own redis-server, one emptied database per cell: one hot key through the round trip and
 * through `localBatch` (a limit no process reaches, then a limit the run passes), and 100k cold keys
 * cycled with and without `localBatch`. Reports decisions per second over all processes, p50 and p99
 * per decision in process, store calls per decision, and for the limited cell the admitted total
 * against the policy's allowance (never above) and the units held elsewhere when the run stopped.
 */
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { BENCH_DIR, runChild } from '../child-process.js';
import { startRedisServer } from '../redis/redis-server.js';
import { median } from '../stats.js';
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
}

export interface HotKeyResult {
  readonly processes: number;
  readonly inFlight: number;
  readonly runMs: number;
  readonly rows: readonly HotKeyRow[];
  readonly error: string | undefined;
}

const CELL = join(BENCH_DIR, 'src', 'hotkeys', 'hot-key-cell.ts');
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
  };
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
    admitted: worst.admitted,
    allowance: worst.allowance,
    decisions: worst.decisions,
    heldAtEnd: Math.max(...rows.map((r) => r.heldAtEnd)),
  };
}

export async function runHotKeySection(o: HotKeySectionOptions): Promise<HotKeyResult> {
  const cells = CELLS.filter((c) => (o.cells === undefined || o.cells.includes(c.cell)) && (o.only?.test(`H/${c.cell}`) ?? true));
  const base = { processes: o.processes, inFlight: o.inFlight, runMs: o.runMs };
  if (cells.length === 0) return { ...base, rows: [], error: undefined };
  let server: Awaited<ReturnType<typeof startRedisServer>>;
  try {
    server = await startRedisServer();
  } catch (error) {
    o.log(`H: ${(error as Error).message}`);
    return { ...base, rows: [], error: (error as Error).message };
  }
  const done = new Map<string, HotKeyRow[]>();
  let error: string | undefined;
  try {
    // The limited cell's limit: about half of what the batched processes decide in one run.
    let limitedAt = 100_000;
    for (let round = 1; round <= o.rounds; round++) {
      // Even rounds run the cold pair in the other order, so neither always runs on the later, busier machine.
      const order = round % 2 === 0 ? [...cells.filter((c) => !c.cold), ...cells.filter((c) => c.cold).reverse()] : cells;
      for (const spec of order) {
        const limit = spec.limited ? limitedAt : 1e9;
        try {
          const row = await runCell(spec, server.port, o, limit);
          if (spec.cell === 'hot-batched') limitedAt = Math.max(1_000, Math.round((row.decisionsPerSec * o.runMs) / 2000));
          done.set(spec.cell, [...(done.get(spec.cell) ?? []), row]);
          o.log(
            `H/${spec.cell} (round ${round}/${o.rounds}): ${Math.round(row.decisionsPerSec)} decisions/s, p50 ${row.p50Us.toFixed(1)} µs, ` +
              `${row.callsPerDecision.toFixed(4)} calls/decision, admitted ${row.admitted}${spec.cold ? '' : ` of ${row.allowance} allowed`}`,
          );
        } catch (e) {
          error = `H/${spec.cell}: ${(e as Error).message}`;
          o.log(`${error}`);
        }
      }
    }
  } finally {
    await server.stop();
  }
  return { ...base, rows: cells.flatMap((c) => (done.has(c.cell) ? [mergeRows(done.get(c.cell) ?? [])] : [])), error };
}
