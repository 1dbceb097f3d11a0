/**
 * @module Tests of section C's wire variant: what it copies from a tollgate response, the check that
 * catches a wire server sending something else, and, through real servers of each framework, that the
 * wire app sends what tollgate's adapter sends in both modes.
 */
import { describe, expect, it } from 'vitest';
import { captureWire, FRAMEWORKS, type Mode, startApp } from './http-apps.js';
import { type RawResponse, secondResponse, wireMismatch, wireResponseOf } from './wire-response.js';

const PROBLEM = '{"type":"about:blank","status":429}';

const blocked: RawResponse = {
  status: 429,
  headers: [
    ['X-Powered-By', 'Express'],
    ['RateLimit-Policy', '"default";q=1;w=3600'],
    ['RateLimit', '"default";r=0;t=3600'],
    ['Retry-After', '3600'],
    ['Cache-Control', 'no-store'],
    ['Content-Type', 'application/problem+json'],
    ['Date', 'Sun, 29 Nov 2026 16:24:27 GMT'],
    ['Content-Length', String(PROBLEM.length)],
  ],
  body: PROBLEM,
};

const allowed: RawResponse = {
  status: 200,
  headers: [
    ['RateLimit-Policy', '"default";q=1000000000;w=3600'],
    ['RateLimit', '"default";r=999999999;t=1'],
    ['Content-Type', 'text/plain; charset=utf-8'],
    ['Content-Length', '11'],
  ],
  body: 'hello world',
};

describe('wireResponseOf', () => {
  it("copies a 429's status, its rate-limit fields and Content-Type as sent, and its body", () => {
    expect(wireResponseOf(blocked)).toEqual({
      status: 429,
      headers: [
        ['RateLimit-Policy', '"default";q=1;w=3600'],
        ['RateLimit', '"default";r=0;t=3600'],
        ['Retry-After', '3600'],
        ['Cache-Control', 'no-store'],
        ['Content-Type', 'application/problem+json'],
      ],
      body: PROBLEM,
    });
  });

  it("leaves an admitted request's body and Content-Type to the route", () => {
    expect(wireResponseOf(allowed)).toEqual({
      status: 200,
      headers: [
        ['RateLimit-Policy', '"default";q=1000000000;w=3600'],
        ['RateLimit', '"default";r=999999999;t=1'],
      ],
      body: undefined,
    });
  });
});

describe('wireMismatch', () => {
  it('accepts the same response with other counters and another Date', () => {
    const later: RawResponse = {
      ...blocked,
      headers: blocked.headers.map(([n, v]) =>
        n === 'Date' ? [n, 'Mon, 30 Nov 2026 10:00:00 GMT'] : n === 'RateLimit' ? [n, '"default";r=0;t=3599'] : [n, v],
      ),
    };
    expect(wireMismatch(blocked, later)).toBeUndefined();
  });

  it('names a missing field, another value, another name case, another status and another body', () => {
    const without = { ...blocked, headers: blocked.headers.filter(([n]) => n !== 'Cache-Control') };
    expect(wireMismatch(blocked, without)).toMatch(/Cache-Control: no-store/);
    const charset = {
      ...blocked,
      headers: blocked.headers.map(([n, v]) => (n === 'Content-Type' ? [n, `${v}; charset=utf-8`] : [n, v]) as [string, string]),
    };
    expect(wireMismatch(blocked, charset)).toMatch(/charset/);
    const lower = { ...blocked, headers: blocked.headers.map(([n, v]) => [n.toLowerCase(), v] as [string, string]) };
    expect(wireMismatch(blocked, lower)).toMatch(/ratelimit-policy/);
    expect(wireMismatch(blocked, { ...blocked, status: 503 })).toMatch(/'503'/);
    expect(wireMismatch(blocked, { ...blocked, body: '{}' })).toMatch(/'\{\}'/);
  });
});

describe('wire servers', () => {
  for (const framework of FRAMEWORKS) {
    for (const mode of ['allow', 'block'] as Mode[]) {
      it(`${framework} ${mode}: send what the tollgate server sends`, async () => {
        const captured = await captureWire(framework, mode);
        if (!captured.ok) throw new Error(captured.reason);
        const tollgate = await startApp(framework, 'tollgate', mode);
        const wire = await startApp(framework, 'wire', mode, captured.value);
        if (!tollgate.ok || !wire.ok) throw new Error('a server did not start');
        try {
          const t = await secondResponse(tollgate.value.port);
          const w = await secondResponse(wire.value.port);
          expect(w.status).toBe(mode === 'allow' ? 200 : 429);
          expect(wireMismatch(t, w)).toBeUndefined();
        } finally {
          await tollgate.value.close();
          await wire.value.close();
        }
      });
    }
  }

  it('refuses to start a wire server without a captured response', () => {
    expect(() => startApp('koa', 'wire', 'block')).toThrow(/needs the captured response/);
  });
});
