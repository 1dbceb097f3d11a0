/**
 * @module A Redis Sentinel setup for the Sentinel suite: a master and a replica (harness.ts's
 * redis-server processes) watched by one `redis-sentinel` on a free loopback port, in a temporary
 * directory (Sentinel rewrites its configuration file). Where `redis-sentinel` is missing the suite says
 * so loudly and skips, unless `TOLLGATE_REQUIRE_SENTINEL=1` (set by `.ci/run`), which turns the skip into
 * a failure.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freeLoopbackPort as freePort } from '../../support/free-port.js';
import { describeWith, type RequiredTool, versionOf } from '../../support/required-tool.js';
import { describeRedis, HOST, infoField, type RedisServer, startRedis, waitFor } from './harness.js';

const SENTINEL = process.env.REDIS_SENTINEL ?? 'redis-sentinel';
/** The name the sentinel monitors the master under. */
export const MASTER_NAME = 'tollgate';

/** `redis-sentinel --version`, or undefined when it cannot be run. */
export const sentinelVersion: string | undefined = versionOf(SENTINEL);

const SENTINEL_TOOL: RequiredTool = {
  label: 'redis-sentinel',
  command: SENTINEL,
  version: sentinelVersion,
  requireVar: 'TOLLGATE_REQUIRE_SENTINEL',
  install: 'apt-get install redis-sentinel',
};

/** `describe` that runs only with redis-sentinel (and redis-server): skipped loudly without, failed under TOLLGATE_REQUIRE_SENTINEL=1. */
export function describeSentinel(name: string, fn: () => void): void {
  if (sentinelVersion === undefined) describeWith(SENTINEL_TOOL, name, fn);
  else describeRedis(name, fn);
}

export class SentinelSetup {
  private constructor(
    readonly servers: readonly [RedisServer, RedisServer],
    readonly sentinelPort: number,
    private readonly child: ChildProcess,
    private readonly dir: string,
    /** A plain client to the sentinel (SENTINEL commands). */
    readonly sentinel: Redis,
  ) {}

  /** Starts a master, a replica of it, and a sentinel that knows both; resolves once a failover could run. */
  static async start(): Promise<SentinelSetup> {
    const master = await startRedis();
    const replica = await startRedis(['--replicaof', HOST, String(master.port)]);
    const admin = await replica.readyClient();
    await waitFor('the replica in sync', async () => infoField(await admin.info('replication'), 'master_link_status') === 'up');
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-sentinel-'));
    const port = await freePort();
    const conf = join(dir, 'sentinel.conf');
    writeFileSync(
      conf,
      [
        `port ${port}`,
        `bind ${HOST}`,
        `dir ${dir}`,
        `sentinel monitor ${MASTER_NAME} ${HOST} ${master.port} 1`,
        `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
        `sentinel failover-timeout ${MASTER_NAME} 10000`,
        `sentinel parallel-syncs ${MASTER_NAME} 1`,
        '',
      ].join('\n'),
    );
    const child = spawn(SENTINEL, [conf, '--loglevel', 'warning'], { stdio: 'ignore' });
    const sentinel = new Redis({ host: HOST, port, lazyConnect: false });
    sentinel.on('error', () => undefined);
    const setup = new SentinelSetup([master, replica], port, child, dir, sentinel);
    try {
      await waitFor('the sentinel', () => sentinel.status === 'ready');
      await waitFor('the sentinel to see the replica', async () => setup.goodReplicas().then((n) => n > 0), 30_000);
    } catch (error) {
      await setup.close();
      throw error;
    }
    return setup;
  }

  /** Replicas the sentinel would promote (known, not down, linked to the master). */
  async goodReplicas(): Promise<number> {
    const replicas = (await this.sentinel.call('SENTINEL', 'REPLICAS', MASTER_NAME)) as string[][];
    return replicas.filter((r) => {
      const fields = new Map<string, string>();
      for (let i = 0; i + 1 < r.length; i += 2) fields.set(r[i] as string, r[i + 1] as string);
      return !/s_down|o_down|disconnected/.test(fields.get('flags') ?? '') && fields.get('master-link-status') === 'ok';
    }).length;
  }

  /** The port of the master the sentinel names now. */
  async masterPort(): Promise<number> {
    const [, port] = (await this.sentinel.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER_NAME)) as [string, string];
    return Number(port);
  }

  /** `SENTINEL FAILOVER`: the replica is promoted and the old master turned into its replica. Resolves once the sentinel names the new master. */
  async failover(): Promise<{ from: number; to: number }> {
    const from = await this.masterPort();
    await this.sentinel.call('SENTINEL', 'FAILOVER', MASTER_NAME);
    let to = from;
    await waitFor(
      'the sentinel to name the new master',
      async () => {
        to = await this.masterPort();
        return to !== from;
      },
      30_000,
    );
    return { from, to };
  }

  /** The server on `port` (master or replica). */
  server(port: number): RedisServer {
    const s = this.servers.find((x) => x.port === port);
    if (s === undefined) throw new Error(`no server on port ${port}`);
    return s;
  }

  async close(): Promise<void> {
    this.sentinel.disconnect();
    if (this.child.exitCode === null) {
      await new Promise<void>((resolve) => {
        this.child.once('exit', () => resolve());
        this.child.kill('SIGTERM');
      });
    }
    await Promise.all(this.servers.map((s) => s.close()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
