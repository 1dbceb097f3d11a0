/**
 * @module Tracing without metrics: an app that registers only a TracerProvider (no MeterProvider, no
 * Prometheus registry, no channel subscriber) still gets a `tollgate.decision` event on each request's
 * span, on the most common limiter (one policy, the memory store), whose decisions otherwise skip the
 * observer (limiter/solo.ts). A check called straight (a worker's job, a queue consumer) annotates the span
 * active where it runs as well.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createLimiter, MemoryStore } from '@tollgate/core';
import { rateLimit } from '@tollgate/express';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { hit } from './apps.js';

describe('tracing alone', () => {
  it('adds a tollgate.decision event to the request span with no metrics exporter attached', async () => {
    const spans = new InMemorySpanExporter();
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }));
    const tracer = trace.getTracer('test');
    const app = express();
    app.use((_req, res, next) => {
      tracer.startActiveSpan('GET /traced', (span) => {
        res.on('finish', () => span.end());
        next();
      });
    });
    app.get('/traced', rateLimit({ policies: [{ name: 'traced', limit: 2, windowMs: 60_000 }] }), (_req, res) => {
      res.end('ok');
    });
    const server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      expect(await hit(`http://127.0.0.1:${port}`, 3, '/traced')).toEqual([200, 200, 429]);
      const results = spans
        .getFinishedSpans()
        .map((s) => s.events.find((e) => e.name === 'tollgate.decision')?.attributes?.['tollgate.result']);
      expect(results).toEqual(['allowed', 'allowed', 'limited']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
      trace.disable();
      context.disable();
    }
  });

  it.each([
    ['one policy (the solo path)', { policies: [{ name: 'jobs', limit: 1, windowMs: 60_000 }] }],
    [
      'a plan table',
      { plans: { free: [{ name: 'jobs', limit: 1, windowMs: 60_000 }], pro: [{ name: 'jobs', limit: 9, windowMs: 60_000 }] } },
    ],
  ])('adds it to the span active around a check called straight, %s', async (_case, extra) => {
    const spans = new InMemorySpanExporter();
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }));
    const limiter = createLimiter({ store: new MemoryStore(), ...extra });
    try {
      const tracer = trace.getTracer('worker');
      for (const job of ['a', 'b']) {
        await tracer.startActiveSpan(`job ${job}`, async (span) => {
          await limiter.check('tenant:1');
          span.end();
        });
      }
      // Outside any span: nothing to annotate, and nothing fails.
      expect((await limiter.check('tenant:2')).allowed).toBe(true);
      const events = spans
        .getFinishedSpans()
        .map((s) => s.events.filter((e) => e.name === 'tollgate.decision').map((e) => e.attributes?.['tollgate.result']));
      expect(events).toEqual([['allowed'], ['limited']]);
    } finally {
      await limiter.close();
      trace.disable();
      context.disable();
    }
  });
});
