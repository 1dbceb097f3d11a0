/**
 * @module Clocks. The default is monotonic (it never steps back when the system clock is adjusted)
 * and anchored to the Unix epoch at process start, so clock-aligned windows line up with wall time.
 */
import type { Clock } from './types.js';

const origin = performance.timeOrigin;

/** Integer milliseconds since the Unix epoch, monotonic within the process. */
export const monotonicClock: Clock = () => Math.floor(origin + performance.now());
