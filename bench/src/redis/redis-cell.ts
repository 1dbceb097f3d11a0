/**
 * @module Child entry of one section B subject: one Node process, one ioredis connection. It empties the
 * database, touches every key once (256 in flight), reads Redis memory per key, counts the round trips
 * of one decision, then runs timed rounds at each number of requests in flight over the keys in a
 * shuffled order, recording every decision's latency.
 */
import { Redis } from 'ioredis';
import { childMain } from '../child-process.js';
import { makeKeys, shuffledOrder } from '../keys.js';
import { median, quantile } from '../stats.js';
import { type RedisSubject, redisSubject } from './redis-subjects.js';

export interface RedisCellInput {
  readonly subject: string;
  readonly port: number;
  readonly keys: number;
  readonly inFlight: readonly number[];
  readonly runs: number;
  readonly runMs: number;
  /** Keys sampled with MEMORY USAGE. */
  readonly sample: number;
}

export interface RedisConcurrencyResult {
  readonly inFlight: number;
  /** Median over runs. */
  readonly opsPerSec: number;
  readonly runOpsPerSec: readonly number[];
  /** Medians over runs of each run's latency percentiles, ms. */
  readonly p50Ms: number;
  readonly p99Ms: number;
}

export interface RedisCellResult {
  readonly concurrency: readonly RedisConcurrencyResult[];
  /** Mean `MEMORY USAGE` over sampled Redis keys. */
  readonly memoryUsageBytes: number;
  /** `used_memory / dbsize` after every key was touched once. */
  readonly usedMemoryPerRedisKey: number;
  /**
   * The keys alone: at the end of the cell, (used_memory - used_memory after FLUSHALL SYNC) / dbsize.
   * What the flush frees is the keys' own memory (names, values, dict and expiry entries); what it
   * leaves is everything else (scripts, client buffers, allocator state), which varies by tens of KB
   * from one run to the next and between subjects, about 0.5 B per key at 100,000 keys.
   */
  readonly usedMemoryPerRedisKeyNet: number;
  /** (used_memory after - used_memory of the empty database) / client keys. */
  readonly usedMemoryDeltaPerClientKey: number;
  readonly redisKeysPerClientKey: number;
  /** Commands the client sent per decision (one decision = one round trip when this is 1). */
  readonly roundTripsPerDecision: number;
  readonly unexpected: number;
}

export type RedisCellAnswer = ({ readonly available: true } & RedisCellResult) | { readonly available: false; readonly reason: string };

function infoField(info: string, field: string): number {
  const m = new RegExp(`^${field}:(\\d+)`, 'm').exec(info);
  if (m === null) throw new Error(`INFO has no ${field}`);
  return Number(m[1]);
}

/** Runs `inFlight` loops that each await one decision after the other until `ms` have passed. */
async function timedRound(
  subject: RedisSubject,
  keys: readonly string[],
  order: Uint32Array,
  start: number,
  inFlight: number,
  ms: number,
  latencies: Float64Array,
): Promise<{ ops: number; seconds: number; next: number; unexpected: number; recorded: number }> {
  let pos = start;
  let ops = 0;
  let unexpected = 0;
  let recorded = 0;
  const n = keys.length;
  const t0 = performance.now();
  const end = t0 + ms;
  const worker = async (): Promise<void> => {
    for (;;) {
      const before = performance.now();
      if (before >= end) return;
      const key = keys[order[pos] as number] as string;
      pos = pos + 1 === n ? 0 : pos + 1;
      const r = await subject.decide(key);
      const after = performance.now();
      if (!subject.allowed(r)) unexpected++;
      if (recorded < latencies.length) latencies[recorded++] = after - before;
      ops++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return { ops, seconds: (performance.now() - t0) / 1000, next: pos, unexpected, recorded };
}

export async function runRedisCell(input: RedisCellInput): Promise<RedisCellAnswer> {
  // autoResendUnfulfilledCommands: false, as RedisStore asks (WRN_RL_CLIENT_RESENDS); it changes nothing
  // while the connection stays up, so every subject still runs on an otherwise default client.
  const client = new Redis({ port: input.port, host: '127.0.0.1', lazyConnect: true, autoResendUnfulfilledCommands: false });
  await client.connect();
  try {
    await client.flushall();
    const emptyMemory = infoField(await client.info('memory'), 'used_memory');
    const loaded = await redisSubject(input.subject).create(client);
    if (!loaded.ok) return { available: false, reason: loaded.reason };
    const subject = loaded.value;
    const keys = makeKeys(input.keys);
    const order = shuffledOrder(input.keys);

    // Touch every key once, 256 in flight.
    let next = 0;
    let unexpected = 0;
    await Promise.all(
      Array.from({ length: 256 }, async () => {
        while (next < keys.length) {
          const r = await subject.decide(keys[next++] as string);
          if (!subject.allowed(r)) unexpected++;
        }
      }),
    );

    const usedMemory = infoField(await client.info('memory'), 'used_memory');
    const dbsize = await client.dbsize();
    let memorySum = 0;
    let memoryCount = 0;
    for (let i = 0; i < input.sample; i++) {
      const key = await client.randomkey();
      if (key === null) break;
      const bytes = await client.memory('USAGE', key);
      if (typeof bytes === 'number') {
        memorySum += bytes;
        memoryCount++;
      }
    }

    // Round trips: count what the client sends during sequential decisions on warm keys.
    const probe = 200;
    let sent = 0;
    const send = client.sendCommand.bind(client);
    client.sendCommand = ((...args: Parameters<typeof send>) => {
      sent++;
      return send(...args);
    }) as typeof client.sendCommand;
    for (let i = 0; i < probe; i++) {
      // A decision answered without the store sends nothing: it counts as unexpected, and the count is short.
      if (!subject.allowed(await subject.decide(keys[i % keys.length] as string))) unexpected++;
    }
    client.sendCommand = send;

    const latencies = new Float64Array(4_000_000);
    let pos = 0;
    const concurrency: RedisConcurrencyResult[] = [];
    for (const inFlight of input.inFlight) {
      const runOps: number[] = [];
      const p50s: number[] = [];
      const p99s: number[] = [];
      for (let r = 0; r < input.runs; r++) {
        const round = await timedRound(subject, keys, order, pos, inFlight, input.runMs, latencies);
        pos = round.next;
        unexpected += round.unexpected;
        runOps.push(round.ops / round.seconds);
        const lat = latencies.subarray(0, round.recorded);
        p50s.push(quantile(lat, 0.5));
        p99s.push(quantile(lat, 0.99));
      }
      concurrency.push({ inFlight, opsPerSec: median(runOps), runOpsPerSec: runOps, p50Ms: median(p50s), p99Ms: median(p99s) });
    }
    const endMemory = infoField(await client.info('memory'), 'used_memory');
    const endDbsize = await client.dbsize();
    await client.flushall('SYNC');
    const flushedMemory = infoField(await client.info('memory'), 'used_memory');
    const keysAlone = endDbsize === 0 ? Number.NaN : (endMemory - flushedMemory) / endDbsize;
    await subject.close();
    return {
      available: true,
      concurrency,
      memoryUsageBytes: memoryCount === 0 ? Number.NaN : memorySum / memoryCount,
      usedMemoryPerRedisKey: dbsize === 0 ? Number.NaN : usedMemory / dbsize,
      usedMemoryPerRedisKeyNet: keysAlone,
      usedMemoryDeltaPerClientKey: (usedMemory - emptyMemory) / input.keys,
      redisKeysPerClientKey: dbsize / input.keys,
      roundTripsPerDecision: sent / probe,
      unexpected,
    };
  } finally {
    client.disconnect();
  }
}

childMain(runRedisCell);
