/**
 * @module A stand-in for a dependency with fixed capacity (a database pool of `size` connections, each
 * query taking `queryMs`): queries beyond the pool wait their turn, so the handler's latency grows with
 * the number of requests in flight. The handler that "slows down under load" of the load test.
 */
export interface Pool {
  query(): Promise<void>;
  /** Queries running plus waiting. */
  readonly pending: number;
}

export function createPool(size: number, queryMs: number): Pool {
  let running = 0;
  const waiting: (() => void)[] = [];
  function start(done: () => void): void {
    running += 1;
    setTimeout(() => {
      running -= 1;
      const next = waiting.shift();
      if (next !== undefined) start(next);
      done();
    }, queryMs);
  }
  return {
    query() {
      return new Promise<void>((resolve) => {
        if (running < size) start(resolve);
        else waiting.push(() => resolve());
      });
    },
    get pending() {
      return running + waiting.length;
    },
  };
}
