/**
 * @module Section B: starts the benchmark's own redis-server, then runs each Redis subject in its own
 * child process (one Node process, one ioredis connection), one after the other on an emptied database.
 */
import { join } from 'node:path';
import { BENCH_DIR, runChild } from '../child-process.js';
import type { Missing, RedisRow } from '../results.js';
import { median } from '../stats.js';
import type { RedisCellAnswer, RedisCellInput, RedisCellResult, RedisConcurrencyResult } from './redis-cell.js';
import { startRedisServer } from './redis-server.js';
import { REDIS_SUBJECTS } from './redis-subjects.js';

export interface RedisSectionOptions {
  readonly keys: number;
  readonly inFlight: readonly number[];
  /** Times every subject runs, each time in a new process on an emptied database. */
  readonly rounds: number;
  /** Timed runs per concurrency within one round. */
  readonly runs: number;
  readonly runMs: number;
  /** Subject ids to run; all when undefined. */
  readonly subjects: readonly string[] | undefined;
  readonly only: RegExp | undefined;
  readonly profile: boolean;
  readonly log: (line: string) => void;
}

const CELL = join(BENCH_DIR, 'src', 'redis', 'redis-cell.ts');

/** One subject's rounds merged: medians over rounds, every round's ops/s kept for the spread. */
export function mergeRounds(rounds: readonly RedisCellResult[]): RedisCellResult {
  const first = rounds[0];
  if (first === undefined) throw new Error('mergeRounds: no rounds');
  return {
    concurrency: first.concurrency.map((c, i) => {
      const all = rounds.map((r) => r.concurrency[i] as RedisConcurrencyResult);
      const runOps = all.flatMap((x) => x.runOpsPerSec);
      return {
        inFlight: c.inFlight,
        opsPerSec: median(runOps),
        runOpsPerSec: runOps,
        p50Ms: median(all.map((x) => x.p50Ms)),
        p99Ms: median(all.map((x) => x.p99Ms)),
      };
    }),
    memoryUsageBytes: median(rounds.map((r) => r.memoryUsageBytes)),
    usedMemoryPerRedisKey: median(rounds.map((r) => r.usedMemoryPerRedisKey)),
    usedMemoryPerRedisKeyNet: median(rounds.map((r) => r.usedMemoryPerRedisKeyNet)),
    usedMemoryDeltaPerClientKey: median(rounds.map((r) => r.usedMemoryDeltaPerClientKey)),
    redisKeysPerClientKey: median(rounds.map((r) => r.redisKeysPerClientKey)),
    roundTripsPerDecision: Math.max(...rounds.map((r) => r.roundTripsPerDecision)),
    unexpected: rounds.reduce((sum, r) => sum + r.unexpected, 0),
  };
}

/**
 * Runs every subject once per round (round 1 over all subjects, then round 2, ...; each round in an order
 * rotated by one), each time in a new process on an emptied database, so that load from elsewhere on
 * the machine spreads over the subjects.
 */
export async function runRedisSection(o: RedisSectionOptions): Promise<{ rows: RedisRow[]; error: string | undefined }> {
  const subjects = REDIS_SUBJECTS.filter(
    (s) => (o.subjects === undefined || o.subjects.includes(s.id)) && (o.only?.test(`B/${s.id}`) ?? true),
  );
  if (subjects.length === 0) return { rows: [], error: undefined };
  let server: Awaited<ReturnType<typeof startRedisServer>>;
  try {
    server = await startRedisServer();
  } catch (error) {
    const reason = (error as Error).message;
    o.log(`B: ${reason}`);
    return {
      rows: subjects.map((s) => ({ subject: s.id, label: s.label, kind: s.kind, outcome: { status: 'not available', reason } })),
      error: reason,
    };
  }
  const results = new Map<string, RedisCellResult[]>();
  const missing = new Map<string, Missing>();
  try {
    for (let round = 1; round <= o.rounds; round++) {
      // Each round starts one subject further along, so no subject always runs first, or always right
      // after the same one: what a cell leaves behind (the server freeing the last cell's keys, a
      // process exiting) falls on every subject in turn.
      const shift = (round - 1) % subjects.length;
      for (const s of [...subjects.slice(shift), ...subjects.slice(0, shift)]) {
        const id = `B/${s.id}`;
        if (missing.has(s.id)) continue;
        const input: RedisCellInput = {
          subject: s.id,
          port: server.port,
          keys: o.keys,
          inFlight: o.inFlight,
          runs: o.runs,
          runMs: o.runMs,
          sample: 200,
        };
        try {
          const answer = await runChild<RedisCellInput, RedisCellAnswer>(CELL, input, {
            profile: o.profile,
            label: `${id.replaceAll('/', '_')}_round${round}`,
            timeoutMs: 300_000,
          });
          if (!answer.available) {
            missing.set(s.id, { status: 'not available', reason: answer.reason });
            o.log(`${id}: not available (${answer.reason})`);
            continue;
          }
          const { available: _, ...result } = answer;
          results.set(s.id, [...(results.get(s.id) ?? []), result]);
          o.log(
            `${id} (round ${round}/${o.rounds}): ${result.concurrency.map((c) => `${c.inFlight} in flight ${Math.round(c.opsPerSec)} ops/s`).join(', ')}`,
          );
        } catch (error) {
          missing.set(s.id, { status: 'failed', reason: (error as Error).message.split('\n')[0] ?? 'unknown error' });
          o.log(`${id}: FAILED ${(error as Error).message}`);
        }
      }
    }
  } finally {
    await server.stop();
  }
  const rows: RedisRow[] = subjects.map((s) => {
    const base = { subject: s.id, label: s.label, kind: s.kind };
    const m = missing.get(s.id);
    if (m !== undefined) return { ...base, outcome: m };
    return { ...base, outcome: { status: 'ok', ...mergeRounds(results.get(s.id) ?? []) } };
  });
  return { rows, error: undefined };
}
