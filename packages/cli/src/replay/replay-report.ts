/**
 * @module The numbers of a replay, as `--json` prints them and the table and the HTML report show them.
 * Counts are requests; times are integer ms.
 */
import type { PolicyOptions } from '@tollgate/core';
import type { FileStats } from '../input/log-source.js';
import type { OrderStats } from '../input/time-order.js';

/** One client (key) and what a candidate did to it. */
export interface ClientRow {
  readonly key: string;
  readonly requests: number;
  readonly rejected: number;
  readonly longestStreak: number;
  /** Requests this candidate and the first one decided differently. */
  readonly disagreements: number;
}

/** Reject streaks (consecutive rejected requests of one client) of length `from`..`to`. */
export interface StreakBucket {
  readonly from: number;
  readonly to: number;
  readonly count: number;
}

export interface CandidateReport {
  readonly index: number;
  readonly label: string;
  readonly policies: readonly PolicyOptions[];
  readonly requests: number;
  readonly admitted: number;
  readonly rejected: number;
  /** Rejected because the cost can never fit (counted in `rejected` too). */
  readonly costExceedsCapacity: number;
  readonly clientsRejected: number;
  /** clientsRejected / clients, 0..1. */
  readonly clientsRejectedShare: number;
  readonly longestStreak: { readonly length: number; readonly key: string | null };
  /** Shaped delay of admitted requests (leaky-bucket candidates only), nearest-rank percentiles. */
  readonly delayMs: { readonly p50: number; readonly p99: number; readonly max: number } | null;
  /** Against the first candidate (null for the first): requests rejected by this one only, by the first only. */
  readonly disagreement: { readonly onlyThis: number; readonly onlyFirst: number; readonly total: number; readonly share: number } | null;
  /** Clients with the most rejected requests. */
  readonly topRejected: readonly ClientRow[];
  /** Clients with the most disagreements with the first candidate (empty for the first). */
  readonly topDisagreeing: readonly ClientRow[];
  readonly streaks: readonly StreakBucket[];
  /**
   * Admitted and rejected per `timeline.bucketMs`, from `timeline.startMs`; `peak*` the busiest second of
   * each slice (equal to the counts when slices are 1 s; requests replayed late are in the counts only).
   */
  readonly series: {
    readonly admitted: readonly number[];
    readonly rejected: readonly number[];
    readonly peakAdmitted: readonly number[];
    readonly peakRejected: readonly number[];
  };
}

/** One of the busiest minutes (most requests), second by second. */
export interface BusyMinute {
  readonly startMs: number;
  readonly requests: number;
  /** Per candidate, 60 counts each (second 0 to 59 of the minute). */
  readonly candidates: readonly { readonly admitted: readonly number[]; readonly rejected: readonly number[] }[];
}

/** One file as read (input/log-source.ts), and what its time stamps allowed (input/whole-seconds.ts). */
export interface ReplayFile extends FileStats {
  /** Every time of the file was a whole second, enough of them to tell (5; or in all, when every file's were). */
  readonly wholeSeconds: boolean;
  /** `--spread-seconds` spread its seconds: a whole-second file, or one whose requests it moved before its first time with milliseconds. */
  readonly spread: boolean;
}

/** What the log's time stamps allow (see `ReplayReport.input.times`). */
export interface ReplayTimes {
  readonly wholeSeconds: boolean;
  readonly spread: boolean;
  readonly coarse: readonly number[];
}

export interface ReplayReport {
  readonly input: {
    /** Per file, as read (input/log-source.ts), with its times judged (`ReplayFile`). */
    readonly files: readonly ReplayFile[];
    readonly lines: number;
    readonly requests: number;
    readonly malformed: number;
    readonly malformedSamples: readonly { file: string; line: number; reason: string; text: string }[];
    /** Requests whose time is before the one replayed just before them (the limiter never moves back). */
    readonly outOfOrder: number;
    /** How the input was put in time order, and what fell outside the reorder window (null: pushed by hand). */
    readonly order: OrderStats | null;
    /**
     * The log's times (input/whole-seconds.ts), judged per file (`files[].wholeSeconds`, `files[].spread`):
     * `wholeSeconds` when every request's time was a whole second, in every file; `spread` when
     * `--spread-seconds` spread a file's seconds; `coarse`, when a file's times are whole seconds, the candidates
     * (indexes) with a policy window (or a bucket's refill of its burst, `timeSpanMs`) of 10 s or less, whose figures whole-second times make approximate
     * unless spread. Without a whole-second file, `coarse` is empty. Null: requests pushed by hand.
     */
    readonly times: ReplayTimes | null;
  };
  /** Distinct keys seen (up to `maxClients`; later new keys are replayed but not tracked per client). */
  readonly clients: number;
  readonly untrackedRequests: number;
  /** Limiter state entries dropped to stay within `--max-keys` (MemoryStore eviction). */
  readonly evictions: number;
  readonly timeline: {
    readonly firstMs: number | null;
    readonly lastMs: number | null;
    readonly startMs: number;
    readonly bucketMs: number;
  };
  /** The busiest minutes of the log (in time order), per second: where bursts show. */
  readonly busiestMinutes: readonly BusyMinute[];
  readonly candidates: readonly CandidateReport[];
}
