/**
 * @module Child entry of one section H process: one ioredis connection, one limiter on a RedisStore
 * with or without `localBatch`, deciding one hot key (or cycling many cold keys) with a number of checks
 * in flight, from a start time shared with the other processes of the cell until its end. It reports
 * decisions, admissions, the store calls the batcher made, the latency of each decision in this
 * process, and the units it still held when it stopped.
 */
import { createLimiter, RedisStore } from '@tollgate/core';
import { Redis } from 'ioredis';
import { childMain } from '../child-process.js';
import { makeKeys } from '../keys.js';
import { quantile } from '../stats.js';

export interface HotKeyCellInput {
  readonly port: number;
  readonly batched: boolean;
  /** 1: the hot key; more: cold keys cycled. */
  readonly keys: number;
  readonly limit: number;
  readonly windowMs: number;
  readonly inFlight: number;
  /** Epoch ms at which every process of the cell starts, and how long it runs. */
  readonly startAt: number;
  readonly runMs: number;
}

export interface HotKeyCellResult {
  readonly decisions: number;
  readonly admitted: number;
  readonly seconds: number;
  readonly p50Us: number;
  readonly p99Us: number;
  /** Commands sent to Redis during the timed run (decisions, batches, give-backs). */
  readonly storeCalls: number;
  /** Milli-units held in this process when it stopped (what no other process could admit then). */
  readonly heldAtEnd: number;
}

async function runCell(input: HotKeyCellInput): Promise<HotKeyCellResult> {
  const client = new Redis({ port: input.port, host: '127.0.0.1', autoResendUnfulfilledCommands: false });
  await new Promise<void>((resolve) => client.once('ready', () => resolve()));
  const store = new RedisStore({ client, localBatch: input.batched, validate: false });
  const limiter = createLimiter({
    name: 'bench-hot',
    policies: { name: 'api', algorithm: 'fixed-window', limit: input.limit, windowMs: input.windowMs },
    store,
    storeTimeoutMs: 5_000,
  });
  const keys = input.keys === 1 ? ['hot'] : makeKeys(input.keys);
  const latencies = new Float64Array(8_000_000);
  let recorded = 0;
  let decisions = 0;
  let admitted = 0;
  let next = 0;
  // Every command the client sends: what the decisions cost Redis (scripts, batches, give-backs).
  let sent = 0;
  const send = client.sendCommand.bind(client);
  client.sendCommand = ((...args: Parameters<typeof send>) => {
    sent++;
    return send(...args);
  }) as typeof client.sendCommand;
  await new Promise((r) => setTimeout(r, Math.max(0, input.startAt - Date.now())));
  const sentBefore = sent;
  const t0 = performance.now();
  const end = t0 + input.runMs;
  const worker = async (): Promise<void> => {
    for (;;) {
      const before = performance.now();
      if (before >= end) return;
      const key = keys[next] as string;
      next = next + 1 === keys.length ? 0 : next + 1;
      const d = await limiter.check(key);
      const after = performance.now();
      if (d.allowed) admitted++;
      decisions++;
      if (recorded < latencies.length) latencies[recorded++] = after - before;
    }
  };
  await Promise.all(Array.from({ length: input.inFlight }, worker));
  const seconds = (performance.now() - t0) / 1000;
  const storeCalls = sent - sentBefore;
  const heldAtEnd = store.localBatchHeld;
  const lat = latencies.subarray(0, recorded);
  await limiter.close();
  client.disconnect();
  return {
    decisions,
    admitted,
    seconds,
    p50Us: quantile(lat, 0.5) * 1000,
    p99Us: quantile(lat, 0.99) * 1000,
    storeCalls,
    heldAtEnd,
  };
}

childMain(runCell);
