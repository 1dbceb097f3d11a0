/**
 * @module The adaptive concurrency limit: a gradient controller (the update law of Netflix
 * concurrency-limits' Gradient2 and Envoy's adaptive concurrency filter), updated once per sample
 * window, plus a multiplicative cut when the event loop lags.
 *
 * Each window it averages the latency of the requests that finished in it (the short-term latency).
 * The baseline is the lowest window average of the last `baselineWindows` windows (a windowed
 * minimum: Envoy's minRTT without its probe). The gradient `clamp(tolerance * baseline / short, 0.5, 1)`
 * is 1 while latency stays within `tolerance` of the baseline and falls toward 0.5 as queueing inflates
 * it; the new limit is `limit * gradient + sqrt(limit)` (the square root is headroom that lets the limit
 * probe upward), smoothed. A window whose peak in-flight count stayed under half the limit does not grow
 * it (the server was not the bottleneck, so its latency says nothing about a higher limit).
 *
 * Why this and not the alternatives, measured in gradient-limit.test.ts in virtual time:
 * - Gradient2 proper compares the short-term latency with its own long-term average. Under a load
 *   whose latency rises slowly with the limit, that average absorbs the overload and the limit climbs
 *   to `maxLimit` (the simulation in the test reproduces it); a windowed minimum does not absorb it.
 * - Vegas steps the limit by about one per window from the queue estimate `limit * (1 - min/rtt)`:
 *   too slow to follow a handler that slows down within seconds.
 * - Envoy re-measures its minRTT by pinning concurrency low every interval, which inside one process
 *   means shedding real traffic on purpose. The windowed minimum forgets an old baseline by itself.
 * The price: an overload longer than `baselineWindows` windows lets the baseline rise by up to
 * `tolerance` per such period. State says it (`baselineLatencyMs`); a fixed `maxInFlight` has no drift.
 *
 * Event-loop delay is a signal latency can miss (a synchronous handler blocks every request, including
 * the ones whose timing would show it only after they finish): a window whose event-loop delay is above
 * `maxEventLoopDelayMs` cuts the limit by `eventLoopBackoff`, whatever the latency says; two in a row make
 * the process `lagging`, and the shedder then admits only what a priority function calls critical (a
 * synchronous handler has one request in flight at a time, under any cap).
 *
 * Pure and clock-free: the caller passes `now`, so tests drive it in virtual time.
 */

/** Tuning of the adaptive limit. Every field has a default. */
export interface AdaptiveLimitOptions {
  /** The limit before the first window completes. Defaults to `20`. */
  initialLimit?: number;
  /** The limit never goes below this. Defaults to `1`. */
  minLimit?: number;
  /** The limit never goes above this. Defaults to `1000`. */
  maxLimit?: number;
  /** Length of a sample window in ms; the limit changes at most once per window. Defaults to `250`. */
  windowMs?: number;
  /** A window with fewer finished requests leaves the limit as it is (too few to judge). Defaults to `10`. */
  minSamples?: number;
  /** How much slower than the long-term average the recent latency may be before the limit shrinks. Defaults to `1.5`. */
  tolerance?: number;
  /** How much of the computed change is applied per window, in (0, 1]. Defaults to `0.2`. */
  smoothing?: number;
  /** The baseline is the lowest window latency of about this many windows. Defaults to `120` (30 s of 250 ms windows). */
  baselineWindows?: number;
  /**
   * Event-loop delay (the longest in the window, ms) above which the limit is cut; two such windows in a
   * row shed all but what a priority function calls critical (`lagging`). Defaults to `100`; `0` turns the check off.
   */
  maxEventLoopDelayMs?: number;
  /** Factor applied to the limit in a window with excessive event-loop delay, in (0, 1). Defaults to `0.8`. */
  eventLoopBackoff?: number;
}

export type AdaptiveLimitConfig = Readonly<Required<AdaptiveLimitOptions>>;

export const ADAPTIVE_DEFAULTS: AdaptiveLimitConfig = Object.freeze({
  initialLimit: 20,
  minLimit: 1,
  maxLimit: 1000,
  windowMs: 250,
  minSamples: 10,
  tolerance: 1.5,
  smoothing: 0.2,
  baselineWindows: 120,
  maxEventLoopDelayMs: 100,
  eventLoopBackoff: 0.8,
});

/** Why the limit last changed (or did not). */
export type LimitChange = 'initial' | 'latency' | 'event-loop' | 'app-limited' | 'too-few-samples';

/** An adaptive in-flight limit (Netflix's gradient): it grows while latency stays near its best and shrinks when latency rises. */
export class GradientLimit {
  #limit: number;
  #windowStart: number;
  #sum = 0;
  #count = 0;
  #peakInFlight = 0;
  /** Windows whose too few samples were carried into the next, in a row. */
  #carried = 0;
  /** Windowed minimum in two halves: the baseline is min(previous half, current half). */
  #minPrev = Number.POSITIVE_INFINITY;
  #minCur = Number.POSITIVE_INFINITY;
  #halfCount = 0;
  #short = 0;
  #lastChange: LimitChange = 'initial';
  /** Windows in a row whose event-loop delay was above `maxEventLoopDelayMs`. */
  #laggedWindows = 0;

  constructor(
    readonly config: AdaptiveLimitConfig,
    now: number,
  ) {
    this.#limit = config.initialLimit;
    this.#windowStart = now;
  }

  /** The current cap on requests in flight (an integer, at least `minLimit`). */
  get limit(): number {
    return Math.max(this.config.minLimit, Math.floor(this.#limit));
  }

  /** Average latency of the last judged window (ms); 0 before the first. */
  get shortLatencyMs(): number {
    return this.#short;
  }
  /** The baseline latency (ms): the lowest window average of the last `baselineWindows` windows; 0 before the first. */
  get baselineLatencyMs(): number {
    const b = Math.min(this.#minPrev, this.#minCur);
    return Number.isFinite(b) ? b : 0;
  }
  get lastChange(): LimitChange {
    return this.#lastChange;
  }
  /**
   * True while the event loop has lagged past `maxEventLoopDelayMs` for LAGGING_WINDOWS windows in a row:
   * the process is saturated whatever its in-flight count (a synchronous handler never has more than one
   * in flight: its queue is in the socket backlog, which no cap on in-flight requests can see).
   */
  get lagging(): boolean {
    return this.#laggedWindows >= LAGGING_WINDOWS;
  }

  /** Notes the in-flight count as a request is admitted, for the app-limited check. */
  observeInFlight(inFlight: number): void {
    if (inFlight > this.#peakInFlight) this.#peakInFlight = inFlight;
  }

  /** Records the latency of one finished request. */
  sample(latencyMs: number): void {
    this.#sum += Math.max(0, latencyMs);
    this.#count += 1;
  }

  /**
   * Closes the window if `now` is past its end and updates the limit; `eventLoopDelayMs` is the delay
   * measured over that window (read only when a window closes). Returns true when a window closed.
   */
  update(now: number, eventLoopDelayMs: () => number): boolean {
    const c = this.config;
    if (now - this.#windowStart < c.windowMs) return false;
    const count = this.#count;
    const short = count > 0 ? this.#sum / count : 0;
    const peak = this.#peakInFlight;
    // A window closes when a request comes or ends: one that spans an idle spell (twice its length or
    // more) follows no lagged window "in a row", whatever lagged before the spell.
    if (now - this.#windowStart >= 2 * c.windowMs) this.#laggedWindows = 0;
    this.#windowStart = now;
    this.#peakInFlight = 0;
    const lag = c.maxEventLoopDelayMs > 0 ? eventLoopDelayMs() : 0;
    if (c.maxEventLoopDelayMs > 0 && lag > c.maxEventLoopDelayMs) {
      this.#laggedWindows += 1;
      this.#sum = 0;
      this.#count = 0;
      // Cut until the process is `lagging`, not after: then only critical requests run whatever the
      // limit, and each further window's cut would be paid when the lag ends (a 3 s stall took 20 to 1,
      // and 5 s to climb back, shedding most requests on a loop long idle again).
      if (this.#laggedWindows <= LAGGING_WINDOWS) this.#limit = clamp(this.#limit * c.eventLoopBackoff, c.minLimit, c.maxLimit);
      this.#lastChange = 'event-loop';
      return true;
    }
    this.#laggedWindows = 0;
    // Too few: the samples (and the peak) carry into the next window, which judges them with its own (a
    // handler slower than minSamples per window would otherwise never be judged at all: a fixed cap at
    // initialLimit), for at most CARRY_WINDOWS windows, so that no judgement rests on stale latencies.
    if (count < c.minSamples || short <= 0) {
      this.#carried += 1;
      if (this.#carried >= CARRY_WINDOWS) {
        this.#sum = 0;
        this.#count = 0;
        this.#carried = 0;
      } else this.#peakInFlight = peak;
      this.#lastChange = 'too-few-samples';
      return true;
    }
    this.#sum = 0;
    this.#count = 0;
    this.#carried = 0;
    this.#short = short;
    if (short < this.#minCur) this.#minCur = short;
    this.#halfCount += 1;
    if (this.#halfCount >= Math.max(1, Math.floor(c.baselineWindows / 2))) {
      this.#minPrev = this.#minCur;
      this.#minCur = Number.POSITIVE_INFINITY;
      this.#halfCount = 0;
    }
    const gradient = clamp((c.tolerance * this.baselineLatencyMs) / short, 0.5, 1);
    if (gradient >= 1 && peak < this.#limit / 2) {
      this.#lastChange = 'app-limited';
      return true;
    }
    const target = this.#limit * gradient + Math.sqrt(this.#limit);
    this.#limit = clamp(this.#limit * (1 - c.smoothing) + target * c.smoothing, c.minLimit, c.maxLimit);
    this.#lastChange = 'latency';
    return true;
  }
}

/** Windows in a row of event-loop lag that make the process `lagging` (one could be a single long GC pause). */
const LAGGING_WINDOWS = 2;

/** The most windows in a row whose too few samples carry into the next (2 s at the default 250 ms). */
const CARRY_WINDOWS = 8;

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}
