/**
 * @module Section C: for each framework and mode, starts the bare, wire, tollgate and peer servers (one
 * process each), checks each answers as the mode expects (and that wire sends what tollgate sends),
 * warms them up, then runs short load rounds alternated bare, wire, tollgate, peer, bare, ... with the
 * load generator in its own process. Each variant's ratio is taken to bare in the same round, and
 * tollgate's also to wire; the report gives the median of those ratios.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { BENCH_DIR, baseFlags, PROFILE_DIR } from '../child-process.js';
import type { HttpGroup, HttpVariantResult, Missing } from '../results.js';
import { median } from '../stats.js';
import { ADAPTERS, FRAMEWORKS, type Framework, type Mode, PEERS, type Variant } from './http-apps.js';
import type { HttpServerInput, HttpServerMessage } from './http-server.js';
import type { LoadGenerator, LoadResult } from './load-generator.js';
import { type RawResponse, secondResponse, wireMismatch } from './wire-response.js';

export interface HttpSectionOptions {
  readonly frameworks: readonly Framework[];
  readonly modes: readonly Mode[];
  readonly rounds: number;
  readonly roundSeconds: number;
  readonly warmupSeconds: number;
  readonly connections: number;
  readonly load: LoadGenerator;
  readonly only: RegExp | undefined;
  readonly profile: boolean;
  readonly log: (line: string) => void;
}

const SERVER = join(BENCH_DIR, 'src', 'http', 'http-server.ts');
const VARIANTS: readonly Variant[] = ['bare', 'wire', 'tollgate', 'peer'];

interface Server {
  readonly variant: Variant;
  readonly port: number;
  readonly child: ChildProcess;
}

function label(framework: Framework, variant: Variant): string {
  if (variant === 'bare') return `bare ${framework}`;
  if (variant === 'wire') return `wire: bare ${framework} sending tollgate's response`;
  return variant === 'tollgate' ? ADAPTERS[framework] : PEERS[framework];
}

function startServer(input: HttpServerInput, profile: boolean): Promise<Server | Missing> {
  const flags = baseFlags();
  if (profile) {
    flags.push(
      '--cpu-prof',
      '--cpu-prof-dir',
      PROFILE_DIR,
      '--cpu-prof-name',
      `C_${input.framework}_${input.variant}_${input.mode}-${Date.now()}.cpuprofile`,
    );
  }
  return new Promise((resolve) => {
    const child = fork(SERVER, [JSON.stringify(input)], {
      cwd: BENCH_DIR,
      execArgv: flags,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve({ status: 'failed', reason: 'the server did not start within 30 s' });
    }, 30_000);
    child.once('message', (m: HttpServerMessage) => {
      clearTimeout(timer);
      if (m.type === 'listening') resolve({ variant: input.variant, port: m.port, child });
      else
        resolve(
          m.type === 'unavailable'
            ? { status: 'not available', reason: m.reason }
            : { status: 'failed', reason: m.message.split('\n')[0] ?? '' },
        );
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ status: 'failed', reason: `the server exited (${code}) before listening` });
    });
  });
}

function stopServer(s: Server): Promise<void> {
  return new Promise((resolve) => {
    if (s.child.exitCode !== null) {
      resolve();
      return;
    }
    s.child.once('exit', () => resolve());
    s.child.kill('SIGTERM');
  });
}

/** Two requests: the second must be 200 in allow mode and 429 in block mode. */
async function check(port: number, mode: Mode, variant: Variant): Promise<{ problem: string | undefined; response: RawResponse }> {
  const response = await secondResponse(port);
  const expected = mode === 'allow' || variant === 'bare' ? 200 : 429;
  return {
    problem: response.status === expected ? undefined : `expected status ${expected} on the second request, got ${response.status}`,
    response,
  };
}

function unexpectedOf(r: LoadResult, mode: Mode, variant: Variant): number {
  const blocking = mode === 'block' && variant !== 'bare';
  return r.errors + (blocking ? r.requests - r.non2xx : r.non2xx);
}

async function runGroup(framework: Framework, mode: Mode, o: HttpSectionOptions): Promise<HttpGroup> {
  const started = new Map<Variant, Server | Missing>();
  const servers: Server[] = [];
  const responses = new Map<Variant, RawResponse>();
  try {
    const all = await Promise.all(VARIANTS.map((variant) => startServer({ framework, variant, mode }, o.profile)));
    for (const [i, variant] of VARIANTS.entries()) {
      const s = all[i] as Server | Missing;
      started.set(variant, s);
      if ('port' in s) {
        const { problem, response } = await check(s.port, mode, variant);
        responses.set(variant, response);
        if (problem === undefined) servers.push(s);
        else {
          started.set(variant, { status: 'failed', reason: problem });
          await stopServer(s);
        }
      }
    }
    const wire = servers.find((s) => s.variant === 'wire');
    const tollgateResponse = responses.get('tollgate');
    const wireResponse = responses.get('wire');
    if (wire !== undefined && tollgateResponse !== undefined && wireResponse !== undefined) {
      const problem = wireMismatch(tollgateResponse, wireResponse);
      if (problem !== undefined) {
        started.set('wire', { status: 'failed', reason: problem });
        servers.splice(servers.indexOf(wire), 1);
        await stopServer(wire);
      }
    }
    if (!servers.some((s) => s.variant === 'bare')) {
      const bare = started.get('bare') as Missing;
      return { framework, mode, variants: [], error: `bare ${framework} did not run: ${bare.reason}` };
    }
    for (const s of servers) await o.load.run(`http://127.0.0.1:${s.port}/`, o.warmupSeconds, o.connections);
    const rounds: Map<Variant, LoadResult>[] = [];
    for (let r = 0; r < o.rounds; r++) {
      const round = new Map<Variant, LoadResult>();
      for (const s of servers) round.set(s.variant, await o.load.run(`http://127.0.0.1:${s.port}/`, o.roundSeconds, o.connections));
      rounds.push(round);
    }
    const variants: HttpVariantResult[] = VARIANTS.map((variant) => {
      const s = started.get(variant);
      const base = { variant, label: label(framework, variant) };
      if (s === undefined || !('port' in s)) {
        return {
          ...base,
          missing: s ?? { status: 'failed', reason: 'not started' },
          rps: Number.NaN,
          ratios: [],
          ratio: Number.NaN,
          ratiosToWire: [],
          ratioToWire: Number.NaN,
          unexpected: 0,
          requests: 0,
        };
      }
      const results = rounds.map((round) => round.get(variant) as LoadResult);
      const ratios = rounds.map((round) => (round.get(variant) as LoadResult).rps / (round.get('bare') as LoadResult).rps);
      const ratiosToWire =
        variant === 'tollgate' && servers.some((x) => x.variant === 'wire')
          ? rounds.map((round) => (round.get(variant) as LoadResult).rps / (round.get('wire') as LoadResult).rps)
          : [];
      return {
        ...base,
        missing: undefined,
        rps: median(results.map((x) => x.rps)),
        ratios,
        ratio: median(ratios),
        ratiosToWire,
        ratioToWire: ratiosToWire.length === 0 ? Number.NaN : median(ratiosToWire),
        unexpected: results.reduce((sum, x) => sum + unexpectedOf(x, mode, variant), 0),
        requests: results.reduce((sum, x) => sum + x.requests, 0),
      };
    });
    return { framework, mode, variants, error: undefined };
  } catch (error) {
    return { framework, mode, variants: [], error: (error as Error).message };
  } finally {
    for (const s of servers) await stopServer(s);
  }
}

export async function runHttpSection(o: HttpSectionOptions): Promise<HttpGroup[]> {
  const groups: HttpGroup[] = [];
  for (const framework of FRAMEWORKS.filter((f) => o.frameworks.includes(f))) {
    for (const mode of o.modes) {
      const id = `C/${framework}/${mode}`;
      if (o.only !== undefined && !o.only.test(id)) continue;
      const g = await runGroup(framework, mode, o);
      groups.push(g);
      if (g.error !== undefined) o.log(`${id}: FAILED ${g.error}`);
      else {
        o.log(
          `${id}: ${g.variants
            .map((v) =>
              v.missing === undefined
                ? `${v.variant} ${Math.round(v.rps)} rps (x${v.ratio.toFixed(3)}${v.ratiosToWire.length > 0 ? `, x${v.ratioToWire.toFixed(3)} of wire` : ''})`
                : `${v.variant} ${v.missing.status}`,
            )
            .join(', ')}`,
        );
      }
    }
  }
  return groups;
}
