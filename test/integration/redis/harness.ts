/**
 * @module Test harness for the Redis suites: starts real `redis-server` processes on free loopback
 * ports, each in its own temporary directory, and a Redis Cluster built by hand (CLUSTER ADDSLOTSRANGE,
 * MEET, REPLICATE). Where `redis-server` is missing the suites say so loudly and skip, unless
 * `TOLLGATE_REQUIRE_REDIS=1` (set by `.ci/run`), which turns the skip into a failure.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RedisStoreClient } from '@tollgate/core';
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import { Redis as Valkey, Cluster as ValkeyCluster } from 'iovalkey';
import { createClient, createCluster } from 'redis';
import { createClient as createClient4, createCluster as createCluster4 } from 'redis4';
import { afterAll, beforeAll } from 'vitest';
import { freeLoopbackPort } from '../../support/free-port.js';
import { describeWith, type RequiredTool, versionOf } from '../../support/required-tool.js';

export const HOST = '127.0.0.1';

/**
 * The clients the Redis suites run through, each as the app would create it and pass it to RedisStore
 * (ioredis and iovalkey with `autoResendUnfulfilledCommands: false`, as docs/errors.md advises).
 * iovalkey runs against redis-server: Valkey itself is not in this machine's package sources.
 */
export const CLIENT_KINDS = ['ioredis', 'node-redis', 'node-redis-v4', 'iovalkey'] as const;
export type ClientKind = (typeof CLIENT_KINDS)[number];

/** A connected client of `kind` and how to close it. */
export interface KindClient {
  readonly client: RedisStoreClient;
  close(): Promise<void>;
}

const NO_RESEND = { autoResendUnfulfilledCommands: false } as const;

/** Connects a client of `kind` to one server; resolves once it is ready. */
async function connectKind(kind: ClientKind, port: number): Promise<KindClient> {
  switch (kind) {
    case 'ioredis':
    case 'iovalkey': {
      const c = kind === 'ioredis' ? new Redis({ host: HOST, port, ...NO_RESEND }) : new Valkey({ host: HOST, port, ...NO_RESEND });
      c.on('error', () => undefined);
      await waitFor(`${kind} ready`, () => c.status === 'ready');
      return { client: c, close: async () => c.disconnect() };
    }
    case 'node-redis': {
      const c = createClient({ socket: { host: HOST, port } });
      c.on('error', () => undefined);
      await c.connect();
      return { client: c, close: async () => c.destroy() };
    }
    case 'node-redis-v4': {
      const c = createClient4({ socket: { host: HOST, port } });
      c.on('error', () => undefined);
      await c.connect();
      return { client: c, close: () => c.disconnect() };
    }
  }
}

/** Connects a cluster client of `kind` to the cluster whose masters listen on `ports`. */
async function connectClusterKind(kind: ClientKind, ports: readonly number[]): Promise<KindClient> {
  const nodes = ports.map((port) => ({ host: HOST, port }));
  switch (kind) {
    case 'ioredis':
    case 'iovalkey': {
      const options = { redisOptions: { ...NO_RESEND, maxRetriesPerRequest: 1 } };
      const c = kind === 'ioredis' ? new Cluster(nodes, options) : new ValkeyCluster(nodes, options);
      c.on('error', () => undefined);
      await waitFor(`${kind} cluster ready`, () => c.status === 'ready');
      return { client: c, close: async () => c.disconnect() };
    }
    case 'node-redis': {
      const c = createCluster({ rootNodes: nodes.map((n) => ({ socket: n })) });
      c.on('error', () => undefined);
      await c.connect();
      return { client: c, close: async () => c.destroy() };
    }
    case 'node-redis-v4': {
      const c = createCluster4({ rootNodes: nodes.map((n) => ({ socket: n })) });
      c.on('error', () => undefined);
      await c.connect();
      return { client: c, close: () => c.disconnect() };
    }
  }
}
const SERVER = process.env.TOLLGATE_REDIS_SERVER ?? 'redis-server';

/** `redis-server --version`, or undefined when it cannot be run. */
export const redisVersion: string | undefined = versionOf(SERVER);

const REDIS: RequiredTool = {
  label: 'Redis',
  command: SERVER,
  version: redisVersion,
  requireVar: 'TOLLGATE_REQUIRE_REDIS',
  install: 'apt-get install redis-server',
};

/** `describe` that runs only with a redis-server: skipped loudly without one, failed under TOLLGATE_REQUIRE_REDIS=1. */
export function describeRedis(name: string, fn: () => void): void {
  describeWith(REDIS, name, fn);
}

/** A random key prefix, so tests sharing a server never see each other's keys. */
export function randomPrefix(): string {
  return `t${randomBytes(6).toString('hex')}`;
}

const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, HOST, () => s.close(() => resolve(true)));
  });
}

/** A free loopback port (and, for cluster nodes, its bus port + 10000 too). */
async function freePort(withBus: boolean): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = await freeLoopbackPort();
    if (port > 0 && (!withBus || (port + 10000 <= 65535 && (await portFree(port + 10000))))) return port;
  }
  throw new Error('no free loopback port found');
}

/** Sends PING and resolves true on +PONG. */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, HOST);
    let data = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      data += chunk.toString();
      if (data.includes('\r\n')) done(data.startsWith('+PONG'));
    });
  });
}

/** Polls `check` every 20 ms until it holds, or throws after `timeoutMs`. */
export async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Waits until at least `needMs` are left in the current clock-aligned window of `windowMs` (Redis TIME
 * reads this machine's clock): a test of a clock-aligned window whose checks straddled its end would see
 * a fresh window halfway through. At most `needMs` of waiting, and none in most runs.
 */
export async function clearOfWindowEnd(windowMs: number, needMs = 2_000): Promise<void> {
  const left = windowMs - (Date.now() % windowMs);
  if (left >= needMs) return;
  await new Promise((resolve) => setTimeout(resolve, left + 5));
}

export class RedisServer {
  private child: ChildProcess | undefined;
  private readonly clients = new Set<Redis>();
  private readonly kindClients = new Set<KindClient>();

  constructor(
    readonly port: number,
    readonly dir: string,
    private readonly args: readonly string[],
  ) {}

  get running(): boolean {
    return this.child !== undefined;
  }

  /** Starts (or restarts, on the same port and directory) the server and waits until it answers PING. */
  async start(): Promise<void> {
    if (this.child !== undefined) return;
    const child = spawn(
      SERVER,
      [
        '--port',
        String(this.port),
        '--bind',
        HOST,
        '--dir',
        this.dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--enable-debug-command',
        'local',
        '--loglevel',
        'warning',
        ...this.args,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr?.on('data', (c) => {
      stderr += c.toString();
    });
    let exited = false;
    child.once('exit', () => {
      exited = true;
      children.delete(child);
    });
    children.add(child);
    this.child = child;
    await waitFor(`redis-server on port ${this.port}`, async () => {
      if (exited) throw new Error(`redis-server on port ${this.port} exited: ${stderr}`);
      return ping(this.port);
    });
  }

  /** Stops the server (SIGTERM, no persistence) and waits for the process to exit. */
  async stop(): Promise<void> {
    const child = this.child;
    if (child === undefined) return;
    this.child = undefined;
    // A server killed by a signal (`signal('SIGKILL')`) has a signalCode and no exitCode.
    if (child.exitCode === null && child.signalCode === null) {
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      });
    }
  }

  /** Sends `signal` to the server process: SIGSTOP pauses it (connections stay open), SIGCONT resumes it. */
  signal(signal: NodeJS.Signals): void {
    this.child?.kill(signal);
  }

  /** A new ioredis client to this server, closed by `close()`. */
  client(options: RedisOptions = {}): Redis {
    const c = new Redis({ host: HOST, port: this.port, lazyConnect: false, ...options });
    c.on('error', () => undefined);
    this.clients.add(c);
    return c;
  }

  /** A connected client, once 'ready'. */
  async readyClient(options: RedisOptions = {}): Promise<Redis> {
    const c = this.client(options);
    await waitFor('client ready', () => c.status === 'ready');
    return c;
  }

  /** A connected client of `kind` (ioredis, node-redis, iovalkey), closed by `close()`. */
  async storeClient(kind: ClientKind): Promise<RedisStoreClient> {
    const k = await connectKind(kind, this.port);
    this.kindClients.add(k);
    return k.client;
  }

  async close(): Promise<void> {
    for (const c of this.clients) c.disconnect();
    this.clients.clear();
    await Promise.all([...this.kindClients].map((k) => k.close().catch(() => undefined)));
    this.kindClients.clear();
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A redis-server for the suite that calls this (inside its describe): started before its tests, resumed
 * (a test may leave it paused with SIGSTOP) and stopped after them. Returns it, once started.
 */
export function suiteRedis(): () => RedisServer {
  let server: RedisServer | undefined;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    server?.signal('SIGCONT');
    await server?.close();
  });
  return () => server as RedisServer;
}

/** Starts one redis-server on a free loopback port in a temporary directory. */
export async function startRedis(args: readonly string[] = []): Promise<RedisServer> {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort(false);
    const server = new RedisServer(port, mkdtempSync(join(tmpdir(), 'tollgate-redis-')), args);
    try {
      await server.start();
      return server;
    } catch (error) {
      await server.close();
      // Another process may have taken the port between the probe and the bind: try another one.
      if (attempt >= 3) throw error;
    }
  }
}

function info(text: string, field: string): string | undefined {
  return new RegExp(`^${field}:(.*)$`, 'm').exec(text)?.[1]?.trim();
}

export class RedisClusterHarness {
  private readonly clusters = new Set<Cluster>();
  private readonly kindClients = new Set<KindClient>();

  constructor(
    readonly masters: readonly RedisServer[],
    readonly replicas: readonly RedisServer[],
    private readonly admin: Map<RedisServer, Redis>,
  ) {}

  get nodes(): RedisServer[] {
    return [...this.masters, ...this.replicas];
  }

  /** An admin connection to one node (not a cluster client). */
  node(server: RedisServer): Redis {
    const c = this.admin.get(server);
    if (c === undefined) throw new Error(`no admin client for port ${server.port}`);
    return c;
  }

  /** A new ioredis Cluster client, closed by `close()`. */
  client(options: ClusterOptions = {}): Cluster {
    const c = new Cluster(
      this.masters.map((m) => ({ host: HOST, port: m.port })),
      { ...options },
    );
    c.on('error', () => undefined);
    this.clusters.add(c);
    return c;
  }

  async readyClient(options: ClusterOptions = {}): Promise<Cluster> {
    const c = this.client(options);
    await waitFor('cluster client ready', () => c.status === 'ready');
    return c;
  }

  /** Waits until every running node reports cluster_state:ok and knows every node. */
  async waitHealthy(timeoutMs = 15_000): Promise<void> {
    const total = this.nodes.length;
    await waitFor(
      'cluster_state:ok on every node',
      async () => {
        for (const s of this.nodes) {
          if (!s.running) return false;
          const text = (await this.node(s)
            .cluster('INFO')
            .catch(() => '')) as string;
          if (info(text, 'cluster_state') !== 'ok' || Number(info(text, 'cluster_known_nodes')) !== total) return false;
        }
        return true;
      },
      timeoutMs,
    );
  }

  /** The node that serves `slot` now, as a node sees it. */
  async ownerOf(slot: number): Promise<RedisServer> {
    const slots = await this.node(this.masters[0] as RedisServer).cluster('SLOTS');
    for (const [from, to, owner] of slots) {
      const port = owner?.[1];
      if (slot >= from && slot <= to) {
        const s = this.nodes.find((n) => n.port === port);
        if (s !== undefined) return s;
      }
    }
    throw new Error(`no owner for slot ${slot}`);
  }

  /** A connected cluster client of `kind` (ioredis, node-redis, iovalkey), closed by `close()`. */
  async storeClient(kind: ClientKind): Promise<RedisStoreClient> {
    const k = await connectClusterKind(
      kind,
      this.masters.map((m) => m.port),
    );
    this.kindClients.add(k);
    return k.client;
  }

  async close(): Promise<void> {
    for (const c of this.clusters) c.disconnect();
    this.clusters.clear();
    await Promise.all([...this.kindClients].map((k) => k.close().catch(() => undefined)));
    this.kindClients.clear();
    for (const c of this.admin.values()) c.disconnect();
    await Promise.all(this.nodes.map((s) => s.close()));
  }
}

/**
 * Builds a cluster of `masters` masters splitting the 16384 slots, plus one replica for each index in
 * `replicate` (master index). Nodes fail over fast (`cluster-node-timeout` 1000 ms) and keep serving
 * their own slots while another master is down (`cluster-require-full-coverage no`).
 */
export async function startCluster(masters = 3, replicate: readonly number[] = []): Promise<RedisClusterHarness> {
  const start = async () => {
    for (let attempt = 0; ; attempt++) {
      const port = await freePort(true);
      const server = new RedisServer(port, mkdtempSync(join(tmpdir(), 'tollgate-cluster-')), [
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--cluster-node-timeout',
        '1000',
        '--cluster-require-full-coverage',
        'no',
      ]);
      try {
        await server.start();
        return server;
      } catch (error) {
        await server.close();
        if (attempt >= 3) throw error;
      }
    }
  };
  const ms = await Promise.all(Array.from({ length: masters }, start));
  const rs = await Promise.all(replicate.map(start));
  const admin = new Map<RedisServer, Redis>();
  for (const s of [...ms, ...rs]) admin.set(s, await s.readyClient({ maxRetriesPerRequest: 1, retryStrategy: () => 50 }));
  const harness = new RedisClusterHarness(ms, rs, admin);
  const per = Math.floor(16384 / masters);
  for (let i = 0; i < masters; i++) {
    const from = i * per;
    const to = i === masters - 1 ? 16383 : from + per - 1;
    await harness.node(ms[i] as RedisServer).cluster('ADDSLOTSRANGE', from, to);
  }
  const first = harness.node(ms[0] as RedisServer);
  for (const s of [...ms.slice(1), ...rs]) await first.cluster('MEET', HOST, s.port);
  await waitFor('every node to know every other', async () => {
    for (const s of harness.nodes) {
      const text = (await harness.node(s).cluster('INFO')) as string;
      if (Number(info(text, 'cluster_known_nodes')) !== harness.nodes.length) return false;
    }
    return true;
  });
  for (let i = 0; i < rs.length; i++) {
    const master = ms[replicate[i] as number] as RedisServer;
    const id = (await harness.node(master).cluster('MYID')) as string;
    const replica = harness.node(rs[i] as RedisServer);
    await waitFor('the replica to learn its master', async () => {
      const ok = await replica.cluster('REPLICATE', id).then(
        () => true,
        () => false,
      );
      return ok;
    });
    await waitFor('the replica link up', async () => info(await replica.info('replication'), 'master_link_status') === 'up');
  }
  await harness.waitHealthy();
  return harness;
}

/** `INFO commandstats` as { command: calls }. */
export async function commandCalls(client: Redis): Promise<Record<string, number>> {
  const text = await client.info('commandstats');
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[m[1] as string] = Number(m[2]);
  return out;
}

/** `INFO` field of a section, e.g. `infoField(await c.info('memory'), 'used_memory')`. */
export const infoField = info;
