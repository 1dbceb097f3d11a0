/**
 * @module Recovery after a fault, per client (ioredis, node-redis, iovalkey), each with the options the
 * README recommends (reconnect every 50 ms, no resend after a reconnect, no offline queue): redis-server stopped for 1 s
 * and started again (a kill), paused for 1 s (SIGSTOP, then SIGCONT: the connection stays open and the
 * replies come late), and restarted at once on the same port (a failover-like restart: a new server,
 * with no scripts loaded). Under load on four keys that Redis has already exhausted, for each: how long
 * the limiter stayed degraded after the fault ended, how many decisions were degraded, what the failure
 * mode admitted over the limit (nothing: it continues from Redis' last answers), the longest wait, and
 * the log: one outage writes one line. Redis keeps an append-only file, so a restarted server still
 * holds the exhausted keys, as a promoted replica would.
 */
import { createLimiter, type Decision, RedisStore, type RedisStoreClient } from '@tollgate/core';
import { Redis } from 'ioredis';
import { Redis as Valkey } from 'iovalkey';
import { createClient } from 'redis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { exhausted, line, sleep, startLoad, summarize } from './fault-load.js';
import { describeRedis, HOST, type RedisServer, randomPrefix, startRedis, waitFor } from './harness.js';

const LIMIT = 50;
const KEYS = ['k0', 'k1', 'k2', 'k3'];
/** Measured: 0 to 70 ms on a quiet machine, up to ~300 ms on a loaded one (the README gives both); the bound has a margin. */
const RECOVERY_BOUND_MS = 500;

type Kind = 'ioredis' | 'node-redis' | 'iovalkey';

/** A client of `kind` with the recommended options, and how to close it. */
async function connect(kind: Kind, port: number): Promise<{ client: RedisStoreClient; close(): Promise<void> }> {
  if (kind === 'node-redis') {
    const c = createClient({ socket: { host: HOST, port, reconnectStrategy: () => 50 } });
    c.on('error', () => undefined);
    await c.connect();
    return { client: c, close: async () => c.destroy() };
  }
  // maxLoadingRetryTime: a client that reconnects while the restarted server still loads its data
  // checks again after this long, not after the server's loading estimate (at least a second).
  const options = {
    host: HOST,
    port,
    retryStrategy: () => 50,
    maxLoadingRetryTime: 50,
    autoResendUnfulfilledCommands: false,
    enableOfflineQueue: false,
  };
  const c = kind === 'ioredis' ? new Redis(options) : new Valkey(options);
  c.on('error', () => undefined);
  await waitFor(`${kind} ready`, () => c.status === 'ready');
  return { client: c, close: async () => c.disconnect() };
}

/** The longest wait of a check at a kill: storeTimeoutMs (50) and two watchdog periods, with a margin for load. */
const IN_FLIGHT_BOUND_MS = 400;

describeRedis('checks in flight when redis-server is killed, per client', () => {
  let server: RedisServer;

  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.close();
  });

  // ioredis and iovalkey with autoResendUnfulfilledCommands: false keep the calls they had sent without
  // ever failing them, and refuse each new call at once: those refusals are no reply from the node, so
  // the sent calls are answered when the node has been silent for storeTimeoutMs (main before: the
  // refusals reset the silence, and the sent calls waited 0.5 to 1.7 s under load).
  for (const kind of ['ioredis', 'node-redis', 'iovalkey'] as const) {
    it(`${kind}: no check waits ${IN_FLIGHT_BOUND_MS} ms after a SIGKILL, those in flight included, while new checks are refused`, async () => {
      const { client, close } = await connect(kind, server.port);
      const limiter = createLimiter({
        policies: { algorithm: 'fixed-window', limit: 1e9, windowMs: 3_600_000 },
        store: new RedisStore({ client, prefix: randomPrefix() }),
        onStoreError: 'closed',
        logger: { warn: () => undefined, error: () => undefined },
      });
      const load = startLoad((key): Promise<Decision> => limiter.check(key), { concurrency: 32, keys: KEYS, pauseMs: 0 });
      try {
        await sleep(300);
        const killedAt = performance.now();
        server.signal('SIGKILL');
        await sleep(1_000);
        const samples = await load.stop();
        // In flight at the kill, or sent before the client saw the connection close.
        const after = samples.filter((s) => s.at + s.waitMs >= killedAt);
        const longest = Math.round(after.reduce((m, s) => Math.max(m, s.waitMs), 0));
        const degraded = after.filter((s) => s.degraded).length;
        console.info(`${kind}: ${after.length} checks since the kill, ${degraded} degraded, the longest waited ${longest} ms`);
        expect(degraded).toBeGreaterThan(0);
        expect(longest).toBeLessThan(IN_FLIGHT_BOUND_MS);
      } finally {
        await load.stop();
        await limiter.close();
        await close();
        await server.stop();
        await server.start();
      }
    }, 30_000);
  }
});

describeRedis('recovery after a kill, a pause and a restart, per client', () => {
  let server: RedisServer;

  beforeAll(async () => {
    // With an append-only file (flushed at shutdown; a pause loses nothing), as a replica would hold the
    // keys: a restarted server keeps them exhausted, so everything admitted after the fault began is the
    // limiter's doing.
    server = await startRedis(['--appendonly', 'yes', '--appendfsync', 'everysec']);
  });
  afterAll(async () => {
    await server?.close();
  });

  const faults: Record<string, { inject(): Promise<void>; end(): Promise<void> }> = {
    'kill (1 s down)': {
      inject: async () => {
        await server.stop();
        await sleep(1_000);
      },
      end: () => server.start(),
    },
    'pause (SIGSTOP 1 s)': {
      inject: async () => {
        server.signal('SIGSTOP');
        await sleep(1_000);
      },
      end: async () => server.signal('SIGCONT'),
    },
    'restart (failover-like, at once)': {
      inject: () => server.stop(),
      end: () => server.start(),
    },
  };

  for (const kind of ['ioredis', 'node-redis', 'iovalkey'] as const) {
    for (const [name, fault] of Object.entries(faults)) {
      it(`${kind}, ${name}: recovers within ${RECOVERY_BOUND_MS} ms of the fault's end, one log line, nothing over the limit`, async () => {
        const { client, close } = await connect(kind, server.port);
        const logged: string[] = [];
        const limiter = createLimiter({
          policies: { algorithm: 'gcra', limit: LIMIT, windowMs: 86_400_000 },
          store: new RedisStore({ client, prefix: randomPrefix() }),
          logger: { warn: (f) => logged.push(String(f.code)), error: (f) => logged.push(String(f.code)) },
        });
        const load = startLoad((key): Promise<Decision> => limiter.check(key), { concurrency: 8, keys: KEYS });
        try {
          await exhausted(load.samples);
          const from = performance.now();
          await fault.inject();
          await fault.end();
          const ended = performance.now();
          await sleep(700);
          const samples = await load.stop();
          const during = summarize(samples, from, Number.POSITIVE_INFINITY);
          const lastDegraded = samples.filter((s) => s.degraded).reduce((t, s) => Math.max(t, s.at + s.waitMs), ended);
          const recoveryMs = Math.round(lastDegraded - ended);
          console.info(`${kind}, ${line(name, during)}; degraded ${recoveryMs} ms after the fault ended; log: ${logged.join(', ')}`);
          expect(recoveryMs).toBeLessThan(RECOVERY_BOUND_MS);
          expect(logged).toEqual(['ERR_RL_STORE_FAILED']);
          // Keys Redis had exhausted stay exhausted, in the failure mode as after the restart.
          expect(during.admitted).toBe(0);
          expect(limiter.stats().outages).toBe(1);
        } finally {
          await load.stop();
          await limiter.close();
          await close();
          await server.start();
          server.signal('SIGCONT');
        }
      }, 30_000);
    }
  }
});
