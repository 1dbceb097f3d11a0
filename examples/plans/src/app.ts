/**
 * @module An API sold in plans, keyed by API key, with a per-tenant daily quota in the same decision.
 * One middleware, three plans (compiled once each; on Redis each gets its own script):
 * - `free`: 5 requests a minute per API key;
 * - `pro`: 60 a minute per API key, bursts of 20;
 * - `acme-contract`: a per-customer override, 600 a minute;
 * and in every plan `tenant-day`, a daily quota per tenant (all the tenant's keys together), keyed by
 * tenant: a request is admitted only if its key's plan and its tenant's quota both have room, and
 * charges both or neither. The plan comes from the customer record behind the API key (a lookup with a
 * small cache); an unknown key gets the strict `free` plan (`unknownPlan`), never a bypass. Headers and
 * 429 bodies describe the plan that applied. `GET /quota` peeks: what is left, charging nothing.
 */
import type { Clock, Limiter } from '@tollgate/core';
import { rateLimit } from '@tollgate/express';
import express, { type Express, type Request } from 'express';
import { type CustomerDirectory, createDirectory } from './customers.js';

const DAY = 86_400_000;

function apiKeyOf(req: Request): string {
  const v = req.headers['x-api-key'];
  return typeof v === 'string' ? v : '';
}

export interface PlansApp {
  readonly app: Express;
  readonly limiter: Limiter;
  readonly directory: CustomerDirectory;
}

export function createApp(options: { clock?: Clock } = {}): PlansApp {
  const directory = createDirectory({ clock: options.clock });
  const customerOf = (req: Request) => directory.find(apiKeyOf(req));
  const perKey = (req: Request) => `apikey:${apiKeyOf(req)}`;
  const perTenant = async (req: Request) => `tenant:${(await customerOf(req))?.tenant ?? 'unknown'}`;
  const tenantDay = (limit: number) => ({ name: 'tenant-day', algorithm: 'fixed-window' as const, limit, windowMs: DAY, key: perTenant });

  const limit = rateLimit({
    plans: {
      free: [{ name: 'per-key', algorithm: 'gcra', limit: 5, windowMs: 60_000, key: perKey }, tenantDay(200)],
      pro: [{ name: 'per-key', algorithm: 'gcra', limit: 60, windowMs: 60_000, burst: 20, key: perKey }, tenantDay(5_000)],
      'acme-contract': [{ name: 'per-key', algorithm: 'gcra', limit: 600, windowMs: 60_000, key: perKey }, tenantDay(100_000)],
    },
    defaultPlan: 'free',
    unknownPlan: 'free',
    plan: async (req) => (await customerOf(req))?.plan,
    clock: options.clock,
  });

  const app = express();
  app.get('/quota', async (req, res) => {
    const customer = await customerOf(req);
    const decision = await limit.limiter.peek(
      { 'per-key': perKey(req), 'tenant-day': `tenant:${customer?.tenant ?? 'unknown'}` },
      { plan: customer?.plan },
    );
    res.json({
      plan: decision.plan,
      left: Object.fromEntries(decision.policies.map((p) => [p.name, p.remaining])),
    });
  });
  app.get('/api/widgets', limit, async (req, res) => {
    const customer = await customerOf(req);
    if (customer === undefined) {
      res.status(401).json({ error: 'unknown API key' });
      return;
    }
    res.json({ tenant: customer.tenant, plan: req.rateLimit?.plan, widgets: ['sprocket', 'gear'] });
  });
  return { app, limiter: limit.limiter, directory };
}
