/**
 * @module Issue 9: every permissive trust-proxy setting warns once, in each framework's own spelling
 * (`true`, a large hop count, `() => true`, a CIDR as wide as half the address space), and a setting that
 * trusts only real proxies stays quiet. Real HTTP through the conformance apps.
 */
import type { LogFields, Logger } from '@tollgate/core';
import { formatLine } from '@tollgate/core/adapter';
import express from 'express';
import express4 from 'express4';
import Koa from 'koa';
import Koa2 from 'koa2';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { makeExpressApp } from './express-app.js';
import { makeFastifyApp } from './fastify-app.js';
import { makeKoaApp } from './koa-app.js';
import type { MakeApp, TestApp } from './suite.js';

const FRAMEWORKS: readonly [string, MakeApp, readonly unknown[], readonly unknown[]][] = [
  [
    'express 5',
    makeExpressApp(express),
    [true, 5, () => true, '0.0.0.0/1', '::/1', '128.0.0.0/1'],
    [false, 1, 3, 'loopback', '10.0.0.0/8'],
  ],
  ['express 4', makeExpressApp(express4), [true, 10, () => true, '0.0.0.0/1'], [false, 2, 'loopback, 10.0.0.0/8']],
  // Fastify 5.12 reads a hop count as "trust nothing" (fail closed), so a number is never permissive there.
  [
    'fastify 5',
    makeFastifyApp,
    [true, () => true, '0.0.0.0/1', '128.0.0.0/1', '::/1'],
    [1, 3, 100, 'loopback', '10.0.0.0/8', (a: string) => a === '127.0.0.1'],
  ],
  ['koa 3', makeKoaApp(Koa), [0, 4, 100], [1, 2, 3]],
  ['koa 2', makeKoaApp(Koa2), [0, 10], [1]],
];

function recorder(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    warn: (f: LogFields, m: string) => lines.push(formatLine(f, m)),
    error: (f: LogFields, m: string) => lines.push(formatLine(f, m)),
  };
}

const apps: TestApp[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

describe.each(FRAMEWORKS)('issue 9: permissive trust proxy on %s', (_name, makeApp, permissive, safe) => {
  async function warnings(trustProxy: unknown): Promise<string[]> {
    const logger = recorder();
    const app = await makeApp({ global: { policies: { limit: 100, windowMs: 60_000 }, logger }, trustProxy });
    apps.push(app);
    for (let i = 0; i < 3; i++) await request(app.server).get('/').set('x-forwarded-for', '203.0.113.9').expect(200);
    return logger.lines.filter((l) => l.startsWith('WRN_RL_PERMISSIVE_TRUST_PROXY'));
  }

  it.each(permissive.map((p) => [typeof p === 'function' ? String(p) : JSON.stringify(p), p]))('%s warns once', async (_label, setting) => {
    expect(await warnings(setting)).toHaveLength(1);
  });

  it.each(safe.map((p) => [typeof p === 'function' ? String(p) : JSON.stringify(p), p]))('%s stays quiet', async (_label, setting) => {
    expect(await warnings(setting)).toEqual([]);
  });
});
