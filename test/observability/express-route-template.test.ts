/**
 * @module The `route` label (`http.route`) of a middleware inside an Express route mounted under routers
 * and sub-apps: their mount paths as written, never the values the URL gave them. Before, a router mounted
 * at `/tenants/:tenant` labelled each tenant's requests apart (`/tenants/t0/items/:id`, ...), until the 200
 * routes the metrics keep were used up by one route (a metrics probe), on Express 4 and 5.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { registerPrometheusMetrics } from '@tollgate/core';
import { rateLimit } from '@tollgate/express';
import express5 from 'express';
import express4 from 'express4';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';

const registry = new Registry();
const unregister = registerPrometheusMetrics({ registry });
afterAll(() => unregister());

/** The `route` labels of the policy's series. */
async function routes(policy: string): Promise<string[]> {
  const lines = (await registry.metrics())
    .split('\n')
    .filter((l) => l.startsWith('tollgate_requests_total{') && l.includes(`policy="${policy}"`));
  return [...new Set(lines.map((l) => /route="([^"]*)"/.exec(l)?.[1] ?? '(none)'))].sort();
}

describe.each([
  ['express 5', express5],
  ['express 4', express4 as unknown as typeof express5],
])('%s: route templates through mounts', (name, createApp) => {
  const servers: Server[] = [];
  afterAll(() => Promise.all(servers.map((s) => new Promise((r) => s.close(r)))));

  it('names every mount path as written: routers with parameters, nested routers, sub-apps', async () => {
    const policy = `mounts-${name.replace(' ', '')}`;
    const limit = () => rateLimit({ policies: { name: policy, limit: 1_000, windowMs: 60_000 } });
    const app = createApp();
    const tenant = createApp.Router();
    tenant.get('/items/:id', limit(), (_req, res) => res.send('ok'));
    app.use('/tenants/:tenant', tenant);
    const inner = createApp.Router();
    inner.get('/users/:id', limit(), (_req, res) => res.send('ok'));
    const outer = createApp.Router();
    outer.use('/orgs/:org', inner);
    app.use('/v1', outer);
    const admin = createApp();
    const things = createApp.Router();
    things.get('/:thing', limit(), (_req, res) => res.send('ok'));
    admin.use('/things', things);
    admin.get('/direct/:id', limit(), (_req, res) => res.send('ok'));
    app.use('/admin', admin);
    app.get('/plain/:id', limit(), (_req, res) => res.send('ok'));
    const server = app.listen(0, '127.0.0.1');
    servers.push(server);
    await new Promise((r) => server.once('listening', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    for (const path of [
      '/tenants/t1/items/1',
      '/tenants/t2/items/2',
      '/TENANTS/t3/items/3/',
      '/v1/orgs/acme/users/7',
      '/v1/orgs/other/users/8',
      '/admin/things/a',
      '/admin/things/b',
      '/admin/direct/9',
      '/plain/1',
    ]) {
      expect((await fetch(base + path)).status, path).toBe(200);
    }
    expect(await routes(policy)).toEqual([
      '/admin/direct/:id',
      '/admin/things/:thing',
      '/plain/:id',
      '/tenants/:tenant/items/:id',
      '/v1/orgs/:org/users/:id',
    ]);
  });
});
