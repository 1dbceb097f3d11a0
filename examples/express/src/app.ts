/**
 * @module The Express example app: two policies on the API (a short burst limit and an hourly quota),
 * a weighted route, and a health check that is never limited.
 */
import type { Clock, PolicyOptions } from '@tollgate/core';
import { rateLimit } from '@tollgate/express';
import express, { type Express } from 'express';

export const POLICIES: PolicyOptions[] = [
  { name: 'burst', algorithm: 'gcra', limit: 5, windowMs: 10_000 },
  { name: 'hourly', algorithm: 'fixed-window', limit: 100, windowMs: 3_600_000 },
];

export interface ExampleOptions {
  /** Injected in tests and the demo; the default is the real clock. */
  clock?: Clock;
}

export function createApp(options: ExampleOptions = {}): Express {
  const app = express();
  const limiter = rateLimit({
    policies: POLICIES,
    clock: options.clock,
    // A report costs as many units as the rows it asks for (1 to 5); anything else costs 1 and warns once.
    cost: (req) => (req.path === '/api/report' ? Number(req.query.rows ?? 1) : 1),
    skip: (req) => req.path === '/health',
  });
  app.use(limiter);
  app.get('/health', (_req, res) => {
    res.json({ ok: true });
  });
  app.get('/api/hello', (req, res) => {
    res.json({ hello: 'world', remaining: req.rateLimit?.remaining });
  });
  app.get('/api/report', (req, res) => {
    res.json({ rows: Number(req.query.rows ?? 1) });
  });
  return app;
}
