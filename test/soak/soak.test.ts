/**
 * @module Issue 9: a bounded soak that can fail. One Express 5 app, real HTTP, three limiters under load
 * at once: a key flood (every request a new key, sliding-log + fixed-window policies plus a shadow
 * candidate, `maxKeys` 5,000, so eviction runs all along), a shadow-mode limiter rejecting nearly everything it sees, and a store
 * that throws on every third call. It asserts that RSS plateaus (after a warm-up, the last third of the
 * samples may not grow by more than 25 % over the middle third, and stays under 512 MB), that the log
 * stays within its budget (per interval, per middleware: `logRate.lines` lines plus one summary line, plus
 * one shadow summary), and that no request got a 5xx. Default 60 s; `SOAK_MS=600000` for ten minutes.
 * Prints the RSS samples and the line counts.
 */
import { Agent, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { LogFields, Logger, Store } from '@tollgate/core';
import { MemoryStore } from '@tollgate/core';
import { rateLimit } from '@tollgate/express';
import express from 'express';
import { expect, it } from 'vitest';

const SOAK_MS = Number(process.env.SOAK_MS ?? 60_000);
const INTERVAL_MS = 5000;
const LINES = 10;
const CONCURRENCY = 16;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function counting(): Logger & { lines: number; codes: Map<string, number> } {
  const codes = new Map<string, number>();
  const out = {
    lines: 0,
    codes,
    warn: (f: LogFields) => count(f),
    error: (f: LogFields) => count(f),
  };
  function count(f: LogFields): void {
    out.lines += 1;
    const code = String(f.code);
    codes.set(code, (codes.get(code) ?? 0) + 1);
  }
  return out;
}

/** A MemoryStore that throws on every third call: store failures all through the run. */
function flakyStore(): Store {
  const inner = new MemoryStore({ maxKeys: 10_000 });
  let calls = 0;
  return {
    kind: 'flaky',
    apply(key, plan, cost, now) {
      calls += 1;
      if (calls % 3 === 0) throw new Error('flaky store');
      return inner.apply(key, plan, cost, now);
    },
    reset(key, plan) {
      return inner.reset(key, plan);
    },
  };
}

it(
  `soaks for ${SOAK_MS / 1000} s: RSS plateaus, the log stays under its budget, no 5xx`,
  async () => {
    const logger = counting();
    const logRate = { lines: LINES, intervalMs: INTERVAL_MS };
    const app = express();
    app.get(
      '/flood',
      rateLimit({
        policies: [
          { name: 'exact', algorithm: 'sliding-log', limit: 50, windowMs: 60_000 },
          { name: 'window', algorithm: 'fixed-window', limit: 100, windowMs: 60_000 },
        ],
        shadow: { policies: { name: 'candidate', algorithm: 'gcra', limit: 1, windowMs: 60_000 } },
        store: new MemoryStore({ maxKeys: 5000 }),
        key: (req) => `flood:${String(req.headers['x-key'])}`,
        logger,
        logRate,
      }),
      (_req, res) => res.send('ok'),
    );
    app.get(
      '/shadow',
      rateLimit({ policies: { limit: 1, windowMs: 60_000 }, mode: 'shadow', key: (req) => String(req.headers['x-key']), logger, logRate }),
      (_req, res) => res.send('ok'),
    );
    app.get('/flaky', rateLimit({ policies: { limit: 5, windowMs: 1000 }, store: flakyStore(), logger, logRate }), (_req, res) =>
      res.send('ok'),
    );
    const server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    const { port } = server.address() as AddressInfo;
    const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const statuses = new Map<number, number>();
    let sent = 0;
    const get = (path: string, key: string) =>
      new Promise<void>((resolve) => {
        const req = httpRequest({ host: '127.0.0.1', port, path, agent, headers: { 'x-key': key } }, (res) => {
          statuses.set(res.statusCode ?? 0, (statuses.get(res.statusCode ?? 0) ?? 0) + 1);
          res.resume();
          res.on('end', () => resolve());
        });
        req.on('error', () => resolve());
        req.end();
      });
    const paths = ['/flood', '/flood', '/shadow', '/flaky'];
    const started = Date.now();
    const deadline = started + SOAK_MS;
    const rss: number[] = [];
    const sampler = setInterval(() => {
      gc();
      rss.push(Math.round(process.memoryUsage().rss / 1048576));
    }, 2000);
    async function worker(w: number): Promise<void> {
      let i = 0;
      while (Date.now() < deadline) {
        const path = paths[i % paths.length] as string;
        // The flood gets a new key every time; the shadow limiter one hot key it would reject.
        await get(path, path === '/shadow' ? 'hot' : `${w}-${sent}-${Math.random().toString(36).slice(2)}`);
        sent += 1;
        i += 1;
      }
    }
    await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => worker(w)));
    clearInterval(sampler);
    agent.destroy();
    await new Promise<void>((r) => server.close(() => r()));
    const elapsed = Date.now() - started;
    const intervals = Math.ceil(elapsed / INTERVAL_MS) + 1;
    const budget = 3 * intervals * (LINES + 1) + intervals * 2;
    const third = Math.floor(rss.length / 3);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    const middle = mean(rss.slice(third, 2 * third));
    const last = mean(rss.slice(2 * third));
    console.log(
      JSON.stringify({
        soakMs: elapsed,
        requests: sent,
        statuses: Object.fromEntries(statuses),
        rssMB: rss,
        rssMiddleMB: Math.round(middle),
        rssLastMB: Math.round(last),
        logLines: logger.lines,
        logBudget: budget,
        byCode: Object.fromEntries(logger.codes),
      }),
    );
    expect(sent).toBeGreaterThan(1000);
    for (const status of statuses.keys()) expect(status).toBeLessThan(500);
    expect(logger.lines).toBeLessThanOrEqual(budget);
    expect(logger.codes.get('WRN_RL_SHADOW_LIMITED') ?? 0).toBeGreaterThan(0);
    expect(rss.length).toBeGreaterThanOrEqual(6);
    expect(last).toBeLessThanOrEqual(middle * 1.25);
    expect(Math.max(...rss)).toBeLessThan(512);
  },
  SOAK_MS + 60_000,
);
