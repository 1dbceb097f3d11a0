/**
 * @module The Express example app: two policies on the API (a short burst limit and an hourly quota),
 * a weighted route, and a health check that is never limited.
 */
import { boundedCost, type Clock, type PolicyOptions } from '@tollgate/core';
import { rateLimit } from '@tollgate/express';
import express, { type Express, type Request } from 'express';

export const POLICIES: PolicyOptions[] = [
  { name: 'burst', algorithm: 'gcra', limit: 5, windowMs: 10_000 },
  { name: 'hourly', algorithm: 'fixed-window', limit: 100, windowMs: 3_600_000 },
];

/** The most rows one report may ask for: the burst policy's capacity, so a report always fits it. */
export const MAX_ROWS = 5;

/**
 * The rows a report asks for, as whole units from 1 to MAX_ROWS: `?rows=0.001` is 1 row, `?rows=99` is 5,
 * `?rows=abc` or none is 1. The client picks this number, so it is bounded before it is charged, and the
 * handler serves the same bounded number it was charged for.
 */
export function reportRows(req: Request): number {
  return boundedCost(req.query.rows, { max: MAX_ROWS });
}

export interface ExampleOptions {
  /** Injected in tests and the demo; the default is the real clock. */
  clock?: Clock;
}

export function createApp(options: ExampleOptions = {}): Express {
  const app = express();
  const limiter = rateLimit({
    policies: POLICIES,
    clock: options.clock,
    // A report costs as many units as the rows it asks for, bounded to whole rows from 1 to 5; anything else costs 1.
    cost: (req) => (req.path === '/api/report' ? reportRows(req) : 1),
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
    res.json({ rows: reportRows(req) });
  });
  return app;
}
