/**
 * @module tollgate against nginx `limit_req`, from the repository: starts a local nginx (a temporary
 * prefix directory, `daemon off;`, a free loopback port), sends timed requests to three locations
 * (`rate=10r/s` with `burst=5 nodelay`, with no burst, and with `burst=5` delaying), then decides the
 * same arrivals with tollgate (`gcra` for nodelay, `leaky-bucket` for the delaying one) and compares
 * every verdict (nginx 200/503 against admitted/rejected) and every delay.
 *
 * The arrivals are nginx's own: its access log gives each request's start on nginx's clock
 * (`$msec - $request_time`, whole milliseconds of its cached time, the clock `limit_req` reads), so
 * the comparison does not depend on how punctually this process sent them. nginx keeps per key `last`
 * (ms) and `excess` (1/1000 request): `excess = max(0, excess - rate x elapsed / 1000 + 1000)`, a
 * request rejected when `excess > burst`, and delayed `excess / rate` when not `nodelay`; so nginx
 * `burst=N` is tollgate `burst: N + 1` (the request being served plus N in excess).
 *
 * Run it: `node --conditions=@tollgate/source --import tsx packages/cli/scripts/nginx-parity.ts`
 * (`--requests <n>` per location, default 120; `--seed <n>`). packages/cli/src/parity/nginx-parity.test.ts
 * runs it in the suite; docs/algorithms.md quotes its output.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLimiter, type Decision, MemoryStore, type PolicyOptions } from '@tollgate/core';
import { createRandom } from '../src/synthetic/seeded-random.js';

/** One nginx location and the tollgate policy that should decide as it does. */
export interface ParityCase {
  readonly name: string;
  /** The `limit_req` line's parameters after the zone. */
  readonly nginx: string;
  readonly policy: PolicyOptions;
}

export const RATE_PER_SECOND = 10;

export const CASES: readonly ParityCase[] = [
  {
    name: 'burst=5 nodelay',
    nginx: 'burst=5 nodelay',
    policy: { algorithm: 'gcra', limit: RATE_PER_SECOND, windowMs: 1000, burst: 6 },
  },
  { name: 'no burst', nginx: '', policy: { algorithm: 'gcra', limit: RATE_PER_SECOND, windowMs: 1000, burst: 1 } },
  {
    name: 'burst=5 (delaying)',
    nginx: 'burst=5',
    policy: { algorithm: 'leaky-bucket', limit: RATE_PER_SECOND, windowMs: 1000, burst: 6 },
  },
];

export interface CaseResult {
  readonly name: string;
  readonly nginx: string;
  readonly policy: PolicyOptions;
  readonly requests: number;
  readonly nginxAdmitted: number;
  readonly tollgateAdmitted: number;
  /** Requests nginx and tollgate decided differently. */
  readonly mismatches: number;
  /** Admitted requests nginx delayed (the delaying case). */
  readonly delayed: number;
  /**
   * nginx's delay minus tollgate's `delayMs` over the admitted requests of the delaying case, ms: the
   * least and the most. nginx's is measured (`$request_time`), so it includes how late its timer fired.
   */
  readonly delayDiffMs: readonly [number, number];
  /** The first few mismatches: [start ms from the first request, nginx status, tollgate verdict]. */
  readonly samples: readonly (readonly [number, number, string])[];
}

export interface ParityReport {
  readonly nginxVersion: string;
  readonly requests: number;
  readonly cases: readonly CaseResult[];
}

/** The nginx binary: $TOLLGATE_NGINX, /usr/sbin/nginx, or `nginx` on PATH; undefined when none runs. */
export function findNginx(): { path: string; version: string } | undefined {
  for (const path of [process.env.TOLLGATE_NGINX, '/usr/sbin/nginx', 'nginx']) {
    if (path === undefined || path === '') continue;
    const r = spawnSync(path, ['-v'], { encoding: 'utf8' });
    if (r.status === 0) return { path, version: (r.stderr || r.stdout).trim().replace(/^nginx version: /, '') };
  }
  return undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

function config(dir: string, port: number): string {
  const locations = CASES.map(
    // A static file, not `return`: `return` answers in the rewrite phase, before limit_req (preaccess) runs.
    (c, i) => `    location = /c${i} { limit_req zone=parity ${c.nginx}; limit_req_status 503; }`,
  ).join('\n');
  return `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 512; }
http {
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  log_format parity '$uri $arg_k $status $msec $request_time';
  access_log ${dir}/access.log parity;
  limit_req_zone $arg_k zone=parity:1m rate=${RATE_PER_SECOND}r/s;
  limit_req_log_level info;
  server {
    listen 127.0.0.1:${port};
    root ${dir}/www;
${locations}
  }
}
`;
}

/** Send times (ms from the start) for one location: bursts at once, requests at and near the rate, and pauses. */
export function schedule(count: number, seed: number): number[] {
  const r = createRandom(seed);
  const times: number[] = [];
  let t = 0;
  while (times.length < count) {
    const roll = r.next();
    if (roll < 0.2) {
      // A burst: 3 to 9 at once.
      const n = r.int(3, 9);
      for (let i = 0; i < n && times.length < count; i++) times.push(t);
      t += r.int(0, 300);
    } else if (roll < 0.85) {
      times.push(t);
      // Near the rate: 60 to 140 ms apart.
      t += r.int(60, 140);
    } else {
      times.push(t);
      t += r.int(200, 600);
    }
  }
  return times;
}

function get(agent: Agent, port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

async function waitForPort(port: number, child: { exitCode: number | null }, dir: string): Promise<void> {
  const agent = new Agent({ keepAlive: false });
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`nginx exited (${child.exitCode}): ${readLog(join(dir, 'error.log'))}`);
    try {
      await get(agent, port, '/ready');
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`nginx did not answer on 127.0.0.1:${port}: ${readLog(join(dir, 'error.log'))}`);
}

function readLog(path: string): string {
  return existsSync(path) ? readFileSync(path, 'utf8').slice(-2000) : '(no log)';
}

interface Logged {
  readonly at: number;
  readonly status: number;
  readonly delayMs: number;
}

/** Runs the comparison: `requests` per location, sent on the seeded schedule. */
export async function runNginxParity(options: { requests?: number; seed?: number; nginx?: string } = {}): Promise<ParityReport> {
  const found = options.nginx === undefined ? findNginx() : { path: options.nginx, version: 'given' };
  if (found === undefined) throw new Error('nginx not found (apt-get install nginx, or set TOLLGATE_NGINX)');
  const count = options.requests ?? 120;
  const seed = options.seed ?? 1;
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-nginx-'));
  const port = await freePort();
  writeFileSync(join(dir, 'nginx.conf'), config(dir, port));
  mkdirSync(join(dir, 'www'));
  for (let i = 0; i < CASES.length; i++) writeFileSync(join(dir, 'www', `c${i}`), 'ok\n');
  const child = spawn(found.path, ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  try {
    await waitForPort(port, child, dir);
    // One key per location and run: every location starts from a fresh nginx node and a fresh tollgate key.
    const key = (i: number) => `s${seed}c${i}`;
    const agent = new Agent({ keepAlive: true, maxSockets: 256 });
    const sends: Promise<number>[] = [];
    const t0 = performance.now() + 50;
    await Promise.all(
      CASES.map(async (_, i) => {
        const times = schedule(count, seed * 101 + i);
        for (const at of times) {
          const wait = t0 + at - performance.now();
          if (wait > 1) await new Promise((r) => setTimeout(r, wait));
          sends.push(get(agent, port, `/c${i}?k=${key(i)}`));
        }
      }),
    );
    await Promise.all(sends);
    agent.destroy();
    // nginx writes the log line when each request ends; give the last ones a moment.
    await new Promise((r) => setTimeout(r, 200));
    const logged = new Map<string, Logged[]>();
    for (const line of readFileSync(join(dir, 'access.log'), 'utf8').split('\n')) {
      const m = /^\/c(\d+) (\S+) (\d+) (\d+)\.(\d{3}) (\d+)\.(\d{3})$/.exec(line);
      if (m === null) continue;
      const [, c, k, status, s, ms, rs, rms] = m as unknown as string[];
      if (k !== key(Number(c))) continue;
      const end = Number(s) * 1000 + Number(ms);
      const took = Number(rs) * 1000 + Number(rms);
      const list = logged.get(c as string) ?? [];
      list.push({ at: end - took, status: Number(status), delayMs: took });
      logged.set(c as string, list);
    }
    const cases = CASES.map((c, i): CaseResult => {
      // Sorted by nginx's start time. The log is written at each request's end, so requests of one
      // millisecond are not in the order nginx decided them; they are interchangeable (one key, cost 1),
      // and within a millisecond nginx's excess only grows: those it admitted came first, the less delayed first.
      const list = (logged.get(String(i)) ?? [])
        .slice()
        .sort((a, b) => a.at - b.at || (a.status === 200 ? 0 : 1) - (b.status === 200 ? 0 : 1) || a.delayMs - b.delayMs);
      if (list.length !== count) throw new Error(`nginx logged ${list.length} of ${count} requests for ${c.name}`);
      let now = 0;
      const limiter = createLimiter({ policies: c.policy, store: new MemoryStore({ sweepIntervalMs: 0 }), clock: () => now });
      let nginxAdmitted = 0;
      let tollgateAdmitted = 0;
      let mismatches = 0;
      let delayed = 0;
      let minDiff = Number.POSITIVE_INFINITY;
      let maxDiff = Number.NEGATIVE_INFINITY;
      const samples: [number, number, string][] = [];
      const first = list[0]?.at ?? 0;
      for (const r of list) {
        now = r.at;
        const d = limiter.decide('k') as Decision;
        const admitted = r.status === 200;
        if (admitted) nginxAdmitted++;
        if (d.allowed) tollgateAdmitted++;
        if (admitted !== d.allowed) {
          mismatches++;
          if (samples.length < 5) samples.push([r.at - first, r.status, d.allowed ? `admitted (delay ${d.delayMs})` : 'rejected']);
        } else if (admitted && c.policy.algorithm === 'leaky-bucket') {
          if (r.delayMs > 0 || d.delayMs > 0) delayed++;
          minDiff = Math.min(minDiff, r.delayMs - d.delayMs);
          maxDiff = Math.max(maxDiff, r.delayMs - d.delayMs);
        }
      }
      return {
        name: c.name,
        nginx: c.nginx,
        policy: c.policy,
        requests: list.length,
        nginxAdmitted,
        tollgateAdmitted,
        mismatches,
        delayed,
        delayDiffMs: delayed === 0 ? [0, 0] : [minDiff, maxDiff],
        samples,
      };
    });
    return { nginxVersion: found.version, requests: count * CASES.length, cases };
  } finally {
    child.kill('SIGTERM');
    await new Promise<void>((resolve) => {
      if (child.exitCode !== null) resolve();
      else child.once('exit', () => resolve());
    });
    if (child.exitCode !== 0 && child.exitCode !== null && stderr !== '') process.stderr.write(stderr);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The report as the lines docs/algorithms.md quotes. */
export function formatParity(report: ParityReport): string {
  const lines = [`nginx ${report.nginxVersion}, limit_req rate=${RATE_PER_SECOND}r/s, ${report.requests} timed requests:`];
  for (const c of report.cases) {
    lines.push(
      `  ${c.name.padEnd(20)} ${String(c.requests).padStart(4)} requests: nginx admitted ${c.nginxAdmitted}, tollgate ${c.tollgateAdmitted}, ` +
        `${c.mismatches} decisions differ${c.delayed > 0 ? `; ${c.delayed} delayed, nginx's delay minus tollgate's ${c.delayDiffMs[0]} to ${c.delayDiffMs[1]} ms` : ''}`,
    );
    for (const s of c.samples) lines.push(`    differs at +${s[0]} ms: nginx ${s[1]}, tollgate ${s[2]}`);
  }
  return lines.join('\n');
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const arg = (name: string): number | undefined => {
    const i = process.argv.indexOf(`--${name}`);
    return i < 0 ? undefined : Number(process.argv[i + 1]);
  };
  const requests = arg('requests');
  const seed = arg('seed');
  runNginxParity({ ...(requests === undefined ? {} : { requests }), ...(seed === undefined ? {} : { seed }) }).then(
    (report) => {
      console.log(formatParity(report));
      process.exitCode = report.cases.some((c) => c.mismatches > 0) ? 1 : 0;
    },
    (error: unknown) => {
      console.error(String(error));
      process.exitCode = 2;
    },
  );
}
