/**
 * @module A whole replay: read the files, put each in time order (sorted whole, or through a bounded
 * reorder window: see time-order.ts), merge them, push every request through the engine, return the
 * report. A request the core refuses (a key it cannot take) counts as a malformed line, like a line
 * that does not parse.
 */
import type { IpKeyOptions, Logger } from '@tollgate/core';
import { createInputStats, type InputStats, MALFORMED_SAMPLES, mergeByTime, readRequests } from '../input/log-source.js';
import { createKeyer, type KeySpec } from '../input/request-key.js';
import type { LogFormat, LogRequest } from '../input/request-parser.js';
import { createOrderStats, DEFAULT_REORDER_WINDOW_MS, filesToSortWhole, inTimeOrder, type OrderStats } from '../input/time-order.js';
import {
  COARSE_WINDOW_MS,
  judgeWholeSeconds,
  type Spreading,
  spreadWholeSeconds,
  timeSpanMs,
  WholeSeconds,
} from '../input/whole-seconds.js';
import type { ProgressBar } from '../report/progress-bar.js';
import { type Candidate, createReplayEngine, type ReplayOptions } from './replay-engine.js';
import type { ReplayFile, ReplayReport, ReplayTimes } from './replay-report.js';

export interface RunReplayOptions extends ReplayOptions {
  readonly files: readonly string[];
  /** What the report calls each of `files` (default: its path); the CLI names standard input's copy `-`. */
  readonly names?: readonly string[];
  readonly candidates: readonly Candidate[];
  readonly format?: LogFormat;
  readonly key?: KeySpec;
  readonly costField?: string;
  readonly nginxExtraFields?: readonly string[];
  readonly timeField?: string;
  readonly ip?: Omit<IpKeyOptions, 'logger'>;
  /** Receives the key functions' warnings (e.g. a logged X-Forwarded-For from a peer not in --trusted-proxy). */
  readonly logger?: Logger;
  readonly progress?: ProgressBar;
  /**
   * `true` sorts every file whole (memory grows with the log); `false` reorders through a window of
   * `reorderWindowMs`; `'auto'` sorts when the log text is at most 128 MiB (gzip: uncompressed), else
   * reorders. Defaults to `'auto'`.
   */
  readonly sort?: boolean | 'auto';
  /** The reorder window when not sorting whole, ms. Defaults to 5 minutes; 0 replays in file order. */
  readonly reorderWindowMs?: number;
  /** `true` spreads the requests of each whole second evenly over it (input/whole-seconds.ts). Defaults to `false`. */
  readonly spreadSeconds?: boolean;
}

/**
 * How the files will be ordered: `sort`/`reorderWindowMs` as given, or by the input's size (a gzip file's
 * text is counted by inflating it, up to the limit, hence a promise).
 */
export async function chooseOrder(
  files: readonly string[],
  sort: boolean | 'auto' = 'auto',
  reorderWindowMs?: number,
): Promise<OrderStats> {
  return (await orderOf(files, sort, reorderWindowMs)).order;
}

/**
 * The order, and which files are sorted whole: as the flags say, or by size (the smaller files sorted whole
 * even when the larger ones go through the window). The sizes are read once, so the mode and each file's
 * choice agree on a log still growing.
 */
async function orderOf(
  files: readonly string[],
  sort: boolean | 'auto' = 'auto',
  reorderWindowMs?: number,
): Promise<{ order: OrderStats; whole: boolean[] }> {
  const windowMs = reorderWindowMs ?? DEFAULT_REORDER_WINDOW_MS;
  if (sort !== 'auto') {
    const order = sort ? createOrderStats('sort', 'flag', null) : createOrderStats('window', 'flag', windowMs);
    return { order, whole: files.map(() => sort) };
  }
  const whole = await filesToSortWhole(files);
  return { order: createOrderStats(whole.every(Boolean) ? 'sort' : 'window', 'auto', windowMs), whole };
}

export async function runReplay(options: RunReplayOptions): Promise<ReplayReport> {
  const logger: Logger = options.logger ?? { warn() {}, error() {} };
  const stats: InputStats = createInputStats(options.files, options.names);
  const keyer = createKeyer({ ...(options.ip === undefined ? {} : { ip: options.ip }), logger });
  const sourceOptions = {
    format: options.format,
    key: options.key,
    costField: options.costField,
    nginxExtraFields: options.nginxExtraFields ?? ['http_x_forwarded_for'],
    // Unquoted fields are read only under names the user gave (see ParserOptions.nginxUnquoted).
    nginxUnquoted: options.nginxExtraFields !== undefined,
    timeField: options.timeField,
    keyer,
  };
  const engine = createReplayEngine(options.candidates, options);
  const { order, whole } = await orderOf(options.files, options.sort, options.reorderWindowMs);
  const sources = options.files.map((_, i) => inTimeOrder(readRequests(i, sourceOptions, stats), order, undefined, whole[i]));
  let refused = 0;
  // Whole seconds are judged, and spread, per file: a millisecond log beside a whole-second one passes as it is.
  const seconds = options.files.map(() => new WholeSeconds());
  const spreading: Spreading[] = options.files.map(() => ({ moved: false }));
  const watched = sources.map((s, i) => (seconds[i] as WholeSeconds).watch(s));
  const spread = options.spreadSeconds === true ? watched.map((s, i) => spreadWholeSeconds(s, spreading[i])) : watched;
  for await (const batch of mergeByTime(spread)) {
    for (let i = 0; i < batch.length; i++) {
      const r = batch[i] as LogRequest;
      try {
        engine.push(r.at, r.key, r.cost);
      } catch (error) {
        // ERR_RL_INVALID_KEY (too long a field) or a cost the core refuses: the core decided nothing.
        refused += 1;
        if (stats.malformedSamples.length < MALFORMED_SAMPLES) {
          stats.malformedSamples.push({
            file: '(merged)',
            line: 0,
            reason: (error as Error).message.split('. See ')[0] ?? '',
            text: r.key.slice(0, 160),
          });
        }
      }
    }
    options.progress?.update(stats.readBytes, stats.totalBytes, `${stats.lines.toLocaleString('en-US')} lines`);
  }
  options.progress?.finish();
  const { files, times } = judgeTimes(options, stats, seconds, spreading);
  return engine.report({
    files,
    lines: stats.lines,
    malformed: stats.malformed + refused,
    malformedSamples: stats.malformedSamples,
    order,
    times,
  });
}

/**
 * What the whole-second times did, per file and over the run: nothing when no file's times are whole seconds
 * (before: `coarse` listed the short candidates and `spread` said true whatever the times, which contradicted
 * `wholeSeconds: false`; then one judgement over all files spread a whole-second file beside a millisecond one
 * and said `spread: false`, and spread the `.000` requests of a millisecond log).
 */
function judgeTimes(
  options: RunReplayOptions,
  stats: InputStats,
  seconds: readonly WholeSeconds[],
  spreading: readonly Spreading[],
): { files: ReplayFile[]; times: ReplayTimes } {
  const judged = judgeWholeSeconds(seconds);
  const files = stats.files.map((f, i): ReplayFile => {
    const wholeSeconds = judged.files[i] === true;
    const spread = options.spreadSeconds === true && (wholeSeconds || spreading[i]?.moved === true);
    return { ...f, wholeSeconds, spread };
  });
  const coarse = files.some((f) => f.wholeSeconds)
    ? options.candidates.flatMap((c, i) => (c.policies.some((p) => timeSpanMs(p) <= COARSE_WINDOW_MS) ? [i] : []))
    : [];
  return { files, times: { wholeSeconds: judged.wholeSeconds, spread: files.some((f) => f.spread), coarse } };
}
