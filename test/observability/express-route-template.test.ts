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

/** The `route` labels of the policy's series that counted requests (a limiter's series start at 0, with no route). */
async function routes(policy: string): Promise<string[]> {
  const lines = (await registry.metrics())
    .split('\n')
    .filter((l) => l.startsWith('tollgate_requests_total{') && l.includes(`policy="${policy}"`) && !l.endsWith(' 0'));
  // Label values as written in the exposition format, unescaped.
  const route = (l: string) => (/route="((?:[^"\\]|\\.)*)"/.exec(l)?.[1] ?? '(none)').replace(/\\(.)/g, '$1');
  return [...new Set(lines.map(route))].sort();
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

  it('a router mounted in several places, on several paths, on a RegExp or with a trailing slash: the way each request came, never its values', async () => {
    const policy = `ways-${name.replace(' ', '')}`;
    const limit = () => rateLimit({ policies: { name: policy, limit: 1_000, windowMs: 60_000 } });
    const app = createApp();
    const shared = createApp.Router();
    shared.get('/items/:id', limit(), (_req, res) => res.send('ok'));
    app.use('/a', shared);
    app.use('/b/:x', shared);
    const versioned = createApp.Router();
    versioned.get('/ping', limit(), (_req, res) => res.send('ok'));
    app.use(/^\/v\d+/, versioned);
    const many = createApp.Router();
    many.get('/list', limit(), (_req, res) => res.send('ok'));
    app.use(['/one', '/two/:n'], many);
    const slashed = createApp.Router();
    slashed.get('/x/:id', limit(), (_req, res) => res.send('ok'));
    app.use('/api/', slashed);
    const sub = createApp();
    const subRouter = createApp.Router();
    subRouter.get('/y/:id', limit(), (_req, res) => res.send('ok'));
    sub.use('/inner', subRouter);
    app.use('/sub', sub);
    const org = createApp();
    org.get('/z/:id', limit(), (_req, res) => res.send('ok'));
    const orgRouter = createApp.Router();
    orgRouter.get('/w/:id', limit(), (_req, res) => res.send('ok'));
    org.use('/r', orgRouter);
    app.use('/orgs/:org', org);
    const server = app.listen(0, '127.0.0.1');
    servers.push(server);
    await new Promise((r) => server.once('listening', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    for (const path of [
      '/a/items/1',
      '/b/x1/items/2',
      '/b/x2/items/3',
      '/v1/ping',
      '/v22/ping',
      '/one/list',
      '/two/7/list',
      '/api/x/5',
      '/sub/inner/y/3',
      '/orgs/o1/z/1',
      '/orgs/o2/z/2',
      '/orgs/o3/r/w/3',
    ]) {
      expect((await fetch(base + path)).status, path).toBe(200);
    }
    // Before: '/a/items/:id' for the router's traffic under /b (Express 5), '/v1/ping' and '/v22/ping'
    // (Express 4), '/one,/two/:n/list' (Express 5), '/api//x/:id' (Express 5), '/z/:id' and '/w/:id' (a
    // sub-app on a path with parameters, Express 4).
    expect(await routes(policy)).toEqual(
      [
        '/^\\/v\\d+//ping',
        '/a/items/:id',
        '/api/x/:id',
        '/b/:x/items/:id',
        '/one/list',
        '/orgs/:org/r/w/:id',
        '/orgs/:org/z/:id',
        '/sub/inner/y/:id',
        '/two/:n/list',
      ].sort(),
    );
  });
});
