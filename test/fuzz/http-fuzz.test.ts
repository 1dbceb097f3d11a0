/**
 * @module Issue 9: fast-check over whole HTTP requests against Express 5 and 4, Fastify and Koa. Each
 * run builds a fresh app with a random valid configuration, then fires a random batch of requests at it
 * concurrently: methods GET/HEAD/OPTIONS/POST, random forwarding headers, keys and costs taken from
 * headers by key/cost/skip functions that may throw, reject, hang past `hookTimeoutMs` or return junk
 * (NaN, objects, 1e13, Infinity), and responses a pre-middleware already started (a 503 from a timeout,
 * a stream). Each run asserts: no unhandled rejection; no 5xx the limiter caused (the only 503 comes
 * from the app's own timeout); a request is cut off only when its response was already streaming; the
 * route runs only for a request the limiter admitted (or skip chose to skip); what each key was admitted
 * never exceeds its capacity (the clock stands still, so nothing refills); the server still answers.
 * `FUZZ_RUNS=200` for a longer run; the default keeps the four frameworks well under a minute.
 */
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PolicyOptions } from '@tollgate/core';
import express from 'express';
import express4 from 'express4';
import fc from 'fast-check';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnyOptions } from '../conformance/suite.js';
import { type MakeFuzzApp, makeExpressFuzzApp, makeFastifyFuzzApp, makeKoaFuzzApp } from './fuzz-apps.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 10);
const T0 = 1_800_000_000_000;
const HOOK_TIMEOUT_MS = 15;

type Mode = 'ok' | 'throw' | 'reject' | 'hang' | 'junk';
interface Req {
  readonly method: 'GET' | 'HEAD' | 'OPTIONS' | 'POST';
  readonly key: string;
  readonly keyMode: Mode;
  readonly cost: string;
  readonly costMode: Mode;
  readonly skipMode: 'no' | 'yes' | 'throw' | 'reject' | 'hang';
  readonly start: 'none' | 'end' | 'stream';
  readonly xff: string | undefined;
  readonly forwarded: string | undefined;
}

const arbReq: fc.Arbitrary<Req> = fc.record({
  method: fc.constantFrom('GET', 'HEAD', 'OPTIONS', 'POST'),
  key: fc.oneof(fc.constantFrom('a', 'b', 'evil\\n WRN_RL_FAKE: forged', 'k'.repeat(300)), fc.string({ maxLength: 20 })),
  keyMode: fc.constantFrom<Mode>('ok', 'ok', 'ok', 'throw', 'reject', 'hang', 'junk'),
  cost: fc.constantFrom('1', '2', '0.5', '3', '0', '-1', 'NaN', 'x', '1e13', 'Infinity', '9007199254740993', '0.0001'),
  costMode: fc.constantFrom<Mode>('ok', 'ok', 'ok', 'throw', 'reject', 'hang', 'junk'),
  skipMode: fc.constantFrom('no', 'no', 'no', 'yes', 'throw', 'reject', 'hang'),
  start: fc.constantFrom('none', 'none', 'none', 'end', 'stream'),
  xff: fc.option(fc.oneof(fc.constantFrom('203.0.113.9', '::1.2.3.4, ::102:304', 'garbage, 10.0.0.1', ''), fc.string({ maxLength: 40 })), {
    nil: undefined,
  }),
  forwarded: fc.option(
    fc.oneof(fc.constantFrom('for=192.0.2.60;proto=http', 'for="[2001:db8::1]:80"', 'for=unknown'), fc.string({ maxLength: 30 })),
    {
      nil: undefined,
    },
  ),
});

interface Config {
  readonly algorithm: NonNullable<PolicyOptions['algorithm']>;
  readonly limit: number;
  readonly headers: AnyOptions['headers'];
  readonly mode: 'enforce' | 'shadow';
}

const arbConfig: fc.Arbitrary<Config> = fc.record({
  algorithm: fc.constantFrom<NonNullable<PolicyOptions['algorithm']>>('fixed-window', 'sliding-log', 'token-bucket', 'gcra'),
  limit: fc.integer({ min: 1, max: 4 }),
  headers: fc.constantFrom<AnyOptions['headers']>('draft-11', 'legacy', 'draft-6', ['legacy', 'draft-7'], false),
  mode: fc.constantFrom<'enforce' | 'shadow'>('enforce', 'enforce', 'enforce', 'shadow'),
});

const never = () => new Promise<never>(() => undefined);
type HasHeaders = { headers: Record<string, string | string[] | undefined> };
const h = (req: HasHeaders, name: string): string => String(req.headers[name] ?? '');

/** Runs the value a header names through the mode the request asks for. */
function behave<T>(mode: string, value: () => T): T | Promise<T> {
  switch (mode) {
    case 'throw':
      throw new Error('callback failed');
    case 'reject':
      return Promise.reject(new Error('callback rejected'));
    case 'hang':
      return never();
    case 'junk':
      return { not: 'a key' } as unknown as T;
    default:
      return value();
  }
}

function optionsFor(config: Config): AnyOptions {
  const quiet = { warn: () => undefined, error: () => undefined };
  return {
    policies: { name: 'p', algorithm: config.algorithm, limit: config.limit, windowMs: 60_000 },
    headers: config.headers,
    mode: config.mode,
    clock: () => T0,
    logger: quiet,
    hookTimeoutMs: HOOK_TIMEOUT_MS,
    key: (req: HasHeaders) => behave(h(req, 'x-key-mode'), () => `k:${h(req, 'x-key')}`),
    cost: (req: HasHeaders) => behave(h(req, 'x-cost-mode'), () => Number(h(req, 'x-cost'))),
    skip: (req: HasHeaders) => {
      const mode = h(req, 'x-skip-mode');
      return behave(mode === 'yes' || mode === 'no' ? 'ok' : mode, () => mode === 'yes');
    },
  };
}

interface Outcome {
  readonly status: number | undefined;
  readonly aborted: boolean;
}

function send(server: Server, r: Req, id: string): Promise<Outcome> {
  const { port } = server.address() as AddressInfo;
  const headers: Record<string, string> = {
    'x-id': id,
    'x-key': encodeURIComponent(r.key),
    'x-key-mode': r.keyMode,
    'x-cost': r.cost,
    'x-cost-mode': r.costMode,
    'x-skip-mode': r.skipMode,
    'x-start': r.start,
  };
  if (r.xff !== undefined) headers['x-forwarded-for'] = r.xff.replace(/[^\x20-\x7e]/g, '');
  if (r.forwarded !== undefined) headers.forwarded = r.forwarded.replace(/[^\x20-\x7e]/g, '');
  return new Promise((resolve) => {
    let status: number | undefined;
    let settled = false;
    const done = (aborted: boolean) => {
      if (settled) return;
      settled = true;
      resolve({ status, aborted });
    };
    const req = httpRequest({ host: '127.0.0.1', port, path: '/x', method: r.method, headers, agent: false, timeout: 5000 }, (res) => {
      status = res.statusCode;
      res.resume();
      res.on('end', () => done(false));
      res.on('aborted', () => done(true));
      res.on('error', () => done(true));
      res.on('close', () => done(!res.complete));
    });
    req.on('timeout', () => req.destroy(new Error('client timeout')));
    req.on('error', () => done(true));
    req.end();
  });
}

const FRAMEWORKS: readonly [string, MakeFuzzApp][] = [
  ['express 5', makeExpressFuzzApp(express)],
  ['express 4', makeExpressFuzzApp(express4)],
  ['fastify 5', makeFastifyFuzzApp],
  ['koa 3', makeKoaFuzzApp(Koa)],
];

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeAll(() => {
  process.on('unhandledRejection', onUnhandled);
});
afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
});

describe.each(FRAMEWORKS)('issue 9 fuzz: whole HTTP requests against %s', (_name, makeApp) => {
  it('survives, never answers a limiter-made 5xx, never admits past the limit', async () => {
    await fc.assert(
      fc.asyncProperty(arbConfig, fc.array(arbReq, { minLength: 1, maxLength: 10 }), async (config, reqs) => {
        const app = await makeApp(optionsFor(config));
        try {
          const outcomes = await Promise.all(reqs.map((r, i) => send(app.server, r, String(i))));
          // Hung callbacks settle (or not) after hookTimeoutMs; give late work a moment to surface.
          await new Promise((r) => setTimeout(r, HOOK_TIMEOUT_MS * 2));
          outcomes.forEach((o, i) => {
            const r = reqs[i] as Req;
            if (o.aborted) expect(r.start, `request ${i} cut off`).toBe('stream');
            else if (r.start !== 'end') expect(o.status, `request ${i}`).toBeLessThan(500);
          });
          const admitted = new Map<string, number>();
          for (const run of app.runs) {
            const r = reqs[Number(run.id)] as Req;
            if (run.decision === undefined) {
              expect(r.skipMode, `route ran without a decision for request ${run.id}`).toBe('yes');
              continue;
            }
            expect(run.decision.allowed).toBe(true);
            if (run.decision.mode === 'shadow') continue;
            admitted.set(run.decision.key, (admitted.get(run.decision.key) ?? 0) + run.decision.cost);
          }
          for (const [key, cost] of admitted) expect(cost, key).toBeLessThanOrEqual(config.limit);
          const plain = await send(
            app.server,
            { ...(reqs[0] as Req), keyMode: 'ok', costMode: 'ok', skipMode: 'yes', start: 'none' },
            'last',
          );
          expect(plain.aborted).toBe(false);
          expect(unhandled).toEqual([]);
        } finally {
          await app.close();
        }
      }),
      { numRuns: RUNS },
    );
  }, 120_000);
});
