/**
 * @module A lease ends with its request whatever happens (issue 25): on Express 4 an async handler that
 * throws never answers (Express 4 does not catch the rejection), and the lease used to be renewed for as
 * long as the connection lived, locking the key. Renewal now stops when the response is gone, so the key
 * is free again at most `leaseMs` after the client left.
 */
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rateLimit } from '@tollgate/express';
import express4 from 'express4';
import { afterEach, describe, expect, it } from 'vitest';

const LEASE_MS = 300;

describe('express 4: an async handler that throws under a concurrency limit of 1', () => {
  let server: Server | undefined;
  const onUnhandled = (): void => undefined;

  afterEach(async () => {
    process.off('unhandledRejection', onUnhandled);
    await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  });

  it('frees the key about leaseMs after the client left, not never', async () => {
    process.on('unhandledRejection', onUnhandled);
    const limit = rateLimit({
      policies: { name: 'one', algorithm: 'concurrency', limit: 1, leaseMs: LEASE_MS },
      key: () => 'k',
    });
    const app = express4();
    app.use(limit);
    // Express 4 leaves this rejection unhandled: the response is never answered.
    app.get('/', async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      throw new Error('handler failed');
    });
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    const { port } = server.address() as AddressInfo;
    const req = httpRequest({ host: '127.0.0.1', port, path: '/' });
    req.on('error', () => undefined);
    req.end();
    // The request holds the lease: the key is full.
    let held = false;
    for (let i = 0; i < 200 && !held; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      held = !(await limit.limiter.peek('k')).allowed;
    }
    expect(held).toBe(true);
    // The client gives up; the lease is renewed no more and expires.
    req.destroy();
    const left = Date.now();
    let free = false;
    while (!free && Date.now() - left < 20 * LEASE_MS) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      free = (await limit.limiter.peek('k')).allowed;
    }
    expect(free).toBe(true);
    expect(Date.now() - left).toBeLessThan(10 * LEASE_MS);
  });
});
