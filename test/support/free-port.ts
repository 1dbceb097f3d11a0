/**
 * @module A free TCP port on the loopback address, for the real servers the suites start (redis-server,
 * redis-sentinel, nginx): the kernel picks one for a listener that closes at once. Only loopback is ever a target.
 */
import { createServer } from 'node:net';

export const LOOPBACK = '127.0.0.1';

/** A port the kernel just gave a loopback listener, closed again: free unless another process takes it first. */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, LOOPBACK, () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a !== null ? a.port : 0));
    });
  });
}
