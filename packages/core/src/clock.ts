/**
 * @module Clocks. The default is monotonic (it never steps back when the system clock is adjusted)
 * and anchored to the Unix epoch at process start, so clock-aligned windows line up with wall time.
 */
import type { Clock } from './types.js';

// The global `performance`, read on every call, and not the one of node:perf_hooks: test runners' fake
// timers (vitest, Jest, @sinonjs/fake-timers) replace the global, and a limiter under test must follow
// them. On Node 20 the global is a lazy accessor whose getter runs on every read; the perf_hooks import
// made a decision on one key about 8 % faster, and broke every test that plays time with fake timers.
const origin = performance.timeOrigin;

/** Integer milliseconds since the Unix epoch, monotonic within the process. */
export const monotonicClock: Clock = () => Math.floor(origin + performance.now());
