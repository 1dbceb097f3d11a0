/**
 * @module The Redis clients RedisStore takes, typed by shape so that no Redis client enters the dependency
 * tree of users who do not use Redis: an ioredis (5, 6) or iovalkey `Redis` or `Cluster`, a node-redis
 * (v4 and later) client from `createClient()` or cluster from `createCluster()`, or, for any other client,
 * an object with one `sendCommand(args)` function. clients/ turns each into the one interface the store
 * uses. Optional members are declared `| undefined` so that the clients' own types fit under
 * `exactOptionalPropertyTypes`.
 */

/** Something SCRIPT LOAD can be sent to: an ioredis `Redis` client, or one node of a `Cluster`. */
export interface ScriptHostLike {
  script(subcommand: 'LOAD', script: string): Promise<unknown>;
}

/** One node of an ioredis `Cluster` (itself an ioredis `Redis` client). */
export interface ClusterNodeLike extends ScriptHostLike {
  readonly options: { readonly host?: string | undefined; readonly port?: number | undefined };
  config?(subcommand: 'GET', parameter: string): Promise<unknown>;
  /** INFO, for the eviction watch (eviction-watch.ts). */
  info?(section: string): Promise<unknown>;
  /** ioredis' connection state of this node (`'wait'` until its first command: nodes connect on demand). */
  readonly status?: string;
  connect?(): Promise<void>;
}

/** The ioredis options RedisStore checks (`stringNumbers`, `autoResendUnfulfilledCommands`). */
export interface IoredisOptionsLike {
  readonly stringNumbers?: boolean | undefined;
  readonly autoResendUnfulfilledCommands?: boolean | undefined;
  /** Sentinel mode: the sentinels the client asks for the master. */
  readonly sentinels?: readonly unknown[] | null | undefined;
  /** Sentinel mode: whether the client subscribes to `+switch-master` and leaves a demoted master at once. */
  readonly failoverDetector?: boolean | undefined;
  /** On a `Cluster`: the options of every node's connection. */
  readonly redisOptions?: IoredisOptionsLike | undefined;
}

/** An ioredis or iovalkey `Redis` or `Cluster` client, as RedisStore sees it. */
export interface RedisClientLike extends ScriptHostLike {
  /**
   * ioredis' connection state: `'ready'` when commands go straight to the server; `'wait'` before a
   * `lazyConnect` client's first connection; `'connecting'`, `'connect'`, `'reconnecting'` while commands
   * would wait in the offline queue; `'close'` and `'end'` when closed.
   */
  readonly status: string;
  evalsha(sha1: string, numkeys: number, ...args: string[]): Promise<unknown>;
  eval(script: string, numkeys: number, ...args: string[]): Promise<unknown>;
  del(...keys: string[]): Promise<number>;
  /** CONFIG GET, for the checks on the first connection. */
  config?(subcommand: 'GET', parameter: string): Promise<unknown>;
  /** INFO, for the eviction watch (eviction-watch.ts). */
  info?(section: string): Promise<unknown>;
  /** Present on ioredis clients; called once for a `lazyConnect` client that has not connected yet. */
  connect?(): Promise<void>;
  /** The client's options (`Redis`), or the cluster's (`Cluster`, with `redisOptions` for its nodes). */
  readonly options?: IoredisOptionsLike | undefined;
  /** ioredis: true on a `Cluster`, whose scripts are loaded node by node. */
  readonly isCluster?: boolean | undefined;
  /** ioredis `Cluster`: the nodes (`host:port`) serving each hash slot, master first. */
  readonly slots?: readonly (readonly string[] | undefined)[] | undefined;
  /** ioredis `Cluster`: the clients of its nodes. */
  nodes?(role: 'master'): readonly ClusterNodeLike[];
  /** ioredis `Redis`: the connection's socket while connected (RedisStore corks it, see ioredis-client.ts). */
  readonly stream?: CorkableLike | undefined;
}

/** A Node stream that can hold its writes until `uncork()` and send them in one system call. */
export interface CorkableLike {
  cork(): void;
  uncork(): void;
}

/** A node-redis (v4, v5, v6) client from `createClient()`. Call `connect()` on it yourself. */
export interface NodeRedisClientLike {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  sendCommand(args: string[]): Promise<unknown>;
}

/** A node-redis (v4, v5, v6) cluster from `createCluster()`. Call `connect()` on it yourself. */
export interface NodeRedisClusterLike {
  readonly isOpen: boolean;
  /** node-redis v5 and later; v4 clusters only say `isOpen`. */
  readonly isReady?: boolean | undefined;
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  /** The master serving a hash slot. */
  getSlotMaster(slot: number): { readonly host: string; readonly port: number } | undefined;
  /** Every master, for the checks on the first connection. */
  readonly masters: readonly unknown[];
  /** The client of one of `masters` (a promise of it on v5 and later). */
  nodeClient(node: unknown): unknown;
}

/**
 * A node-redis (v5, v6) Sentinel client from `createSentinel({ name, sentinelRootNodes })`. Call
 * `connect()` on it yourself. Recognised by `getMasterNode`; commands go to the master.
 */
export interface NodeRedisSentinelLike {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  /** The master the sentinels name now. */
  getMasterNode(): unknown;
}

/**
 * Any other client: one function that sends a command (`['EVALSHA', sha, '1', key, ...]`) and resolves
 * to Redis' reply as the client decodes it (integers as numbers, arrays as arrays), or rejects with
 * Redis' error (its message starting with the error code, e.g. `NOSCRIPT`). RedisStore sends EVALSHA,
 * EVAL, SCRIPT LOAD, DEL and CONFIG GET through it. On a Redis Cluster, route by the first key after
 * the number of keys (every key of one call shares a hash slot).
 */
export interface SendCommandClient {
  sendCommand(args: string[]): Promise<unknown>;
}

/** Every client `new RedisStore({ client })` takes. */
export type RedisStoreClient = RedisClientLike | NodeRedisClientLike | NodeRedisClusterLike | NodeRedisSentinelLike | SendCommandClient;
