/**
 * @module The app under rollout: the enforced policy is a fixed window (60 per minute per client); the
 * candidate is GCRA with the same rate and a burst of 10, evaluated on every request in shadow (its own
 * state, same store call, never blocks, never on the wire). `onDecision` sees both verdicts.
 */
import type { Clock, Decision } from '@tollgate/core';
import { type RateLimitMiddleware, rateLimit } from '@tollgate/express';
import express, { type Express } from 'express';

export interface RolloutApp {
  readonly app: Express;
  readonly limiter: RateLimitMiddleware['limiter'];
}

export function createApp(options: { clock?: Clock; onDecision?: (decision: Decision, client: string) => void } = {}): RolloutApp {
  const app = express();
  const middleware = rateLimit({
    policies: { name: 'per-minute', algorithm: 'fixed-window', limit: 60, windowMs: 60_000 },
    shadowPolicies: { name: 'candidate', algorithm: 'gcra', limit: 60, windowMs: 60_000, burst: 10 },
    key: (req) => `client:${String(req.headers['x-client'] ?? 'anonymous')}`,
    clock: options.clock,
    onDecision: (decision, req) => options.onDecision?.(decision, String(req.headers['x-client'] ?? 'anonymous')),
  });
  app.use(middleware);
  app.get('/api/items', (_req, res) => {
    res.json({ items: [] });
  });
  return { app, limiter: middleware.limiter };
}
