/**
 * @module A stand-in for a partner API with a hard quota: a tollgate Express app allowing 5 requests per
 * second (gcra, burst 5) per caller, answering 429 with `Retry-After` and draft-11 `RateLimit` beyond. A
 * caller is its IP address, or with `perApiKey` its `X-Api-Key` (the IP for calls without one). It counts
 * what it received and what it served, so the example can show what each client cost it.
 */
import type { Server } from 'node:http';
import { keys } from '@tollgate/core';
import { rateLimit } from '@tollgate/express';
import express from 'express';

export interface Partner {
  readonly url: string;
  readonly counts: { received: number; served: number };
  close(): Promise<void>;
}

export const PARTNER_LIMIT = 5;

export interface PartnerOptions {
  /** Give each `X-Api-Key` its own quota (else every caller on one IP shares one). Defaults to `false`. */
  readonly perApiKey?: boolean;
}

/** Starts the partner on a free loopback port. */
export async function startPartner({ perApiKey = false }: PartnerOptions = {}): Promise<Partner> {
  const counts = { received: 0, served: 0 };
  const app = express();
  app.use((_req, _res, next) => {
    counts.received++;
    next();
  });
  app.use(
    rateLimit({
      policies: { name: 'partner', algorithm: 'gcra', limit: PARTNER_LIMIT, windowMs: 1_000 },
      ...(perApiKey ? { key: keys.first(keys.header('x-api-key'), keys.ip()) } : {}),
    }),
  );
  app.get('/send', (_req, res) => {
    counts.served++;
    res.json({ sent: true });
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
