/**
 * @module The example app: `GET /export` is capped per user (a concurrency policy: at most 2 exports of
 * one user in flight, 2 more may wait up to 2 s); the whole server is protected by adaptive load
 * shedding (503 past the limit it finds from latency and event-loop delay; `/health` and paying
 * customers are shed last); `GET /work` queries a pool that slows down under load; `GET /stats`
 * shows the shedder's state. `shed: false` builds the unprotected twin of the load test.
 */
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import { keys, type LoadShedderState, type ShedPriority } from '@tollgate/core';
import { rateLimit } from '@tollgate/express';
import express, { type Request } from 'express';
import { createPool } from './pool.js';

export interface AppOptions {
  /** Adaptive shedding for the whole server. Defaults to `true`. */
  shed?: boolean;
  /** The pool behind `/work`: connections and ms per query. Defaults to 4 and 20. */
  poolSize?: number;
  queryMs?: number;
  /** How long one export takes, ms. Defaults to 300. */
  exportMs?: number;
}

export interface App {
  readonly server: Server;
  /** The shedder's state; undefined for the unprotected twin. */
  state(): LoadShedderState | undefined;
  /** Exports running now, per user, and the most ever seen at once for one user. */
  readonly exports: { running: Map<string, number>; peak: number };
}

/** Health checks first, then paying customers; everyone else is shed before them. */
export function priorityOf(req: Request): ShedPriority {
  if (req.path === '/health') return 'critical';
  return req.headers['x-plan'] === 'paid' ? 'high' : 'normal';
}

export function createApp(options: AppOptions = {}): App {
  const app = express();
  const pool = createPool(options.poolSize ?? 4, options.queryMs ?? 20);
  const exportMs = options.exportMs ?? 300;
  const exports = { running: new Map<string, number>(), peak: 0 };

  const site = rateLimit({
    policies: [{ name: 'api', limit: 100_000, windowMs: 60_000 }],
    ...(options.shed === false
      ? {}
      : {
          loadShedding: {
            adaptive: { initialLimit: 10, minLimit: 2, maxLimit: 200, windowMs: 100, minSamples: 5 },
            priority: priorityOf,
            retryAfterMs: 1000,
          },
        }),
  });
  app.use(site);

  const perUser = rateLimit({
    key: keys.header('x-user'),
    policies: [{ name: 'exports', algorithm: 'concurrency', limit: 2, leaseMs: 120_000, queue: { size: 2, timeoutMs: 2_000 } }],
  });
  app.get('/export', perUser, async (req, res) => {
    const user = String(req.headers['x-user']);
    const n = (exports.running.get(user) ?? 0) + 1;
    exports.running.set(user, n);
    exports.peak = Math.max(exports.peak, n);
    try {
      await new Promise((r) => setTimeout(r, exportMs));
      res.json({ user, rows: 1000 });
    } finally {
      exports.running.set(user, (exports.running.get(user) ?? 1) - 1);
    }
  });
  app.get('/work', async (_req, res) => {
    await pool.query();
    res.json({ ok: true });
  });
  app.get('/health', (_req, res) => {
    res.json({ ok: true });
  });
  app.get('/stats', (_req, res) => {
    res.json(site.shedder?.state() ?? null);
  });

  return { server: createServer(app), state: () => site.shedder?.state(), exports };
}
