/**
 * @module Declarations for the peers' internal modules the harness drives directly; they ship no types.
 * Only what the harness calls is declared.
 */

declare module '@fastify/rate-limit/store/LocalStore.js' {
  type Callback = (error: Error | null, result: { current: number; ttl: number }) => void;
  class LocalStore {
    constructor(continueExceeding: boolean, exponentialBackoff: boolean, cache?: number);
    incr(key: string, callback: Callback, timeWindow: number, max: number): void;
  }
  export default LocalStore;
}

declare module '@fastify/rate-limit/store/RedisStore.js' {
  import type { Redis } from 'ioredis';

  type Callback = (error: Error | null, result: { current: number; ttl: number }) => void;
  class RedisStore {
    constructor(continueExceeding: boolean, exponentialBackoff: boolean, redis: Redis, key?: string);
    incr(key: string, callback: Callback, timeWindow: number, max: number): void;
  }
  export default RedisStore;
}

declare module 'koa-ratelimit/limiter/memory.js' {
  interface LimitState {
    id: string;
    reset: number;
    remaining: number;
    total: number;
  }
  class MemoryLimiter {
    constructor(options: { id: string; db: Map<string, LimitState>; max: number; duration: number; namespace?: string });
    get(): Promise<LimitState>;
  }
  export default MemoryLimiter;
}

declare module 'koa-ratelimit' {
  import type { Middleware } from 'koa';

  function ratelimit(options: {
    driver: 'memory' | 'redis';
    db: unknown;
    duration: number;
    max: number;
    id?: (ctx: unknown) => string | false;
  }): Middleware;
  export default ratelimit;
}
