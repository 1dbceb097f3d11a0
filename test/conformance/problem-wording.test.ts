/**
 * @module The 503 problem details count in words that agree with their numbers, over real HTTP on
 * Express, Fastify and Koa: "retry in 1 second" (never "1 seconds"), "1 request in flight", for the
 * store that cannot answer (`onStoreError: 'closed'`) and for the load shedder's cap. The 429's wording
 * is held by packages/core's respond tests.
 */
import { createLoadShedder } from '@tollgate/core';
import { afterAll, describe, expect, it } from 'vitest';
import { type RunningApp, STARTERS } from '../observability/apps.js';
import { FailingStore } from '../observability/stores.js';

interface Problem {
  readonly status: number;
  readonly detail: string;
  readonly retryAfter: number;
}

async function problem(url: string): Promise<{ status: number; retryAfter: string | null; body: Problem }> {
  const res = await fetch(`${url}/api/items/42`);
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Problem };
}

/** `1 second`, `2 seconds`. */
function inSeconds(n: number): string {
  return n === 1 ? '1 second' : `${n} seconds`;
}

describe.each(Object.entries(STARTERS))('503 problem wording on %s', (_name, start) => {
  const apps: RunningApp[] = [];
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
  });

  it('the store cannot answer (onStoreError closed): "retry in 1 second."', async () => {
    const app = await start({
      policies: [{ name: 'wording', limit: 5, windowMs: 1_000 }],
      store: new FailingStore(),
      onStoreError: 'closed',
      // The store's failure is logged once; that line is not what this test reads.
      logger: { warn() {}, error() {} },
    });
    apps.push(app);
    const { status, retryAfter, body } = await problem(app.url);
    expect(status).toBe(503);
    expect(body.retryAfter).toBe(Number(retryAfter));
    expect(body.detail).toBe(`The rate limiter cannot decide right now; retry in ${inSeconds(body.retryAfter)}.`);
    expect(body.retryAfter).toBe(1);
    expect(body.detail).not.toMatch(/\b1 seconds\b/);
  });

  it('the load shedder at a priority\'s share: it names the priority, not "at its capacity" of the whole limit', async () => {
    const shedder = createLoadShedder({ maxInFlight: 4, priority: () => 'low' });
    const app = await start({ policies: [{ name: 'wording-shed-share', limit: 100, windowMs: 60_000 }], shed: shedder });
    apps.push(app);
    // low may fill 0.5 of 4: two in flight fill its part.
    const held = [shedder.acquire('low'), shedder.acquire('low')];
    try {
      const { status, body } = await problem(app.url);
      expect(status).toBe(503);
      expect(body.detail).toBe(
        `The server is at its capacity for low-priority requests (2 requests in flight, which fills the part of the limit of 4 they may use); retry in ${inSeconds(body.retryAfter)}.`,
      );
    } finally {
      for (const t of held) t?.release(false);
    }
  });

  it('the load shedder while the event loop lags: it says so, not "at its capacity" with 0 in flight', async () => {
    let now = 0;
    const shedder = createLoadShedder({
      adaptive: { initialLimit: 20, windowMs: 250, maxEventLoopDelayMs: 100 },
      clock: () => now,
      eventLoopDelay: () => 300,
      priority: () => 'normal',
    });
    const app = await start({ policies: [{ name: 'wording-shed-lag', limit: 100, windowMs: 60_000 }], shed: shedder });
    apps.push(app);
    // Two windows of lag in a row: the loop is lagging.
    for (let w = 0; w < 2; w++) {
      now += 250;
      shedder.acquire('critical')?.release(false);
    }
    expect(shedder.state()).toMatchObject({ lagging: true, inFlight: 0 });
    const { status, body } = await problem(app.url);
    expect(status).toBe(503);
    // Before: "at its capacity for normal-priority requests (0 requests in flight, which fills the part of the limit of 12 ...)".
    expect(body.detail).toBe(
      `The server is overloaded: its event loop is lagging, so only critical requests are served; retry in ${inSeconds(body.retryAfter)}.`,
    );
  });

  it('the load shedder at its cap: "(1 request in flight, limit 1); retry in 1 second."', async () => {
    const shedder = createLoadShedder({ maxInFlight: 1, priority: () => 'normal' });
    const app = await start({ policies: [{ name: 'wording-shed', limit: 100, windowMs: 60_000 }], shed: shedder });
    apps.push(app);
    const held = shedder.acquire();
    try {
      const { status, retryAfter, body } = await problem(app.url);
      expect(status).toBe(503);
      expect(body.retryAfter).toBe(Number(retryAfter));
      expect(body.detail).toBe(`The server is at its capacity (1 request in flight, limit 1); retry in ${inSeconds(body.retryAfter)}.`);
      expect(body.detail).not.toMatch(/\b1 (seconds|requests)\b/);
    } finally {
      held?.release(false);
    }
  });
});
