/**
 * @module Clocks. The default is monotonic (it never steps back when the system clock is adjusted)
 * and anchored to the Unix epoch at process start, so clock-aligned windows line up with wall time.
 *
 * Reading the time costs about 100 ns on Node 20 (the global `performance` is a lazy accessor), a sixth
 * of a decision. So the default clock reads it as nginx does (`ngx_time_update`): once per turn of the
 * event loop, and every decision of that turn shares the reading. Two bounds keep the shared reading
 * fresh: it expires when the loop turns (a `setImmediate` scheduled at the reading, unref'd), and after
 * `READS_PER_READING` reads, so a loop of awaited checks that never yields to the event loop still sees
 * time move (about every 64 decisions, tens of microseconds).
 *
 * Test runners' fake timers (vitest, Jest, @sinonjs/fake-timers) replace the global `performance` and,
 * by default, `setTimeout`. A reading is shared only while both are the real ones: each call compares
 * `setTimeout` (a plain global, nearly free), each reading `performance`. Under fake timers every call
 * reads the fake clock, so a test that plays time sees every step at once. (A test that fakes
 * `performance` alone, mid-turn, may see the real reading of that turn for up to 63 more reads.)
 */
import type { Clock } from './types.js';

const origin = performance.timeOrigin;
const realPerformance = performance;
// Taken at load: fake timers replace these globals, and a faked setImmediate must not stop a reading from expiring.
const realSetImmediate = setImmediate;
const realSetTimeout = setTimeout;

/** The most reads one shared reading serves. */
export const READS_PER_READING = 64;

let shared = 0;
let readsLeft = 0;
let expiring = false;

function expire(): void {
  expiring = false;
  readsLeft = 0;
}

/** Reads the time now; shares the reading with the next reads of this turn when `performance` is the real one. */
function read(): number {
  const p = globalThis.performance;
  const t = Math.floor(origin + p.now());
  if (p !== realPerformance || setTimeout !== realSetTimeout) return t;
  shared = t;
  readsLeft = READS_PER_READING - 1;
  if (!expiring) {
    expiring = true;
    realSetImmediate(expire).unref();
  }
  return t;
}

/** Integer milliseconds since the Unix epoch, monotonic within the process; one reading per event-loop turn (see the module doc). */
export const monotonicClock: Clock = () => (setTimeout === realSetTimeout && readsLeft-- > 0 ? shared : read());
