/**
 * @module The HTTP load generator, always in its own process: wrk when it is installed (lighter, so
 * it leaves more of the CPU to the server under test), else autocannon (a devDependency).
 */
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

export interface LoadResult {
  readonly requests: number;
  readonly seconds: number;
  readonly rps: number;
  /** Responses with a status outside 2xx (and 3xx for wrk). */
  readonly non2xx: number;
  /** Connection errors and timeouts. */
  readonly errors: number;
}

export interface LoadGenerator {
  readonly name: string;
  run(url: string, seconds: number, connections: number): Promise<LoadResult>;
}

const DURATION = /(\d+) requests in ([\d.]+)(us|ms|s|m)\b/;

/** Parses the report wrk prints. Throws when it has no request count (wrk failed to run). */
export function parseWrk(output: string): LoadResult {
  const m = DURATION.exec(output);
  if (m === null) throw new Error(`wrk printed no results: ${output.trim().slice(0, 300)}`);
  const requests = Number(m[1]);
  const unit = m[3] as 'us' | 'ms' | 's' | 'm';
  const seconds = Number(m[2]) * { us: 1e-6, ms: 1e-3, s: 1, m: 60 }[unit];
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
  const errors = socket === null ? 0 : Number(socket[1]) + Number(socket[2]) + Number(socket[3]) + Number(socket[4]);
  return { requests, seconds, rps: requests / seconds, non2xx, errors };
}

interface AutocannonJson {
  requests: { total: number };
  duration: number;
  non2xx: number;
  errors: number;
  timeouts: number;
}

/** Reads autocannon's `--json` report. */
export function parseAutocannon(output: string): LoadResult {
  const line = output
    .trim()
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('{'));
  if (line === undefined) throw new Error(`autocannon printed no JSON: ${output.trim().slice(0, 300)}`);
  const j = JSON.parse(line) as AutocannonJson;
  return {
    requests: j.requests.total,
    seconds: j.duration,
    rps: j.requests.total / j.duration,
    non2xx: j.non2xx,
    errors: j.errors + j.timeouts,
  };
}

function capture(command: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${command} exited with ${code}: ${out.trim().slice(0, 300)}`)),
    );
  });
}

export function wrkVersion(): string | undefined {
  const r = spawnSync('wrk', ['-v'], { encoding: 'utf8' });
  if (r.error !== undefined) return undefined;
  return /wrk (\S+)/.exec(`${r.stdout}${r.stderr}`)?.[1] ?? 'unknown version';
}

/** `preferred`, or wrk (one thread) when installed, else autocannon run by this Node binary. */
export function pickLoadGenerator(preferred?: 'wrk' | 'autocannon'): LoadGenerator {
  const version = preferred === 'autocannon' ? undefined : wrkVersion();
  if (preferred === 'wrk' && version === undefined) throw new Error('--load wrk: wrk is not installed (Debian: apt-get install wrk)');
  if (version !== undefined) {
    return {
      name: `wrk ${version}`,
      async run(url, seconds, connections) {
        return parseWrk(await capture('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, url]));
      },
    };
  }
  const require = createRequire(import.meta.url);
  const pkg = require('autocannon/package.json') as { version: string };
  const bin = require.resolve('autocannon/autocannon.js');
  return {
    name: `autocannon ${pkg.version}`,
    async run(url, seconds, connections) {
      return parseAutocannon(await capture(process.execPath, [bin, '--json', '-c', String(connections), '-d', String(seconds), url]));
    },
  };
}
