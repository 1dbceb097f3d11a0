/**
 * `handler.run` answers synchronously while every step is synchronous, and with a promise as soon as one
 * step returns one (a hook, a store); both give the same outcome and write the same response. It never
 * throws and never rejects, whichever step fails.
 */
import { describe, expect, it } from 'vitest';
import { isPromiseLike } from '../../internal/promise.js';
import { MemoryStore } from '../../stores/memory-store.js';
import type { Store, StorePlan, StoreResult } from '../../stores/store.js';
import { recordingLogger } from '../../testing/request-view-fixture.js';
import type { Decision } from '../../types.js';
import { createRateLimitHandler, type RawResponse, type ResponseTarget, type RunOutcome } from './rate-limit-handler.js';
import type { RateLimitOptions } from './rate-limit-options.js';

interface Written {
  headers: Record<string, string>;
  status?: number;
  body?: string;
  decision?: Decision;
}

function target(): ResponseTarget & { written: Written } {
  const raw = {
    headersSent: false,
    writableEnded: false,
    destroyed: false,
    destroy: () => undefined,
    once: () => raw,
  } as unknown as RawResponse;
  const written: Written = { headers: {} };
  return {
    raw,
    written,
    attach: (d) => {
      written.decision = d;
    },
    header: (name, value) => {
      written.headers[name] = value;
    },
    reject: (status, body) => {
      written.status = status;
      written.body = body;
    },
    abandon: () => undefined,
  };
}

const BASE: RateLimitOptions<object> = { policies: { algorithm: 'fixed-window', limit: 1, windowMs: 60_000 }, clock: () => 1_000_000 };

/** Runs two requests from one address; returns each outcome, whether it came synchronously, and what it wrote. */
async function twoRequests(options: RateLimitOptions<object>) {
  const handler = createRateLimitHandler<object>({ ...BASE, logger: recordingLogger(), ...options });
  const out: { outcome: RunOutcome; sync: boolean; written: Written }[] = [];
  for (let i = 0; i < 2; i++) {
    const t = target();
    const request = {};
    const pending = handler.run({ request, raw: request, remoteAddress: '192.0.2.7', headers: {}, method: 'GET', url: '/' }, t);
    out.push({ sync: !isPromiseLike(pending), outcome: isPromiseLike(pending) ? await pending : pending, written: t.written });
  }
  return out;
}

/** The MemoryStore behind a Promise, as a networked store answers. */
class AsyncMemoryStore implements Store {
  readonly kind = 'async-memory';
  private readonly inner = new MemoryStore({ sweepIntervalMs: 0 });
  apply(key: string, plan: StorePlan, cost: number, now: number): Promise<StoreResult> {
    return Promise.resolve(Array.from(this.inner.apply(key, plan, cost, now)));
  }
  reset(key: string, plan: StorePlan): Promise<void> {
    this.inner.reset(key, plan);
    return Promise.resolve();
  }
  close(): void {}
}

describe('handler.run', () => {
  it('answers synchronously when every step is synchronous, with a promise when one step is not, the same either way', async () => {
    const sync = await twoRequests({});
    const asyncKey = await twoRequests({ key: async () => 'ip:192.0.2.7' });
    const asyncSkip = await twoRequests({ skip: async () => false });
    const syncCost = await twoRequests({ cost: () => 1 });
    const asyncStore = await twoRequests({ store: new AsyncMemoryStore() });
    expect(sync.map((r) => r.sync)).toEqual([true, true]);
    for (const other of [asyncKey, asyncSkip, asyncStore]) expect(other.map((r) => r.sync)).toEqual([false, false]);
    for (const run of [sync, asyncKey, asyncSkip, syncCost, asyncStore]) {
      expect(run.map((r) => r.outcome)).toEqual(['next', 'stop']);
      expect(run.map((r) => r.written.status)).toEqual([undefined, 429]);
      expect(run.map((r) => r.written.headers)).toEqual(sync.map((r) => r.written.headers));
      expect(run[1]?.written.body).toBe(sync[1]?.written.body);
    }
  });

  it('a skipped request is let through synchronously, counting and writing nothing', async () => {
    const skipped = await twoRequests({ skip: () => true });
    expect(skipped.map((r) => [r.sync, r.outcome, r.written.decision, r.written.headers])).toEqual([
      [true, 'next', undefined, {}],
      [true, 'next', undefined, {}],
    ]);
  });

  it('never throws nor rejects: a target that throws lets the request through with one logged error', async () => {
    for (const store of [undefined, new AsyncMemoryStore()]) {
      const logger = recordingLogger();
      const handler = createRateLimitHandler<object>({ ...BASE, logger, ...(store === undefined ? {} : { store }) });
      const t = target();
      t.header = () => {
        throw new Error('header write failed');
      };
      const request = {};
      const pending = handler.run({ request, raw: request, remoteAddress: '192.0.2.7', headers: {}, method: 'GET', url: '/' }, t);
      expect(isPromiseLike(pending)).toBe(store !== undefined);
      expect(isPromiseLike(pending) ? await pending : pending).toBe('next');
      expect(logger.errors.filter((l) => l.startsWith('ERR_RL_HANDLER_FAILED'))).toHaveLength(1);
    }
  });

  it('charges one request once, however often the same middleware runs on it', async () => {
    const handler = createRateLimitHandler<object>({ ...BASE, logger: recordingLogger() });
    const request = {};
    const first = target();
    const second = target();
    const input = { request, raw: request, remoteAddress: '192.0.2.7', headers: {}, method: 'GET', url: '/' };
    expect(handler.run(input, first)).toBe('next');
    expect(handler.run(input, second)).toBe('next');
    expect(second.written).toEqual({ headers: {} });
    expect(await handler.limiter.peek('ip:192.0.2.7')).toMatchObject({ remaining: 0 });
  });
});
