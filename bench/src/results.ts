/**
 * @module The shape of one benchmark run's results, as the sections produce them and the report reads them.
 */
import type { ConcurrencyResult } from './concurrency/concurrency-section.js';
import type { DecisionCellResult } from './decisions/decision-cell.js';
import type { HotKeyResult } from './hotkeys/hot-key-section.js';
import type { InterleavedResult } from './interleaved/interleaved-section.js';
import type { ObservabilityResult } from './observability/observability-section.js';
import type { RedisCellResult } from './redis/redis-cell.js';
import type { ReplayResult } from './replay/replay-section.js';

/** A cell that did not produce figures: its subject has not landed, or it failed. */
export interface Missing {
  readonly status: 'not available' | 'failed';
  readonly reason: string;
}

export type Outcome<T> = ({ readonly status: 'ok' } & T) | Missing;

export interface DecisionRow {
  readonly subject: string;
  readonly label: string;
  readonly kind: 'tollgate' | 'peer' | 'baseline';
  readonly scenario: string;
  readonly outcome: Outcome<DecisionCellResult>;
}

export interface RedisRow {
  readonly subject: string;
  readonly label: string;
  readonly kind: 'tollgate' | 'peer' | 'baseline';
  readonly outcome: Outcome<RedisCellResult>;
}

export interface HttpRound {
  /** Requests per second of each variant in this round. */
  readonly rps: Readonly<Record<string, number>>;
}

export interface HttpVariantResult {
  /** `wire`: the bare server sending exactly tollgate's status, rate-limit fields and body, statically. */
  readonly variant: 'bare' | 'wire' | 'tollgate' | 'peer';
  readonly label: string;
  /** undefined when the variant could not run (see `missing`). */
  readonly missing: Missing | undefined;
  /** Median requests per second over the rounds. */
  readonly rps: number;
  /** Per round: this variant's rps / bare's rps in the same round. */
  readonly ratios: readonly number[];
  /** Median of `ratios`. */
  readonly ratio: number;
  /** tollgate only (else empty): per round, tollgate's rps / wire's rps in the same round. */
  readonly ratiosToWire: readonly number[];
  /** Median of `ratiosToWire` (NaN when empty): the limiter's own cost, the bytes it sends set apart. */
  readonly ratioToWire: number;
  /** Responses whose status was not the mode's (allow: not 2xx; block: not 429). */
  readonly unexpected: number;
  readonly requests: number;
}

export interface HttpGroup {
  readonly framework: 'express' | 'fastify' | 'koa';
  readonly mode: 'allow' | 'block';
  readonly variants: readonly HttpVariantResult[];
  readonly error: string | undefined;
}

export interface Machine {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly os: string;
  readonly node: string;
  readonly redis: string | undefined;
  readonly loadGenerator: string;
  /** 1-minute load average when the run started and when it ended: other work on the machine moves the figures. */
  readonly loadAverage: { readonly start: number; readonly end: number };
  readonly commit: string;
  readonly date: string;
}

export interface BenchResults {
  readonly mode: 'full' | 'quick' | 'smoke';
  readonly machine: Machine;
  readonly versions: Readonly<Record<string, string>>;
  readonly decisions: readonly DecisionRow[] | undefined;
  readonly decisionScenarios: readonly { readonly id: string; readonly label: string }[];
  readonly redis: { readonly rows: readonly RedisRow[]; readonly keys: number; readonly error: string | undefined } | undefined;
  readonly http:
    | { readonly groups: readonly HttpGroup[]; readonly tool: string; readonly roundSeconds: number; readonly rounds: number }
    | undefined;
  /** Section D: adaptive shedding against an unprotected twin, and per-key concurrency. */
  readonly concurrency?: ConcurrencyResult | undefined;
  /** Section H: one hot key and cold keys on one Redis, with and without RedisStore `localBatch`. */
  readonly hotKeys?: HotKeyResult | undefined;
  /** Section I: tollgate against express-rate-limit and v0.1, and each feature's cost, interleaved in one process. */
  readonly interleaved?: InterleavedResult | undefined;
  /** Section O: what observability costs a decision, paired against the build without it. */
  readonly observability?: ObservabilityResult | undefined;
  /** Section R: `tollgate replay` throughput. */
  readonly replay?: ReplayResult | undefined;
  /** Human-readable parameters of the run (runs, durations), for the report. */
  readonly settings: readonly string[];
}
