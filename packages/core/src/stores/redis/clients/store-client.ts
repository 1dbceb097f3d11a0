/**
 * @module The one interface RedisStore talks to, whatever Redis client the app gave it (to-store-client.ts
 * picks the adapter). It names only what the store does: run a script by SHA or in full, load a script
 * on the node that serves a key, delete keys, read a server setting from every master, and say whether
 * the client can send now. Arguments are strings; replies are Redis replies as the client decodes them.
 */
import type { ConnectionEvent } from '../../store.js';

/** Where SCRIPT LOAD goes for one key: `id` names the node, so the loads that meet there are shared. */
export interface ScriptHost {
  readonly id: string;
  load(lua: string): Promise<unknown>;
}

/** Client options that break limits quietly, as the client reports them (undefined: cannot tell). */
export interface ClientSettings {
  /** ioredis `stringNumbers: true`: integer replies arrive as strings. */
  readonly stringNumbers: boolean | undefined;
  /**
   * ioredis `autoResendUnfulfilledCommands` (true by default): after a reconnect the client sends again
   * the commands that were on the wire, which Redis may already have run.
   */
  readonly resendsAfterReconnect: boolean | undefined;
  /**
   * ioredis in Sentinel mode without `failoverDetector: true`: after a failover it keeps its connection to the
   * demoted master, which takes writes until the sentinel reconfigures it (about 10 s) and then drops them.
   */
  readonly sentinelWithoutFailoverDetector: boolean | undefined;
}

export interface StoreClient {
  /** The library, for messages: `'ioredis'` (also iovalkey), `'node-redis'` or `'sendCommand'`. */
  readonly library: 'ioredis' | 'node-redis' | 'sendCommand';
  readonly isCluster: boolean;
  /**
   * Which keys the client reaches, as its options say (keyspace.ts): clients with the same keyspace see
   * the same keys. Undefined where the options do not say.
   */
  readonly keyspace?: string | undefined;
  /**
   * ioredis' vocabulary for every client: `'ready'` sends at once; `'wait'` has never connected;
   * `'end'` is closed for good; anything else (`'connecting'`, `'reconnecting'`, ...) cannot send now.
   */
  readonly status: string;
  /** Starts a client that connects on demand (ioredis `lazyConnect`); absent when the app connects it. */
  connect?(): Promise<void>;
  /**
   * A Cluster whose masters connect on demand (ioredis): true while some master's connection is not
   * ready yet, after starting those that never connected. A call sent to such a master waits in the
   * client's failover queue (100 ms), past `storeTimeoutMs`; the store's first checks wait instead.
   */
  nodesConnecting?(): boolean;
  readonly settings: ClientSettings;
  /**
   * EVALSHA `sha` with `args[0 .. numKeys)` as KEYS and the rest as ARGV. `busy`: other calls of the
   * store are waiting for their replies, so more are likely to follow in this tick (a client may hold
   * its writes to the end of the tick and send them together).
   */
  evalsha(sha: string, numKeys: number, args: readonly string[], busy?: boolean): Promise<unknown>;
  /** EVAL of the script itself (it also enters the server's script cache). */
  evalScript(lua: string, numKeys: number, args: readonly string[]): Promise<unknown>;
  /** The node SCRIPT LOAD must reach for a call on `key`, or undefined when the client cannot say. */
  scriptHost(key: string): ScriptHost | undefined;
  del(keys: readonly string[]): Promise<unknown>;
  /** CONFIG GET `parameter` on every master: one value per master (undefined where it is not set). */
  configGet(parameter: string): Promise<(string | undefined)[]>;
  /**
   * INFO `section` of every master, or with `node` (a name as `nodeAddress` gives) of that master alone
   * (none when the client knows no such master; on one server, `node` is not read): per master its name
   * (`host:port` on a Cluster, `'redis'` otherwise) and the reply's text (undefined where the server
   * refuses INFO).
   */
  info(section: string, node?: string): Promise<NodeInfo[]>;
  /** `host:port` of the master that serves `key` on a Cluster; undefined on one server or when unknown. */
  nodeAddress(key: string): string | undefined;
  /** `host:port` of every master of a Cluster the client knows now (as `nodeAddress` names them); absent on one server. */
  masterAddresses?(): readonly string[];
  /** Reports the connection's close and its ready again (connection-events.ts); absent where the client cannot say. */
  watch?(listener: (event: ConnectionEvent) => void): () => void;
}

/** One master's INFO reply. */
export interface NodeInfo {
  readonly node: string;
  readonly text: string | undefined;
}

/** The text of an INFO reply (a string, or a Buffer for clients that return them). */
export function infoText(reply: unknown): string | undefined {
  if (typeof reply === 'string') return reply;
  if (Buffer.isBuffer(reply)) return reply.toString();
  return undefined;
}

/** The value of `parameter` in a CONFIG GET reply: `[name, value]` (RESP2), a Map or an object (RESP3). */
export function configValue(reply: unknown, parameter: string): string | undefined {
  let value: unknown;
  if (Array.isArray(reply)) value = reply[1];
  else if (reply instanceof Map) value = reply.get(parameter);
  else if (typeof reply === 'object' && reply !== null) value = (reply as Record<string, unknown>)[parameter];
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString();
  return undefined;
}
