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
  /**
   * Disagreements that start at a millisecond boundary: tollgate decides as nginx did 1 ms later or
   * earlier. nginx's limit_req reads a monotonic millisecond clock, the log gives wall-clock milliseconds,
   * and the two truncate at different points of the millisecond, so an elapsed time can read 1 ms apart.
   * The requests that follow one, until both have admitted as many, are its consequence, not counted here.
   */
  readonly boundaryMismatches: number;
  /** Disagreements that start anywhere else: a real difference. */
  readonly unexplainedMismatches: number;
  /** What nginx's error log (info) says it decided: delays (`delaying request`) and rejections (`limiting requests`). */
  readonly nginxLogged: { readonly delayed: number; readonly limited: number };
  /**
   * nginx's decided delays (`excess x 1000 / rate`, truncated, from its error log) against tollgate's
   * `delayMs`, both sorted: how many differ by more than 1 ms, and the largest difference.
   */
  readonly delaysOver1Ms: number;
  readonly delayDiffMax: number;
  /**
   * nginx's measured delay (`$request_time`) minus tollgate's `delayMs` over requests both admitted, ms:
   * the least and the most. It includes how late nginx's timer fired, so it grows with the machine's load.
   */
  readonly measuredDelayDiffMs: readonly [number, number];
  /** The first few disagreements: [start ms from the first request, nginx status, tollgate verdict]. */
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
error_log ${dir}/error.log info;
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

function newLimiter(policy: PolicyOptions): { decide(at: number): Decision } {
  let now = 0;
  const limiter = createLimiter({ policies: policy, store: new MemoryStore({ sweepIntervalMs: 0 }), clock: () => now });
  return {
    decide(at) {
      now = at;
      return limiter.decide('k') as Decision;
    },
  };
}

/**
 * True when tollgate, on the same history, decides request `index` as nginx did had it come 1 ms later
 * (tollgate rejected it) or 1 ms earlier (tollgate admitted it): a verdict at a millisecond boundary.
 */
function flipsWithin1Ms(policy: PolicyOptions, list: readonly Logged[], index: number, allowed: boolean): boolean {
  const fresh = newLimiter(policy);
  for (let j = 0; j < index; j++) fresh.decide((list[j] as Logged).at);
  return fresh.decide((list[index] as Logged).at + (allowed ? -1 : 1)).allowed !== allowed;
}

/**
 * Pairs two sorted lists of delays: how many differ by more than 1 ms, and the largest difference of a
 * pair. A delay of 1 ms on one side may have no partner: nginx logs only delays of at least 1 ms after
 * truncating, and its millisecond can read 1 ms apart from the log's (see `boundaryMismatches`).
 */
export function compareDelays(nginx: readonly number[], tollgate: readonly number[]): { over1Ms: number; max: number } {
  let i = 0;
  let j = 0;
  let over1Ms = 0;
  let max = 0;
  while (i < nginx.length || j < tollgate.length) {
    const a = nginx[i];
    const b = tollgate[j];
    if (a !== undefined && b !== undefined && Math.abs(a - b) <= 1) {
      max = Math.max(max, Math.abs(a - b));
      i++;
      j++;
    } else if (a !== undefined && a <= 1 && (b === undefined || a < b)) i++;
    else if (b !== undefined && b <= 1 && (a === undefined || b < a)) j++;
    else {
      // A pair more than 1 ms apart, or a delay with no partner.
      over1Ms++;
      if (a !== undefined && b !== undefined) max = Math.max(max, Math.abs(a - b));
      if (a !== undefined) i++;
      if (b !== undefined) j++;
    }
  }
  return { over1Ms, max };
}

/** nginx's verdicts and delays for one location against tollgate's on the same arrivals. */
function compareCase(c: ParityCase, logged: readonly Logged[], fromLog: { delays: number[]; limited: number }): CaseResult {
  // Sorted by nginx's start time. The log is written at each request's end, so requests of one
  // millisecond are not in the order nginx decided them; they are interchangeable (one key, cost 1),
  // and within a millisecond nginx's excess only grows: those it admitted came first, the less delayed first.
  const list = logged
    .slice()
    .sort((a, b) => a.at - b.at || (a.status === 200 ? 0 : 1) - (b.status === 200 ? 0 : 1) || a.delayMs - b.delayMs);
  const limiter = newLimiter(c.policy);
  let nginxAdmitted = 0;
  let tollgateAdmitted = 0;
  let mismatches = 0;
  let boundary = 0;
  let unexplained = 0;
  const samples: [number, number, string][] = [];
  const tollgateDelays: number[] = [];
  let minDiff = Number.POSITIVE_INFINITY;
  let maxDiff = Number.NEGATIVE_INFINITY;
  const first = list[0]?.at ?? 0;
  list.forEach((r, index) => {
    const d = limiter.decide(r.at);
    const admitted = r.status === 200;
    // An episode of disagreement is open while the two have admitted different totals.
    const open = nginxAdmitted !== tollgateAdmitted;
    if (admitted) nginxAdmitted++;
    if (d.allowed) tollgateAdmitted++;
    if (admitted !== d.allowed) {
      mismatches++;
      if (!open) {
        if (flipsWithin1Ms(c.policy, list, index, d.allowed)) boundary++;
        else unexplained++;
      }
      if (samples.length < 5)
        samples.push([r.at - first, r.status, d.allowed ? `admitted (delay ${d.delayMs})` : `rejected (retry after ${d.retryAfterMs} ms)`]);
    }
    if (d.allowed && d.delayMs > 0) tollgateDelays.push(d.delayMs);
    if (admitted && d.allowed && c.policy.algorithm === 'leaky-bucket') {
      minDiff = Math.min(minDiff, r.delayMs - d.delayMs);
      maxDiff = Math.max(maxDiff, r.delayMs - d.delayMs);
    }
  });
  const nginxDelays = [...fromLog.delays].sort((a, b) => a - b);
  tollgateDelays.sort((a, b) => a - b);
  const { over1Ms: delaysOver1Ms, max: delayDiffMax } = compareDelays(nginxDelays, tollgateDelays);
  return {
    name: c.name,
    nginx: c.nginx,
    policy: c.policy,
    requests: list.length,
    nginxAdmitted,
    tollgateAdmitted,
    mismatches,
    boundaryMismatches: boundary,
    unexplainedMismatches: unexplained,
    nginxLogged: { delayed: fromLog.delays.length, limited: fromLog.limited },
    delaysOver1Ms,
    delayDiffMax,
    measuredDelayDiffMs: minDiff === Number.POSITIVE_INFINITY ? [0, 0] : [minDiff, maxDiff],
    samples,
  };
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
    // nginx writes the access log line after it answered, so the client may be ahead of it: read until
    // every request is there (a few seconds at most on a loaded machine).
    const logged = await accessLog(join(dir, 'access.log'), key, count * CASES.length);
    // nginx's own decisions, in the order it made them, with the excess it computed (info level).
    const decided = new Map<string, { delays: number[]; limited: number }>();
    for (const line of readFileSync(join(dir, 'error.log'), 'utf8').split('\n')) {
      const m =
        /(delaying request|limiting requests), excess: (\d+)\.(\d{3}),? by zone "parity".*request: "GET \/c(\d+)\?k=(\S+) HTTP/.exec(line);
      if (m === null) continue;
      const [, what, whole, milli, c, k] = m as unknown as string[];
      if (k !== key(Number(c))) continue;
      const entry = decided.get(c as string) ?? { delays: [], limited: 0 };
      const excess = Number(whole) * 1000 + Number(milli);
      if (what === 'delaying request') entry.delays.push(Math.floor((excess * 1000) / (RATE_PER_SECOND * 1000)));
      else entry.limited++;
      decided.set(c as string, entry);
    }
    const cases = CASES.map((c, i): CaseResult => {
      const list = logged.get(String(i)) ?? [];
      if (list.length !== count) throw new Error(`nginx logged ${list.length} of ${count} requests for ${c.name}`);
      return compareCase(c, list, decided.get(String(i)) ?? { delays: [], limited: 0 });
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

/**
 * The access log's lines of this run (`key(case)` per case) by case, read again until it holds `expected`
 * of them or 5 s have passed (the caller then finds the case that is short).
 */
async function accessLog(path: string, key: (i: number) => string, expected: number): Promise<Map<string, Logged[]>> {
  const deadline = performance.now() + 5_000;
  for (;;) {
    const logged = new Map<string, Logged[]>();
    let n = 0;
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      const m = /^\/c(\d+) (\S+) (\d+) (\d+)\.(\d{3}) (\d+)\.(\d{3})$/.exec(line);
      if (m === null) continue;
      const [, c, k, status, s, ms, rs, rms] = m as unknown as string[];
      if (k !== key(Number(c))) continue;
      const end = Number(s) * 1000 + Number(ms);
      const took = Number(rs) * 1000 + Number(rms);
      const list = logged.get(c as string) ?? [];
      list.push({ at: end - took, status: Number(status), delayMs: took });
      logged.set(c as string, list);
      n++;
    }
    if (n >= expected || performance.now() > deadline) return logged;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The report as the lines docs/algorithms.md quotes. */
export function formatParity(report: ParityReport): string {
  const lines = [`nginx ${report.nginxVersion}, limit_req rate=${RATE_PER_SECOND}r/s, ${report.requests} timed requests:`];
  for (const c of report.cases) {
    lines.push(
      `  ${c.name.padEnd(20)} ${String(c.requests).padStart(4)} requests: nginx admitted ${c.nginxAdmitted}, tollgate ${c.tollgateAdmitted}; ` +
        `${c.mismatches} decisions differ (${c.boundaryMismatches} at a 1 ms boundary, ${c.unexplainedMismatches} otherwise)` +
        (c.nginxLogged.delayed > 0
          ? `; ${c.nginxLogged.delayed} delayed, delays within ${c.delayDiffMax} ms (${c.delaysOver1Ms} over 1 ms; measured, nginx's timer fired ${c.measuredDelayDiffMs[0]} to ${c.measuredDelayDiffMs[1]} ms late)`
          : ''),
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
      process.exitCode = report.cases.some((c) => c.unexplainedMismatches > 0 || c.delaysOver1Ms > 0) ? 1 : 0;
    },
    (error: unknown) => {
      console.error(String(error));
      process.exitCode = 2;
    },
  );
}
