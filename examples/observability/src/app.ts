/**
 * @module The observed app: an Express API with three limiters (per client on the items route, a
 * costed search route with a stricter candidate in shadow, a leaky-bucket shaper on exports), tollgate's series on a prom-client
 * registry served at `/metrics`, and admin endpoints for the hot keys and the shadow record.
 */
import { type Limiter, registerPrometheusMetrics } from '@tollgate/core';
import { rateLimit } from '@tollgate/express';
import express, { type Express, type Request } from 'express';
import { Registry } from 'prom-client';

export interface ObservedApp {
  readonly app: Express;
  readonly registry: Registry;
  readonly limiters: Readonly<Record<'items' | 'search' | 'export', Limiter>>;
  /** Removes tollgate's series from the registry. */
  close(): Promise<void>;
}

function client(req: Request): string {
  const id = req.headers['x-client'];
  return `client:${typeof id === 'string' && id !== '' ? id : 'anonymous'}`;
}

export function createObservedApp(): ObservedApp {
  const registry = new Registry();
  const unregister = registerPrometheusMetrics({ registry });
  const app = express();
  const api = express.Router();

  // Each middleware is named: its series carry the name as their `limiter` label (the dashboard's
  // limiter variable, the rejection alert per limiter).
  const items = rateLimit({
    name: 'items',
    policies: [
      { name: 'items-per-second', algorithm: 'gcra', limit: 20, windowMs: 1000, burst: 20 },
      { name: 'items-per-minute', algorithm: 'sliding-window', limit: 600, windowMs: 60_000 },
    ],
    key: client,
    // The busiest route: a larger hot-key sketch (error bound N / 512) over epochs of 30 s.
    hotKeys: { size: 512, epochMs: 30_000 },
  });
  const search = rateLimit({
    name: 'search',
    policies: { name: 'search', algorithm: 'token-bucket', limit: 30, windowMs: 1000, burst: 30 },
    shadowPolicies: { name: 'search-next', algorithm: 'token-bucket', limit: 15, windowMs: 1000, burst: 15 },
    key: client,
    cost: (req) => (req.query.deep === '1' ? 5 : 1),
    // Hot keys are opt-in (they cost decisions over the limit a few percent): the defaults, 128 keys over 1-minute epochs.
    hotKeys: true,
  });

  const exporting = rateLimit({
    name: 'exports',
    policies: { name: 'export-shaper', algorithm: 'leaky-bucket', limit: 10, windowMs: 1000, burst: 5 },
    key: client,
    // Nobody asks this one for hot keys: left off (the default), no sketches, no counting.
  });

  // Limiters on the routes, so each decision knows its route template (`http.route`).
  api.get('/items/:id', items, (req, res) => {
    res.json({ id: req.params.id });
  });
  api.get('/search', search, (_req, res) => {
    res.json({ results: [] });
  });
  api.get('/export', exporting, (_req, res) => {
    res.json({ rows: [] });
  });
  app.use('/api', api);

  app.get('/metrics', async (_req, res) => {
    res.type(registry.contentType).send(await registry.metrics());
  });
  app.get('/admin/hot-keys', (req, res) => {
    const n = Math.min(50, Math.max(1, Number(req.query.n ?? 10) || 10));
    res.json({ items: items.limiter.hotKeys(n), search: search.limiter.hotKeys(n) });
  });
  app.get('/admin/shadow', (_req, res) => {
    res.json(search.limiter.stats().shadow);
  });

  return {
    app,
    registry,
    limiters: { items: items.limiter, search: search.limiter, export: exporting.limiter },
    async close() {
      unregister();
      await Promise.all([items.limiter.close(), search.limiter.close(), exporting.limiter.close()]);
    },
  };
}
