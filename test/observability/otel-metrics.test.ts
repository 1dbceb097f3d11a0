/**
 * @module Issue 12: with the OpenTelemetry SDK installed as the global MeterProvider (an in-memory
 * exporter behind it) and no tollgate option at all, every instrument reports with its attributes over
 * real HTTP on Express, Fastify and Koa; with tracing on, the request's span gets a `tollgate.decision` event
 * (on each of the three), shed requests included.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  type DataPoint,
  type Histogram,
  InMemoryMetricExporter,
  MeterProvider,
  type MetricData,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createLimiter, createLoadShedder, METER_NAME, MemoryStore, reportInFlight, SHED_POLICY } from '@tollgate/core';
import { rateLimit as expressRateLimit } from '@tollgate/express';
import fastifyRateLimit from '@tollgate/fastify';
import { rateLimit as koaRateLimit } from '@tollgate/koa';
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hit, ROUTE, type RunningApp, STARTERS } from './apps.js';
import { AsyncMemoryStore, FailingStore } from './stores.js';

const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
const provider = new MeterProvider({ readers: [reader] });

async function collect(): Promise<MetricData[]> {
  exporter.reset();
  await reader.forceFlush();
  const scopes = exporter.getMetrics().flatMap((rm) => rm.scopeMetrics);
  return scopes.filter((s) => s.scope.name === METER_NAME).flatMap((s) => s.metrics);
}

function points(all: MetricData[], name: string): DataPoint<number | Histogram>[] {
  return all.filter((m) => m.descriptor.name === name).flatMap((m) => m.dataPoints as DataPoint<number | Histogram>[]);
}

function value(all: MetricData[], name: string, attributes: Record<string, string>): number | undefined {
  const found = points(all, name).find((p) => Object.entries(attributes).every(([k, v]) => p.attributes[k] === v));
  if (found === undefined) return undefined;
  return typeof found.value === 'number' ? found.value : found.value.count;
}

beforeAll(() => {
  metrics.setGlobalMeterProvider(provider);
});
afterAll(async () => {
  metrics.disable();
  await provider.shutdown();
});

describe('series known up front (Prometheus: "avoid missing metrics")', () => {
  it("reports a new limiter's results and shadow verdicts at 0 before its first decision, and a new route's at its first", async () => {
    // Unnamed: the suite's other tests list every attribute a point may carry, tollgate.limiter not among them.
    const limiter = createLimiter({
      policies: [{ name: 'otel-zero-quota', limit: 1, windowMs: 60_000 }],
      shadow: { policies: [{ name: 'otel-zero-next', limit: 1, windowMs: 60_000 }] },
    });
    const base = { 'tollgate.policy': 'otel-zero-quota', 'tollgate.mode': 'enforce' };
    const exact = (all: MetricData[], name: string, attributes: Record<string, string>) =>
      points(all, name).find(
        (p) =>
          Object.keys(p.attributes).length === Object.keys(attributes).length &&
          Object.entries(attributes).every(([k, v]) => p.attributes[k] === v),
      )?.value;
    let m = await collect();
    for (const result of ['allowed', 'limited', 'store_error']) {
      expect(exact(m, 'tollgate.requests', { ...base, 'tollgate.result': result })).toBe(0);
    }
    for (const verdict of ['agree_allowed', 'agree_limited', 'shadow_only', 'enforced_only']) {
      const attributes = { 'tollgate.policy': 'otel-zero-next', 'tollgate.shadow.verdict': verdict };
      expect(exact(m, 'tollgate.shadow.verdicts', attributes)).toBe(0);
    }
    await limiter.check('k', { route: '/otel-zero/:id' });
    m = await collect();
    const routed = { ...base, 'http.route': '/otel-zero/:id' };
    expect(exact(m, 'tollgate.requests', { ...routed, 'tollgate.result': 'allowed' })).toBe(1);
    expect(exact(m, 'tollgate.requests', { ...routed, 'tollgate.result': 'limited' })).toBe(0);
    expect(exact(m, 'tollgate.requests', { ...base, 'tollgate.result': 'allowed' })).toBe(0);
    await limiter.close();
  });
});

describe.each(Object.entries(STARTERS))('OpenTelemetry metrics over HTTP on %s', (name, start) => {
  const apps: RunningApp[] = [];
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
  });
  const policy = `per-client-${name}`;

  it('tollgate.requests: allowed, limited, cost_exceeds_capacity, with policy, mode and http.route', async () => {
    const app = await start({
      policies: [{ name: policy, limit: 2, windowMs: 60_000 }],
      cost: (req: unknown) => (readHeader(req, 'x-cost') === '5' ? 5 : 1),
    });
    apps.push(app);
    expect(await hit(app.url, 3)).toEqual([200, 200, 429]);
    const big = await fetch(`${app.url}/api/items/1`, { headers: { 'x-cost': '5' } });
    expect(big.status).not.toBe(200);
    const m = await collect();
    const base = { 'tollgate.policy': policy, 'tollgate.mode': 'enforce', 'http.route': ROUTE };
    expect(value(m, 'tollgate.requests', { ...base, 'tollgate.result': 'allowed' })).toBe(2);
    expect(value(m, 'tollgate.requests', { ...base, 'tollgate.result': 'limited' })).toBe(1);
    expect(value(m, 'tollgate.requests', { ...base, 'tollgate.result': 'cost_exceeds_capacity' })).toBe(1);
    const descriptor = m.find((d) => d.descriptor.name === 'tollgate.requests')?.descriptor;
    expect(descriptor?.unit).toBe('{request}');
    // Keys never become attributes: this policy's points carry exactly these (http.route but on the limiter's
    // series made at 0 when it was created, before any route), and no point anything else.
    for (const p of points(m, 'tollgate.requests').filter((p) => p.attributes['tollgate.policy'] === policy)) {
      const keys = p.attributes['http.route'] === undefined ? ['http.route', ...Object.keys(p.attributes)] : Object.keys(p.attributes);
      expect(keys.sort()).toEqual(['http.route', 'tollgate.mode', 'tollgate.policy', 'tollgate.result']);
      if (p.attributes['http.route'] === undefined) expect(p.value).toBe(0);
    }
    const known = ['http.route', 'tollgate.mode', 'tollgate.plan', 'tollgate.policy', 'tollgate.priority', 'tollgate.result'];
    for (const p of points(m, 'tollgate.requests')) for (const k of Object.keys(p.attributes)) expect(known).toContain(k);
  });

  it("tollgate.requests shed: the load shedder's refusals, with tollgate.priority and http.route", async () => {
    const shedder = createLoadShedder({ maxInFlight: 4, priority: (req: unknown) => (readHeader(req, 'x-low') === '1' ? 'low' : 'high') });
    const app = await start({ policies: [{ name: `${policy}-behind-shedder`, limit: 100, windowMs: 60_000 }], shed: shedder });
    apps.push(app);
    // Two slots of four held elsewhere: low traffic (half the cap) is shed, high traffic (90 %: 3) still fits.
    const held = [shedder.acquire('critical'), shedder.acquire('critical')];
    const low = await fetch(`${app.url}/api/items/1`, { headers: { 'x-low': '1' } });
    await low.arrayBuffer();
    expect(low.status).toBe(503);
    expect(await hit(app.url, 1)).toEqual([200]);
    const second = shedder.acquire('critical');
    expect(await hit(app.url, 2)).toEqual([503, 503]);
    for (const t of [...held, second]) t?.release(false);
    const m = await collect();
    const shed = (priority: string) =>
      value(m, 'tollgate.requests', {
        'tollgate.policy': SHED_POLICY,
        'tollgate.result': 'shed',
        'tollgate.mode': 'enforce',
        'tollgate.priority': priority,
        'http.route': ROUTE,
      });
    // Cumulative over the three frameworks' apps: at least this app's.
    expect(shed('low')).toBeGreaterThanOrEqual(1);
    expect(shed('high')).toBeGreaterThanOrEqual(2);
    expect(
      value(m, 'tollgate.requests', { 'tollgate.policy': `${policy}-behind-shedder`, 'tollgate.result': 'allowed', 'http.route': ROUTE }),
    ).toBe(1);
    expect(shedder.state().shedByPriority).toMatchObject({ low: 1, high: 2 });
  });

  it('tollgate.plan: decisions carry their plan when the middleware has several', async () => {
    const app = await start({
      plans: {
        free: [{ name: `${policy}-plan-quota`, limit: 1, windowMs: 60_000 }],
        pro: [{ name: `${policy}-plan-quota`, limit: 100, windowMs: 60_000 }],
      },
      defaultPlan: 'free',
      plan: (req: unknown) => readHeader(req, 'x-plan'),
    });
    apps.push(app);
    expect(await hit(app.url, 2)).toEqual([200, 429]);
    const pro = await fetch(`${app.url}/api/items/1`, { headers: { 'x-plan': 'pro' } });
    await pro.arrayBuffer();
    expect(pro.status).toBe(200);
    const m = await collect();
    const base = { 'tollgate.policy': `${policy}-plan-quota`, 'tollgate.mode': 'enforce', 'http.route': ROUTE };
    expect(value(m, 'tollgate.requests', { ...base, 'tollgate.plan': 'free', 'tollgate.result': 'allowed' })).toBe(1);
    expect(value(m, 'tollgate.requests', { ...base, 'tollgate.plan': 'free', 'tollgate.result': 'limited' })).toBe(1);
    expect(value(m, 'tollgate.requests', { ...base, 'tollgate.plan': 'pro', 'tollgate.result': 'allowed' })).toBe(1);
    // There from the route's first request under the plan, at 0 until its first rejection.
    expect(value(m, 'tollgate.requests', { ...base, 'tollgate.plan': 'pro', 'tollgate.result': 'limited' })).toBe(0);
  });

  it('tollgate.plan: a plans table of one plan labels its decisions too (the series keep their labels when a second plan comes)', async () => {
    const app = await start({ plans: { starter: [{ name: `${policy}-one-plan`, limit: 1, windowMs: 60_000 }] } });
    apps.push(app);
    expect(await hit(app.url, 2)).toEqual([200, 429]);
    const m = await collect();
    const base = { 'tollgate.policy': `${policy}-one-plan`, 'tollgate.mode': 'enforce', 'http.route': ROUTE, 'tollgate.plan': 'starter' };
    expect(value(m, 'tollgate.requests', { ...base, 'tollgate.result': 'allowed' })).toBe(1);
    expect(value(m, 'tollgate.requests', { ...base, 'tollgate.result': 'limited' })).toBe(1);
  });

  it('tollgate.requests shadow_limited and tollgate.shadow.verdicts', async () => {
    const app = await start({ policies: [{ name: `${policy}-shadow-mode`, limit: 1, windowMs: 60_000 }], mode: 'shadow' });
    const candidate = await start({
      policies: [{ name: `${policy}-live`, limit: 3, windowMs: 60_000 }],
      shadow: { policies: [{ name: `${policy}-next`, limit: 1, windowMs: 60_000 }] },
    });
    apps.push(app, candidate);
    expect(await hit(app.url, 2)).toEqual([200, 200]);
    expect(await hit(candidate.url, 4)).toEqual([200, 200, 200, 429]);
    const m = await collect();
    expect(
      value(m, 'tollgate.requests', {
        'tollgate.policy': `${policy}-shadow-mode`,
        'tollgate.result': 'shadow_limited',
        'tollgate.mode': 'shadow',
        'http.route': ROUTE,
      }),
    ).toBe(1);
    const verdict = (v: string) =>
      value(m, 'tollgate.shadow.verdicts', { 'tollgate.policy': `${policy}-next`, 'tollgate.shadow.verdict': v });
    expect(verdict('agree_allowed')).toBe(1);
    expect(verdict('shadow_only')).toBe(2);
    expect(verdict('agree_limited')).toBe(1);
  });

  it('tollgate.store.duration by store kind and outcome, store_error, and the breaker in tollgate.store.state', async () => {
    const ok = await start({ policies: [{ name: `${policy}-async`, limit: 100, windowMs: 60_000 }], store: new AsyncMemoryStore() });
    const failing = await start({
      policies: [{ name: `${policy}-failing`, limit: 100, windowMs: 60_000 }],
      store: new FailingStore(),
      onStoreError: 'open',
      breaker: { failureThreshold: 2, cooldownMs: 60_000 },
      logger: { warn() {}, error() {} },
    });
    apps.push(ok, failing);
    expect(await hit(ok.url, 3)).toEqual([200, 200, 200]);
    expect(await hit(failing.url, 3)).toEqual([200, 200, 200]);
    const m = await collect();
    expect(
      value(m, 'tollgate.store.duration', { 'tollgate.store.kind': 'async-memory', 'tollgate.store.outcome': 'ok' }),
    ).toBeGreaterThanOrEqual(3);
    expect(
      value(m, 'tollgate.store.duration', { 'tollgate.store.kind': 'failing', 'tollgate.store.outcome': 'error' }),
    ).toBeGreaterThanOrEqual(2);
    const histogram = m.find((d) => d.descriptor.name === 'tollgate.store.duration');
    expect(histogram?.descriptor.unit).toBe('s');
    expect(
      value(m, 'tollgate.requests', { 'tollgate.policy': `${policy}-failing`, 'tollgate.result': 'store_error', 'http.route': ROUTE }),
    ).toBe(3);
    expect(value(m, 'tollgate.store.state', { 'tollgate.store.kind': 'failing', 'tollgate.store.state': 'open' })).toBeGreaterThanOrEqual(
      1,
    );
    expect(
      value(m, 'tollgate.store.state', { 'tollgate.store.kind': 'async-memory', 'tollgate.store.state': 'closed' }),
    ).toBeGreaterThanOrEqual(1);
  });

  it('tollgate.shaping.delay for shaped requests', async () => {
    // One instant for the three (a fixed clock): on a loaded machine they may arrive more than 20 ms apart.
    const app = await start({
      policies: [{ name: `${policy}-shaper`, algorithm: 'leaky-bucket', limit: 50, windowMs: 1000, burst: 5 }],
      clock: () => 1_000_000,
    });
    apps.push(app);
    await Promise.all([hit(app.url, 1), hit(app.url, 1), hit(app.url, 1)]);
    const m = await collect();
    const delayed = value(m, 'tollgate.shaping.delay', { 'tollgate.policy': `${policy}-shaper` });
    expect(delayed).toBeGreaterThanOrEqual(1);
  });
});

describe('OpenTelemetry extension points and tracing', () => {
  it('tollgate.store.evictions counts the entries a full MemoryStore drops, from 0', async () => {
    const attrs = { 'tollgate.store.kind': 'memory' };
    // Created at 0 before any eviction: the series is there for an alert from the start.
    const before = value(await collect(), 'tollgate.store.evictions', attrs);
    expect(before).toBeGreaterThanOrEqual(0);
    const store = new MemoryStore({ maxKeys: 2, sweepIntervalMs: 0 });
    const limiter = createLimiter({ policies: [{ name: 'evictions-otel', limit: 5, windowMs: 60_000 }], store });
    for (const key of ['a', 'b', 'c', 'd']) await limiter.check(key);
    const m = await collect();
    expect(value(m, 'tollgate.store.evictions', attrs)).toBe((before ?? 0) + 2);
    expect(m.find((d) => d.descriptor.name === 'tollgate.store.evictions')?.descriptor.unit).toBe('{entry}');
    await limiter.close();
  });

  it('tollgate.leases.active and tollgate.queue.length report what features hold', async () => {
    const source = () => [{ policy: 'uploads', leases: 3, queued: 2 }];
    const stop = reportInFlight(source);
    const m = await collect();
    expect(value(m, 'tollgate.leases.active', { 'tollgate.policy': 'uploads' })).toBe(3);
    expect(value(m, 'tollgate.queue.length', { 'tollgate.policy': 'uploads' })).toBe(2);
    expect(m.find((d) => d.descriptor.name === 'tollgate.leases.active')?.descriptor.unit).toBe('{lease}');
    stop();
  });

  it('a limiter with only a concurrency policy reports its requests, leases held and waiters', async () => {
    const limiter = createLimiter({
      policies: [{ name: 'exports-otel', algorithm: 'concurrency', limit: 2, queue: { size: 1, timeoutMs: 5_000 } }],
    });
    const held = [await limiter.check('u'), await limiter.check('u')];
    const waiting = limiter.check('u');
    await new Promise((r) => setTimeout(r, 20));
    let m = await collect();
    expect(value(m, 'tollgate.leases.active', { 'tollgate.policy': 'exports-otel' })).toBe(2);
    expect(value(m, 'tollgate.queue.length', { 'tollgate.policy': 'exports-otel' })).toBe(1);
    held[0]?.release?.();
    const third = await waiting;
    expect(third.allowed).toBe(true);
    for (const d of [held[1], third]) d?.release?.();
    m = await collect();
    expect(value(m, 'tollgate.leases.active', { 'tollgate.policy': 'exports-otel' })).toBe(0);
    expect(value(m, 'tollgate.queue.length', { 'tollgate.policy': 'exports-otel' })).toBe(0);
    expect(value(m, 'tollgate.requests', { 'tollgate.policy': 'exports-otel', 'tollgate.result': 'allowed' })).toBe(3);
    await limiter.close();
  });

  it('a gauge point its sources no longer have reads 0, not its last value: a closed limiter holds nothing', async () => {
    const limiter = createLimiter({ policies: [{ name: 'closed-otel', algorithm: 'concurrency', limit: 2 }] });
    const held = await limiter.check('u');
    expect(value(await collect(), 'tollgate.leases.active', { 'tollgate.policy': 'closed-otel' })).toBe(1);
    // Closed with the lease held (a hot reload): its source is gone. Before: 1 for ever (cumulative).
    await limiter.close();
    held.release?.();
    expect(value(await collect(), 'tollgate.leases.active', { 'tollgate.policy': 'closed-otel' })).toBe(0);
  });

  it.each(['express', 'fastify', 'koa'] as const)('adds a tollgate.decision event to the request span on %s', async (name) => {
    const spans = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(tracerProvider);
    const tracer = trace.getTracer('test');
    const shedder = createLoadShedder({ maxInFlight: 1 });
    const options = { policies: [{ name: `traced-${name}`, limit: 1, windowMs: 60_000 }], shed: shedder };
    let server: Server;
    let closeApp: () => Promise<unknown> = () => new Promise((resolve) => server.close(resolve));
    if (name === 'fastify') {
      // The HTTP instrumentation wraps the server's request handler: Fastify's hooks then run inside the span.
      const app = Fastify({
        serverFactory: (handler) =>
          createServer((req, res) =>
            tracer.startActiveSpan('GET /traced', (span) => {
              res.on('finish', () => span.end());
              handler(req, res);
            }),
          ),
      });
      await app.register(fastifyRateLimit, options);
      app.get('/traced', async () => 'ok');
      await app.ready();
      server = app.server;
      closeApp = () => app.close();
    } else if (name === 'express') {
      const app = express();
      // What an HTTP instrumentation does: the request runs inside its server span.
      app.use((_req, res, next) => {
        tracer.startActiveSpan('GET /traced', (span) => {
          res.on('finish', () => span.end());
          next();
        });
      });
      app.get('/traced', expressRateLimit(options), (_req, res) => {
        res.end('ok');
      });
      server = createServer(app);
    } else {
      const app = new Koa();
      app.use((_ctx, next) => tracer.startActiveSpan('GET /traced', (span) => next().finally(() => span.end())));
      app.use(koaRateLimit(options));
      app.use((ctx) => {
        ctx.body = 'ok';
      });
      server = createServer(app.callback());
    }
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      expect(await hit(`http://127.0.0.1:${port}`, 2, '/traced')).toEqual([200, 429]);
      const held = shedder.acquire();
      expect(await hit(`http://127.0.0.1:${port}`, 1, '/traced')).toEqual([503]);
      held?.release(false);
      const events = spans.getFinishedSpans().map((s) => s.events.find((e) => e.name === 'tollgate.decision')?.attributes);
      expect(events).toEqual([
        expect.objectContaining({ 'tollgate.policy': `traced-${name}`, 'tollgate.result': 'allowed', 'tollgate.mode': 'enforce' }),
        expect.objectContaining({
          'tollgate.policy': `traced-${name}`,
          'tollgate.result': 'limited',
          'tollgate.retry_after_ms': expect.any(Number),
        }),
        expect.objectContaining({
          'tollgate.policy': SHED_POLICY,
          'tollgate.result': 'shed',
          'tollgate.mode': 'enforce',
          'tollgate.priority': 'critical',
        }),
      ]);
    } finally {
      await closeApp();
      trace.disable();
      context.disable();
    }
  });
});

function readHeader(req: unknown, name: string): string | undefined {
  const r = req as {
    headers?: Record<string, unknown>;
    get?: (n: string) => string | undefined;
    request?: { headers: Record<string, unknown> };
  };
  const headers = r.headers ?? r.request?.headers;
  const v = headers?.[name];
  return typeof v === 'string' ? v : undefined;
}
