/**
 * @module Issue 9: the compat header modes produce express-rate-limit 8's bytes. express-rate-limit and
 * tollgate run side by side in two Express 5 apps on one virtual clock (faked `Date`, which both read);
 * each request goes to both, and the rate-limit header lines (names, values and order, `Date` in legacy
 * mode) must be equal, 429s included, also when the wait of a 429 is under a second. The tollgate side
 * uses the options the README gives for express-rate-limit's numbers:
 * `algorithm: 'fixed-window', anchor: 'first-request'`.
 */
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HeadersOption } from '@tollgate/core';
import { rateLimit } from '@tollgate/express';
import express from 'express';
import { rateLimit as erlRateLimit } from 'express-rate-limit';
import { afterEach, describe, expect, it, vi } from 'vitest';

const T0 = Date.UTC(2026, 10, 30, 12, 0, 0, 250);
const RATE_LIMIT_HEADERS = new Set([
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'ratelimit',
  'ratelimit-policy',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'retry-after',
]);

type ErlConfig = { legacyHeaders: boolean; standardHeaders: false | 'draft-6' | 'draft-7' };
const MODES: readonly [string, ErlConfig, HeadersOption][] = [
  ['legacy', { legacyHeaders: true, standardHeaders: false }, 'legacy'],
  ['draft-6', { legacyHeaders: false, standardHeaders: 'draft-6' }, 'draft-6'],
  ['draft-7', { legacyHeaders: false, standardHeaders: 'draft-7' }, 'draft-7'],
  ['legacy + draft-6', { legacyHeaders: true, standardHeaders: 'draft-6' }, ['legacy', 'draft-6']],
  ['legacy + draft-7', { legacyHeaders: true, standardHeaders: 'draft-7' }, ['legacy', 'draft-7']],
];

/** Offsets from T0 (ms): a burst, a 429 with 600 ms left, one with 1 ms left, the next window, a late one. */
const TRACE = [0, 100, 500, 900, 59_400, 59_999, 60_000, 60_001, 60_999, 61_000, 95_500, 119_999, 120_000, 120_000, 300_123];

const servers: Server[] = [];
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
});

async function listen(app: express.Express): Promise<Server> {
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  servers.push(server);
  return server;
}

/** Status and the rate-limit header lines as sent (raw order); `Date` too when `withDate`. */
function get(server: Server, withDate: boolean): Promise<string[]> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
      const lines = [`status ${res.statusCode}`];
      for (let i = 0; i < res.rawHeaders.length; i += 2) {
        const name = res.rawHeaders[i] as string;
        const lower = name.toLowerCase();
        if (RATE_LIMIT_HEADERS.has(lower) || (withDate && lower === 'date')) lines.push(`${name}: ${res.rawHeaders[i + 1]}`);
      }
      res.resume();
      res.on('end', () => resolve(lines));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('issue 9: express-rate-limit 8 byte compatibility, side by side on one virtual clock', () => {
  it.each(MODES)('%s', async (_name, erl, headers) => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(T0);
    const erlApp = express();
    erlApp.use(erlRateLimit({ windowMs: 60_000, limit: 3, ...erl, validate: false }));
    erlApp.get('/', (_req, res) => res.send('ok'));
    const ours = express();
    ours.use(
      rateLimit({
        policies: { name: 'default', algorithm: 'fixed-window', limit: 3, windowMs: 60_000, anchor: 'first-request' },
        headers,
        clock: () => Date.now(),
      }),
    );
    ours.get('/', (_req, res) => res.send('ok'));
    const [a, b] = await Promise.all([listen(erlApp), listen(ours)]);
    const withDate = erl.legacyHeaders;
    let compared = 0;
    for (const offset of TRACE) {
      vi.setSystemTime(T0 + offset);
      const expected = await get(a, withDate);
      const actual = await get(b, withDate);
      expect(actual, `at +${offset} ms`).toEqual(expected);
      compared += 1;
    }
    expect(compared).toBe(TRACE.length);
  });
});
