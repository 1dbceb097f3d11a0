/**
 * @module Child entry of one process of section H's cold-key pair: two limiters in this process, each on
 * its own ioredis connection and its own RedisStore (one without `localBatch`, one with), cycling many
 * cold keys with a number of checks in flight. The two take turns in slices of `sliceMs` on a schedule
 * every process of the cell shares (from the shared start time): A B B A, A B B A, ..., so each subject
 * gets the same time, the same machine, the same Redis and the same JIT, and a burst of load from
 * elsewhere lands on both. A check counts for the subject whose slice it started in. Reports, per
 * subject, decisions, admissions, the latency of each decision, the commands sent, and the CPU time
 * this process spent in that subject's slices. Untimed slices (same pattern) warm both up first.
 */
import { createLimiter, RedisStore } from '@tollgate/core';
import { Redis } from 'ioredis';
import { childMain } from '../child-process.js';
import { makeKeys } from '../keys.js';
import { quantile } from '../stats.js';

export interface ColdPairCellInput {
  readonly port: number;
  /** Cold keys cycled by each subject (each under its own limiter name, so neither finds the other's state). */
  readonly keys: number;
  readonly inFlight: number;
  /** Epoch ms at which every process of the cell starts, and how long each subject runs (the cell runs twice that). */
  readonly startAt: number;
  readonly runMs: number;
  readonly sliceMs: number;
  /** Whether the batched store takes the first slice (the A of A B B A); the section alternates it per round. */
  readonly batchedFirst: boolean;
}

export interface ColdPairSubjectResult {
  readonly decisions: number;
  readonly admitted: number;
  /** Time in this subject's slices, s. */
  readonly seconds: number;
  readonly p50Us: number;
  readonly p99Us: number;
  readonly storeCalls: number;
  /** CPU time (user + system) of this process in this subject's slices, µs. */
  readonly cpuUs: number;
}

export interface ColdPairCellResult {
  readonly roundTrip: ColdPairSubjectResult;
  readonly batched: ColdPairSubjectResult;
}

/** Untimed slices before the timed ones, at least this long in all, ms. */
const WARM_MS = 1_200;

/** A B B A: slice `i`'s subject is A (0) or B (1). */
const PATTERN = [0, 1, 1, 0] as const;

interface Subject {
  readonly client: Redis;
  readonly store: RedisStore;
  readonly limiter: ReturnType<typeof createLimiter>;
  readonly latencies: Float64Array;
  recorded: number;
  decisions: number;
  admitted: number;
  next: number;
  sent: number;
  slices: number;
  cpuUs: number;
}

async function subject(port: number, batched: boolean): Promise<Subject> {
  const client = new Redis({ port, host: '127.0.0.1', autoResendUnfulfilledCommands: false });
  await new Promise<void>((resolve) => client.once('ready', () => resolve()));
  const store = new RedisStore({ client, localBatch: batched, validate: false });
  const limiter = createLimiter({
    name: batched ? 'bench-cold-batched' : 'bench-cold-rt',
    policies: { name: 'api', algorithm: 'fixed-window', limit: 1e9, windowMs: 3_600_000 },
    store,
    storeTimeoutMs: 5_000,
  });
  const s: Subject = {
    client,
    store,
    limiter,
    latencies: new Float64Array(2_000_000),
    recorded: 0,
    decisions: 0,
    admitted: 0,
    next: 0,
    sent: 0,
    slices: 0,
    cpuUs: 0,
  };
  // Every command the client sends: what the decisions cost Redis.
  const send = client.sendCommand.bind(client);
  client.sendCommand = ((...args: Parameters<typeof send>) => {
    s.sent++;
    return send(...args);
  }) as typeof client.sendCommand;
  return s;
}

function summary(s: Subject, sliceMs: number): ColdPairSubjectResult {
  const lat = s.latencies.subarray(0, s.recorded);
  return {
    decisions: s.decisions,
    admitted: s.admitted,
    seconds: (s.slices * sliceMs) / 1000,
    p50Us: quantile(lat, 0.5) * 1000,
    p99Us: quantile(lat, 0.99) * 1000,
    storeCalls: s.sent,
    cpuUs: s.cpuUs,
  };
}

async function runCell(input: ColdPairCellInput): Promise<ColdPairCellResult> {
  const roundTrip = await subject(input.port, false);
  const batched = await subject(input.port, true);
  const [a, b] = input.batchedFirst ? [batched, roundTrip] : [roundTrip, batched];
  const order = PATTERN.map((i) => (i === 0 ? a : b));
  const keys = makeKeys(input.keys);
  // Whole A B B A groups, so both subjects get the same number of slices; before them, untimed groups
  // warm both up (the first checks of a process run before the JIT has compiled them: timed, they would
  // make whichever subject goes first look slower).
  const slices = 4 * Math.max(1, Math.round((2 * input.runMs) / (4 * input.sliceMs)));
  const warm = 4 * Math.max(1, Math.ceil(WARM_MS / (4 * input.sliceMs)));
  await new Promise((r) => setTimeout(r, Math.max(0, input.startAt - Date.now())));
  const t0 = performance.now();
  const end = t0 + (warm + slices) * input.sliceMs;
  // CPU time is read when the first check of a new slice starts, and charged to the slice that ended.
  let slice = 0;
  let cpu = process.cpuUsage();
  const turn = (now: number): number => {
    const i = Math.floor((now - t0) / input.sliceMs);
    if (i !== slice) {
      const spent = process.cpuUsage(cpu);
      cpu = process.cpuUsage();
      if (slice >= warm) (order[slice % 4] as Subject).cpuUs += spent.user + spent.system;
      // The first timed slice: what the subjects sent until now was warm-up.
      if (slice < warm && i >= warm) for (const s of [roundTrip, batched]) s.sent = 0;
      slice = i;
    }
    return i;
  };
  const worker = async (): Promise<void> => {
    for (;;) {
      const before = performance.now();
      if (before >= end) return;
      const i = turn(before);
      const s = order[i % 4] as Subject;
      const key = keys[s.next] as string;
      s.next = s.next + 1 === keys.length ? 0 : s.next + 1;
      const d = await s.limiter.check(key);
      if (i < warm) continue;
      const after = performance.now();
      if (d.allowed) s.admitted++;
      s.decisions++;
      if (s.recorded < s.latencies.length) s.latencies[s.recorded++] = after - before;
    }
  };
  await Promise.all(Array.from({ length: input.inFlight }, worker));
  // The last slice's CPU, up to the last reply.
  const spent = process.cpuUsage(cpu);
  (order[slice % 4] as Subject).cpuUs += spent.user + spent.system;
  for (let i = 0; i < slices; i++) (order[i % 4] as Subject).slices++;
  const result = { roundTrip: summary(roundTrip, input.sliceMs), batched: summary(batched, input.sliceMs) };
  for (const s of [roundTrip, batched]) {
    await s.limiter.close();
    s.client.disconnect();
  }
  return result;
}

childMain(runCell);
