/**
 * @module Section B: starts the benchmark's own redis-server, then runs each Redis subject in its own
 * child process (one Node process, one ioredis connection), one after the other on an emptied database.
 */
import { join } from 'node:path';
import { BENCH_DIR, runChild } from '../child-process.js';
import type { RedisRow } from '../results.js';
import type { RedisCellAnswer, RedisCellInput } from './redis-cell.js';
import { startRedisServer } from './redis-server.js';
import { REDIS_SUBJECTS } from './redis-subjects.js';

export interface RedisSectionOptions {
  readonly keys: number;
  readonly inFlight: readonly number[];
  readonly runs: number;
  readonly runMs: number;
  /** Subject ids to run; all when undefined. */
  readonly subjects: readonly string[] | undefined;
  readonly only: RegExp | undefined;
  readonly profile: boolean;
  readonly log: (line: string) => void;
}

const CELL = join(BENCH_DIR, 'src', 'redis', 'redis-cell.ts');

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
  const rows: RedisRow[] = [];
  try {
    for (const s of subjects) {
      const id = `B/${s.id}`;
      const input: RedisCellInput = {
        subject: s.id,
        port: server.port,
        keys: o.keys,
        inFlight: o.inFlight,
        runs: o.runs,
        runMs: o.runMs,
        sample: 200,
      };
      const base = { subject: s.id, label: s.label, kind: s.kind };
      try {
        const answer = await runChild<RedisCellInput, RedisCellAnswer>(CELL, input, {
          profile: o.profile,
          label: id.replaceAll('/', '_'),
          timeoutMs: 300_000,
        });
        if (!answer.available) {
          rows.push({ ...base, outcome: { status: 'not available', reason: answer.reason } });
          o.log(`${id}: not available (${answer.reason})`);
          continue;
        }
        const { available: _, ...result } = answer;
        rows.push({ ...base, outcome: { status: 'ok', ...result } });
        o.log(`${id}: ${result.concurrency.map((c) => `${c.inFlight} in flight ${Math.round(c.opsPerSec)} ops/s`).join(', ')}`);
      } catch (error) {
        rows.push({ ...base, outcome: { status: 'failed', reason: (error as Error).message.split('\n')[0] ?? 'unknown error' } });
        o.log(`${id}: FAILED ${(error as Error).message}`);
      }
    }
  } finally {
    await server.stop();
  }
  return { rows, error: undefined };
}
