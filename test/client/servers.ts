/**
 * @module Test support for the @tollgate/client suites: the three kinds of rate-limited server the
 * client meets, each started on a free loopback port: a tollgate Express app (draft-11 `RateLimit` and
 * `Retry-After`), an express-rate-limit app (legacy `X-RateLimit-*` or draft-7 `RateLimit`), and nginx
 * `limit_req` (503s with no header at all) run from a temporary prefix with `daemon off`. Every server
 * records when each request arrived and whether it was admitted, for the suites' per-second counts.
 * Without nginx on this machine the nginx suite says so loudly and skips, unless
 * `TOLLGATE_REQUIRE_NGINX=1` (set by `.ci/run`), which makes the skip a failure.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PolicyOptions } from '@tollgate/core';
import { rateLimit as tollgate } from '@tollgate/express';
import express from 'express';
import { rateLimit as erl } from 'express-rate-limit';
import { freeLoopbackPort as freePort } from '../support/free-port.js';
import { describeWith, type RequiredTool, versionOf } from '../support/required-tool.js';

export const HOST = '127.0.0.1';

/** What a server saw: arrival times of every request and of the admitted ones (ms, performance clock). */
export interface Seen {
  readonly received: number[];
  readonly admitted: number[];
}

export interface TestServer {
  readonly url: string;
  readonly seen: Seen;
  close(): Promise<void>;
}

async function listen(app: express.Express, seen: Seen): Promise<TestServer> {
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, HOST, () => resolve(s));
  });
  server.keepAliveTimeout = 60_000;
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://${HOST}:${port}`,
    seen,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function recording(seen: Seen): express.Express {
  const app = express();
  // Not counted, not limited: lets a suite open its connections and warm the JIT before it measures.
  app.get('/__warm', (_req, res) => {
    res.end();
  });
  app.use((_req, _res, next) => {
    seen.received.push(performance.now());
    next();
  });
  return app;
}

/** The handler behind the limiter; it stamps admissions itself unless the limiter does (`stamp: false`). */
function ok(seen: Seen, stamp = true): express.RequestHandler {
  return (_req, res) => {
    if (stamp) seen.admitted.push(performance.now());
    res.json({ ok: true });
  };
}

/**
 * A tollgate Express app limiting every request from loopback under `policies` (draft-11 headers); a
 * request's cost is its `x-cost` header (default 1).
 */
export function startTollgate(policies: PolicyOptions | PolicyOptions[]): Promise<TestServer> {
  const seen: Seen = { received: [], admitted: [] };
  const app = recording(seen);
  app.use(
    tollgate({
      policies,
      cost: (req) => Number(req.headers['x-cost'] ?? 1),
      // Stamped when the limiter decides, not when the handler runs later, so that the per-second
      // counts measure the limiter and not the event loop's delays on a loaded machine.
      onDecision: (decision) => {
        if (decision.allowed) seen.admitted.push(performance.now());
      },
    }),
  );
  app.all('/{*path}', ok(seen, false));
  return listen(app, seen);
}

/** An express-rate-limit 8 app: `limit` per `windowMs`, legacy `X-RateLimit-*` headers or draft-7 `RateLimit`. */
export function startErl(limit: number, windowMs: number, dialect: 'legacy' | 'draft-7'): Promise<TestServer> {
  const seen: Seen = { received: [], admitted: [] };
  const app = recording(seen);
  app.use(
    dialect === 'legacy'
      ? erl({ windowMs, limit, legacyHeaders: true, standardHeaders: false })
      : erl({ windowMs, limit, legacyHeaders: false, standardHeaders: 'draft-7' }),
  );
  app.all('/{*path}', ok(seen));
  return listen(app, seen);
}

/** Opens `connections` keep-alive connections to `server` (global fetch's pool) and warms both ends up. */
export async function warmUp(server: TestServer, connections: number): Promise<void> {
  await Promise.all(Array.from({ length: connections }, async () => (await fetch(`${server.url}/__warm`)).arrayBuffer()));
}

/** The most timestamps in any left-open window (t - windowMs, t]. */
export function maxInWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let max = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi++) {
    while ((sorted[lo] as number) <= (sorted[hi] as number) - windowMs) lo++;
    max = Math.max(max, hi - lo + 1);
  }
  return max;
}

const NGINX = process.env.TOLLGATE_NGINX ?? (spawnSync('nginx', ['-v']).status === 0 ? 'nginx' : '/usr/sbin/nginx');

/** `nginx -v` (it prints to stderr), or undefined when nginx cannot be run. */
export const nginxVersion: string | undefined = versionOf(NGINX, ['-v']);

const NGINX_TOOL: RequiredTool = {
  label: 'nginx',
  command: NGINX,
  version: nginxVersion,
  requireVar: 'TOLLGATE_REQUIRE_NGINX',
  install: 'apt-get install nginx',
};

/** `describe` that runs only with nginx: skipped loudly without it, failed under TOLLGATE_REQUIRE_NGINX=1. */
export function describeNginx(name: string, fn: () => void): void {
  describeWith(NGINX_TOOL, name, fn);
}

/**
 * nginx in front of nothing: `limit_req zone=... rate=<rate>` on `/`, whose admitted requests get a
 * 200 from nginx itself; refused ones get nginx's default 503 with no rate-limit header. Its access log
 * gives the suites what the server saw.
 */
export async function startNginx(rate: string, burst: number): Promise<TestServer & { log(): Promise<string> }> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-nginx-'));
  mkdirSync(join(dir, 'www'));
  writeFileSync(join(dir, 'www', 'n'), 'ok');
  // nginx started as root serves files as its unprivileged worker user: let it read them.
  chmodSync(dir, 0o755);
  chmodSync(join(dir, 'www'), 0o755);
  chmodSync(join(dir, 'www', 'n'), 0o644);
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    writeFileSync(
      join(dir, 'nginx.conf'),
      [
        'daemon off;',
        'worker_processes 1;',
        `pid ${join(dir, 'nginx.pid')};`,
        `error_log ${join(dir, 'error.log')} warn;`,
        'events { worker_connections 1024; }',
        'http {',
        `  access_log ${join(dir, 'access.log')};`,
        `  client_body_temp_path ${join(dir, 'body')};`,
        `  proxy_temp_path ${join(dir, 'proxy')};`,
        `  fastcgi_temp_path ${join(dir, 'fastcgi')};`,
        `  uwsgi_temp_path ${join(dir, 'uwsgi')};`,
        `  scgi_temp_path ${join(dir, 'scgi')};`,
        `  limit_req_zone $binary_remote_addr zone=api:1m rate=${rate};`,
        `  server {`,
        `    listen ${HOST}:${port};`,
        '    location = /__up { return 204; }',
        // A static file, not `return 200`: `return` runs in the rewrite phase, before limit_req would.
        `    location / { limit_req zone=api${burst > 0 ? ` burst=${burst} nodelay` : ''}; root ${join(dir, 'www')}; }`,
        '  }',
        '}',
        '',
      ].join('\n'),
    );
    const child: ChildProcess = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr?.on('data', (c) => {
      stderr += c.toString();
    });
    const up = await waitUntilUp(`http://${HOST}:${port}/`, child);
    if (!up) {
      child.kill('SIGKILL');
      if (attempt < 3) continue;
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`nginx did not start: ${stderr}`);
    }
    return {
      url: `http://${HOST}:${port}`,
      seen: { received: [], admitted: [] },
      log: async () => (await import('node:fs/promises')).readFile(join(dir, 'access.log'), 'utf8'),
      close: async () => {
        await new Promise<void>((resolve) => {
          if (child.exitCode !== null) resolve();
          else {
            child.once('exit', () => resolve());
            child.kill('SIGQUIT');
          }
        });
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
}

async function waitUntilUp(url: string, child: ChildProcess): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) return false;
    try {
      await fetch(`${url}__up`);
      return true;
    } catch {
      await new Promise((r) => setTimeout(r, 30));
    }
  }
  return false;
}
