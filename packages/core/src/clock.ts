/**
 * @module Clocks. The default is monotonic (it never steps back when the system clock is adjusted)
 * and anchored to the Unix epoch at process start, so clock-aligned windows line up with wall time.
 */
import { performance } from 'node:perf_hooks';
import type { Clock } from './types.js';

// `performance` from node:perf_hooks, not the global: Node 20 defines the global as a lazy accessor and
// runs its getter on every read, a function call per decision on this path.
const origin = performance.timeOrigin;

/** Integer milliseconds since the Unix epoch, monotonic within the process. */
export const monotonicClock: Clock = () => Math.floor(origin + performance.now());
