/**
 * @module `createLoadShedder`: the server-wide cap on requests in flight, fixed (`maxInFlight`) or
 * adaptive (`adaptive`, see gradient-limit.ts). A request takes a ticket on arrival and gives it back
 * when its response is done; past the cap it is shed (the adapters answer 503). Requests carry a
 * priority, and each priority may fill only its share of the cap, so the low ones are shed first and
 * the critical ones (health checks, paying customers) last. Clock-injected and timer-free: the
 * adaptive limit moves when a request arrives or finishes after a window has passed.
 */
import { RateLimitConfigError } from '../errors.js';
import { type KeysEnum, positiveInteger, readOptions } from '../internal/read-options.js';
import { catchRejection } from '../internal/rejection.js';
import type { Clock } from '../types.js';
import { createEventLoopDelaySampler, type EventLoopDelaySampler } from './event-loop-delay.js';
import {
  ADAPTIVE_DEFAULTS,
  type AdaptiveLimitConfig,
  type AdaptiveLimitOptions,
  GradientLimit,
  type LimitChange,
} from './gradient-limit.js';

/** Priorities, most important last. A priority may fill `shares[priority]` of the cap. */
export type ShedPriority = 'low' | 'normal' | 'high' | 'critical';
/** The request priorities of the load shedder, lowest first. */
export const SHED_PRIORITIES: readonly ShedPriority[] = ['low', 'normal', 'high', 'critical'];

/** Default shares of the cap: low traffic is shed once half the cap is in use, critical only at the cap. */
export const DEFAULT_SHARES: Readonly<Record<ShedPriority, number>> = Object.freeze({ low: 0.5, normal: 0.8, high: 0.9, critical: 1 });

/** Options of `createLoadShedder`: the cap (fixed or adaptive), the priority of a request and the share of the cap each priority may use. */
// biome-ignore lint/suspicious/noExplicitAny: the default lets one options type serve every framework's request.
export interface LoadShedderOptions<Req = any> {
  /** A fixed cap on requests in flight in this process. Give this or `adaptive`. */
  maxInFlight?: number;
  /** An adaptive cap found from latency and event-loop delay; `{}` takes every default. Give this or `maxInFlight`. */
  adaptive?: AdaptiveLimitOptions;
  /**
   * The priority of a request. Defaults to none: every request may fill the whole cap. With a function,
   * each priority fills `shares[priority]` of the cap.
   */
  priority?: (request: Req) => ShedPriority;
  /** Share of the cap each priority may fill, each in (0, 1]. Defaults to `DEFAULT_SHARES`. */
  shares?: Partial<Record<ShedPriority, number>>;
  /** `Retry-After` of a shed request, in ms (sent rounded up to seconds). Defaults to `1000`. */
  retryAfterMs?: number;
  /**
   * The clock of the latency samples. Defaults to `performance.now()`, read at every sample: the
   * limiter's default clock shares one reading per event-loop turn, which measured a synchronous
   * handler's 150 ms as 0 and left the adaptive limit blind to it.
   */
  clock?: Clock;
  /** Event-loop delay in ms over the last window; defaults to `perf_hooks.monitorEventLoopDelay` (p99). For tests. */
  eventLoopDelay?: () => number;
}

/** What the shedder has seen, for dashboards and tests. */
export interface LoadShedderState {
  readonly mode: 'fixed' | 'adaptive';
  /** The current cap (requests of the top priority admitted while in flight is below it). */
  readonly limit: number;
  readonly inFlight: number;
  /** Admitted since creation. */
  readonly admitted: number;
  /** Shed since creation, in total and by priority. */
  readonly shed: number;
  readonly shedByPriority: Readonly<Record<ShedPriority, number>>;
  /** adaptive: average latency (ms) of the last judged window, and the baseline it is compared with; 0 for fixed. */
  readonly shortLatencyMs: number;
  readonly baselineLatencyMs: number;
  /** adaptive: why the limit last changed. */
  readonly lastChange: LimitChange | undefined;
  /** adaptive: the event loop lags (two windows in a row): every request but the critical is shed; false for fixed. */
  readonly lagging: boolean;
}

/** A ticket for one admitted request. `release` is idempotent: only the first call counts. */
export interface ShedTicket {
  /** Gives the slot back; `sample: false` (a rejected or aborted request) keeps its latency out of the controller. */
  release(sample?: boolean): void;
}

/** A server-wide in-flight cap (the `loadShedding` option): admits by priority, refuses the rest with a 503. */
// biome-ignore lint/suspicious/noExplicitAny: see LoadShedderOptions.
export interface LoadShedder<Req = any> {
  /** The priority of `request` (`'critical'` when no priority function is set, so it may fill the whole cap). */
  priorityOf(request: Req): ShedPriority;
  /** A ticket when the request fits under its priority's share of the cap, else undefined (shed it). */
  acquire(priority?: ShedPriority): ShedTicket | undefined;
  /** `Retry-After` of a shed request, ms. */
  readonly retryAfterMs: number;
  state(): LoadShedderState;
  /** Stops the event-loop delay monitor. */
  close(): void;
}

const KEYS: KeysEnum<LoadShedderOptions> = {
  maxInFlight: true,
  adaptive: true,
  priority: true,
  shares: true,
  retryAfterMs: true,
  clock: true,
  eventLoopDelay: true,
};
const ADAPTIVE_KEYS: KeysEnum<AdaptiveLimitOptions> = {
  initialLimit: true,
  minLimit: true,
  maxLimit: true,
  windowMs: true,
  minSamples: true,
  tolerance: true,
  smoothing: true,
  baselineWindows: true,
  maxEventLoopDelayMs: true,
  eventLoopBackoff: true,
};
const SHED_EXAMPLE = '{ maxInFlight: 100 } or { adaptive: { maxLimit: 200 } }';

/** The shedder's default clock: `performance.now()` at every read (looked up each time, so fake timers apply). */
const preciseClock: Clock = () => performance.now();

function invalid(option: string, message: string, received: unknown): RateLimitConfigError {
  return new RateLimitConfigError('ERR_RL_INVALID_SHED', option, message, received);
}

function shedInteger(value: unknown, path: string, hint: string): number {
  return positiveInteger(value, 'ERR_RL_INVALID_SHED', path, `must be a positive integer (${hint})`);
}

function inRange(value: unknown, path: string, lo: number, hi: number, loOpen: boolean, hint: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value > hi || value < lo || (loOpen && value === lo)) {
    throw invalid(path, `must be a number in ${loOpen ? '(' : '['}${lo}, ${hi}] (${hint})`, value);
  }
  return value;
}

/** Validates `adaptive` options and fills in the defaults. */
export function parseAdaptiveOptions(input: AdaptiveLimitOptions, path: string): AdaptiveLimitConfig {
  const o = readOptions(input, ADAPTIVE_KEYS, path, '{ maxLimit: 200 }');
  const c = { ...ADAPTIVE_DEFAULTS };
  const ints = ['initialLimit', 'minLimit', 'maxLimit', 'windowMs', 'minSamples', 'baselineWindows'] as const;
  for (const k of ints) if (o[k] !== undefined) c[k] = shedInteger(o[k], `${path}.${k}`, 'see the adaptive options');
  if (o.tolerance !== undefined) c.tolerance = inRange(o.tolerance, `${path}.tolerance`, 1, 10, false, 'e.g. 1.5');
  if (o.smoothing !== undefined) c.smoothing = inRange(o.smoothing, `${path}.smoothing`, 0, 1, true, 'e.g. 0.2');
  if (o.eventLoopBackoff !== undefined)
    c.eventLoopBackoff = inRange(o.eventLoopBackoff, `${path}.eventLoopBackoff`, 0, 0.99, true, 'e.g. 0.8');
  if (o.maxEventLoopDelayMs !== undefined) {
    c.maxEventLoopDelayMs = inRange(o.maxEventLoopDelayMs, `${path}.maxEventLoopDelayMs`, 0, 60_000, false, '0 turns it off');
  }
  if (c.minLimit > c.maxLimit) throw invalid(`${path}.minLimit`, `must not exceed maxLimit (${c.maxLimit})`, c.minLimit);
  if (o.initialLimit === undefined) c.initialLimit = Math.min(Math.max(c.initialLimit, c.minLimit), c.maxLimit);
  if (c.initialLimit < c.minLimit || c.initialLimit > c.maxLimit) {
    throw invalid(`${path}.initialLimit`, `must be within [minLimit, maxLimit] = [${c.minLimit}, ${c.maxLimit}]`, c.initialLimit);
  }
  return Object.freeze(c);
}

class Ticket implements ShedTicket {
  #done = false;
  constructor(
    private readonly shedder: Shedder,
    private readonly start: number,
  ) {}
  release(sample = true): void {
    if (this.#done) return;
    this.#done = true;
    this.shedder.finish(this.start, sample);
  }
}

class Shedder implements LoadShedder {
  inFlight = 0;
  admitted = 0;
  shedCount = 0;
  readonly shedBy: Record<ShedPriority, number> = { low: 0, normal: 0, high: 0, critical: 0 };
  readonly fixed: number;
  readonly gradient: GradientLimit | undefined;
  readonly delay: () => number;
  readonly sampler: EventLoopDelaySampler | undefined;

  constructor(
    max: number | undefined,
    adaptive: AdaptiveLimitConfig | undefined,
    readonly priorityFn: ((request: unknown) => ShedPriority) | undefined,
    readonly shares: Readonly<Record<ShedPriority, number>>,
    readonly retryAfterMs: number,
    readonly clock: Clock,
    eventLoopDelay: (() => number) | undefined,
  ) {
    this.fixed = max ?? 0;
    this.gradient = adaptive === undefined ? undefined : new GradientLimit(adaptive, clock());
    if (adaptive !== undefined && adaptive.maxEventLoopDelayMs > 0 && eventLoopDelay === undefined) {
      this.sampler = createEventLoopDelaySampler(10, undefined, adaptive.windowMs);
      const sampler = this.sampler;
      this.delay = () => sampler.read();
    } else {
      this.sampler = undefined;
      this.delay = eventLoopDelay ?? (() => 0);
    }
  }

  get limit(): number {
    return this.gradient?.limit ?? this.fixed;
  }

  /** Whether `priority` was given by a priority function as critical (without one, every request is critical for the cap, not for a lagging loop). */
  private critical(priority: ShedPriority): boolean {
    return priority === 'critical' && this.priorityFn !== undefined;
  }

  priorityOf(request: unknown): ShedPriority {
    if (this.priorityFn === undefined) return 'critical';
    const p: unknown = this.priorityFn(request);
    if (SHED_PRIORITIES.includes(p as ShedPriority)) return p as ShedPriority;
    // A promise (an async priority) cannot be waited for here: observed, so its rejection is never unhandled.
    catchRejection(p, () => undefined);
    return 'normal';
  }

  acquire(priority: ShedPriority = 'critical'): ShedTicket | undefined {
    const now = this.clock();
    this.gradient?.update(now, this.delay);
    const share = this.shares[priority] ?? 1;
    // While the loop lags (gradient-limit.ts `lagging`), only what a priority function calls critical
    // runs: the cap would admit a synchronous handler's requests one by one, however far behind it is.
    const cap = this.gradient?.lagging === true && !this.critical(priority) ? 0 : Math.max(1, Math.floor(this.limit * share));
    if (this.inFlight >= cap) {
      this.shedCount += 1;
      this.shedBy[priority] += 1;
      return undefined;
    }
    this.inFlight += 1;
    this.admitted += 1;
    this.gradient?.observeInFlight(this.inFlight);
    return new Ticket(this, now);
  }

  finish(start: number, sample: boolean): void {
    this.inFlight -= 1;
    const g = this.gradient;
    if (g === undefined) return;
    const now = this.clock();
    if (sample) g.sample(now - start);
    g.update(now, this.delay);
  }

  state(): LoadShedderState {
    const g = this.gradient;
    return {
      mode: g === undefined ? 'fixed' : 'adaptive',
      limit: this.limit,
      inFlight: this.inFlight,
      admitted: this.admitted,
      shed: this.shedCount,
      shedByPriority: { ...this.shedBy },
      shortLatencyMs: g?.shortLatencyMs ?? 0,
      baselineLatencyMs: g?.baselineLatencyMs ?? 0,
      lastChange: g?.lastChange,
      lagging: g?.lagging ?? false,
    };
  }

  close(): void {
    this.sampler?.close();
  }
}

/** True for a shedder made by `createLoadShedder` (passed as `loadShedding` to share one cap between middlewares). */
export function isLoadShedder<Req>(value: LoadShedderOptions<Req> | LoadShedder<Req>): value is LoadShedder<Req> {
  return value instanceof Shedder;
}

/**
 * Creates a shedder; options are validated here (`ERR_RL_INVALID_SHED`), each named as the caller wrote it:
 * at the top for a shedder made on its own, under `path` for one made from a middleware's option
 * (`loadShedding.maxInFlight`).
 */
export function createLoadShedder<Req>(input: LoadShedderOptions<Req>, path = 'options'): LoadShedder<Req> {
  const o = readOptions(input, KEYS, path, SHED_EXAMPLE);
  const prefix = path === 'options' ? '' : `${path}.`;
  if ((o.maxInFlight === undefined) === (o.adaptive === undefined)) {
    throw invalid(path, `needs exactly one of maxInFlight and adaptive, e.g. ${SHED_EXAMPLE}`, input);
  }
  const max = o.maxInFlight === undefined ? undefined : shedInteger(o.maxInFlight, `${prefix}maxInFlight`, 'requests in flight');
  const adaptive = o.adaptive === undefined ? undefined : parseAdaptiveOptions(o.adaptive, `${prefix}adaptive`);
  if (o.priority !== undefined && typeof o.priority !== 'function') {
    throw invalid(`${prefix}priority`, "must be a function of the request returning 'low', 'normal', 'high' or 'critical'", o.priority);
  }
  const shares = { ...DEFAULT_SHARES };
  if (o.shares !== undefined) {
    const given = readOptions(o.shares, DEFAULT_SHARES, `${prefix}shares`, '{ low: 0.5 }');
    for (const [k, v] of Object.entries(given) as [ShedPriority, unknown][]) {
      shares[k] = inRange(v, `${prefix}shares.${k}`, 0, 1, true, 'the share of the cap this priority may fill');
    }
    // A lower priority with a larger share fills the cap before the higher one may: priorities inverted.
    for (let i = 1; i < SHED_PRIORITIES.length; i++) {
      const lower = SHED_PRIORITIES[i - 1] as ShedPriority;
      const higher = SHED_PRIORITIES[i] as ShedPriority;
      if (shares[higher] < shares[lower])
        throw invalid(
          `${prefix}shares.${higher}`,
          `must be at least the share of '${lower}' (${shares[lower]}): a higher priority never fills less of the cap`,
          shares[higher],
        );
    }
  }
  const retryAfterMs = o.retryAfterMs === undefined ? 1000 : shedInteger(o.retryAfterMs, `${prefix}retryAfterMs`, 'milliseconds');
  for (const k of ['clock', 'eventLoopDelay'] as const) {
    if (o[k] !== undefined && typeof o[k] !== 'function') throw invalid(`${prefix}${k}`, 'must be a function returning milliseconds', o[k]);
  }
  return new Shedder(
    max,
    adaptive,
    o.priority as ((request: unknown) => ShedPriority) | undefined,
    Object.freeze(shares),
    retryAfterMs,
    o.clock ?? preciseClock,
    o.eventLoopDelay,
  ) as LoadShedder<Req>;
}
