/**
 * @module Which keys a client reaches, as far as its options say: two clients (two `new Redis(url)`
 * in two modules, `redis.duplicate()`, an ioredis and a node-redis client on one URL) with the same
 * keyspace read and write the same keys, so the limiters on them must not share key names by accident
 * (stores/state-claims.ts). A keyspace is the server's address (loopback names taken as one), its
 * database and ioredis' `keyPrefix`; a Cluster's seed nodes; a Sentinel group's name and sentinels.
 * Undefined where the options do not say (a node-redis cluster or Sentinel client, `{ sendCommand }`):
 * such a client is then known by its object only. Two addresses of one server (a DNS name and its IP)
 * are not recognised as one here; the token the store reads once the server answers is
 * (RedisStore.spaceToken, stores/state-claims.ts).
 */
import type { NodeRedisClientLike, RedisClientLike } from '../redis-client.js';

/** Names that reach this machine's loopback interface, taken as one host. */
const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

function hostName(host: unknown): string {
  const h = typeof host === 'string' && host.length > 0 ? host.toLowerCase() : 'localhost';
  return LOOPBACK.has(h) ? 'localhost' : h;
}

function portOf(port: unknown): number {
  const p = typeof port === 'string' ? Number(port) : port;
  return typeof p === 'number' && Number.isInteger(p) && p > 0 ? p : 6379;
}

/** `host:port` (or `unix:<path>`) of one server. */
function serverAddress(host: unknown, port: unknown, path?: unknown): string {
  return typeof path === 'string' && path.length > 0 ? `unix:${path}` : `${hostName(host)}:${portOf(port)}`;
}

function dbOf(db: unknown): number {
  return typeof db === 'number' && Number.isInteger(db) ? db : 0;
}

/** An ioredis Cluster startup node: a port, `'host:port'` or a URL, or `{ host, port }`. */
function startupAddress(node: unknown): string | undefined {
  if (typeof node === 'number') return serverAddress(undefined, node);
  if (typeof node === 'string') {
    try {
      const url = new URL(node.includes('://') ? node : `redis://${node}`);
      return serverAddress(url.hostname, url.port);
    } catch {
      return undefined;
    }
  }
  if (typeof node === 'object' && node !== null) {
    const n = node as { host?: unknown; port?: unknown };
    return serverAddress(n.host, n.port);
  }
  return undefined;
}

/** The sorted addresses of `nodes` (startup nodes, sentinels), or undefined when one of them cannot be read. */
function addressList(nodes: readonly unknown[]): string | undefined {
  const list: string[] = [];
  for (const node of nodes) {
    const a = startupAddress(node);
    if (a === undefined) return undefined;
    list.push(a);
  }
  return list.length === 0 ? undefined : list.sort().join(',');
}

interface IoredisKeyspaceOptions {
  readonly host?: unknown;
  readonly port?: unknown;
  readonly path?: unknown;
  readonly db?: unknown;
  readonly keyPrefix?: unknown;
  readonly name?: unknown;
  readonly sentinels?: readonly unknown[] | null;
  readonly redisOptions?: { readonly keyPrefix?: unknown };
}

/** The keyspace of an ioredis or iovalkey `Redis` (one server or Sentinel) or `Cluster`. */
export function ioredisKeyspace(c: RedisClientLike): string | undefined {
  const o = c.options as IoredisKeyspaceOptions | undefined;
  if (o === undefined) return undefined;
  const prefix = (p: unknown) => (typeof p === 'string' && p.length > 0 ? ` keyPrefix=${JSON.stringify(p)}` : '');
  if (c.isCluster === true) {
    const nodes = (c as { startupNodes?: unknown }).startupNodes;
    const list = Array.isArray(nodes) ? addressList(nodes) : undefined;
    return list === undefined ? undefined : `cluster:${list}${prefix(o.keyPrefix ?? o.redisOptions?.keyPrefix)}`;
  }
  if (Array.isArray(o.sentinels) && o.sentinels.length > 0) {
    const list = addressList(o.sentinels);
    if (list === undefined || typeof o.name !== 'string') return undefined;
    return `sentinel:${o.name}@${list}/${dbOf(o.db)}${prefix(o.keyPrefix)}`;
  }
  return `${serverAddress(o.host, o.port, o.path)}/${dbOf(o.db)}${prefix(o.keyPrefix)}`;
}

/** The keyspace of a node-redis `createClient()` client (its options as v4 to v6 keep them). */
export function nodeRedisKeyspace(c: NodeRedisClientLike): string | undefined {
  const o = (c as { options?: { socket?: { host?: unknown; port?: unknown; path?: unknown }; database?: unknown } }).options;
  if (o === undefined || o === null || typeof o !== 'object') return undefined;
  const socket = o.socket ?? {};
  return `${serverAddress(socket.host, socket.port, socket.path)}/${dbOf(o.database)}`;
}
