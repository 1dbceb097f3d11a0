/**
 * @module The part of an ioredis client (`Redis` or `Cluster`) that RedisStore uses, typed by shape so
 * that ioredis never enters the dependency tree of users who do not use Redis. Any ioredis 5 or 6
 * `Redis` or `Cluster` instance fits; so does anything else with these members and ioredis' semantics.
 */

/** Something SCRIPT LOAD can be sent to: a `Redis` client, or one node of a `Cluster`. */
export interface ScriptHost {
  script(subcommand: 'LOAD', script: string): Promise<unknown>;
}

/** One node of an ioredis `Cluster` (itself an ioredis `Redis` client). */
export interface ClusterNodeLike extends ScriptHost {
  readonly options: { readonly host?: string; readonly port?: number };
}

/** An ioredis `Redis` or `Cluster` client, as RedisStore sees it. */
export interface RedisClientLike extends ScriptHost {
  /**
   * ioredis' connection state: `'ready'` when commands go straight to the server; `'wait'` before a
   * `lazyConnect` client's first connection; `'connecting'`, `'connect'`, `'reconnecting'` while commands
   * would wait in the offline queue; `'close'` and `'end'` when closed.
   */
  readonly status: string;
  evalsha(sha1: string, numkeys: number, ...args: string[]): Promise<unknown>;
  eval(script: string, numkeys: number, ...args: string[]): Promise<unknown>;
  del(...keys: string[]): Promise<number>;
  /** Present on ioredis clients; called once for a `lazyConnect` client that has not connected yet. */
  connect?(): Promise<void>;
  /** ioredis: true on a `Cluster`, whose scripts are loaded node by node. */
  readonly isCluster?: boolean;
  /** ioredis `Cluster`: the nodes (`host:port`) serving each hash slot, master first. */
  readonly slots?: readonly (readonly string[] | undefined)[];
  /** ioredis `Cluster`: the clients of its nodes. */
  nodes?(role: 'master'): readonly ClusterNodeLike[];
}

/** True when `value` has the members RedisStore calls. */
export function isRedisClientLike(value: unknown): value is RedisClientLike {
  const c = value as Partial<RedisClientLike> | null;
  return (
    typeof c === 'object' &&
    c !== null &&
    typeof c.status === 'string' &&
    typeof c.evalsha === 'function' &&
    typeof c.eval === 'function' &&
    typeof c.script === 'function' &&
    typeof c.del === 'function'
  );
}
