/**
 * @module A whole replay: read and merge the files, push every request through the engine, return the
 * report. A request the core refuses (a key it cannot take) counts as a malformed line, like a line
 * that does not parse.
 */
import type { IpKeyOptions, Logger } from '@tollgate/core';
import { createInputStats, type InputStats, MALFORMED_SAMPLES, mergeByTime, readRequests } from '../input/log-source.js';
import { createKeyer, type KeySpec } from '../input/request-key.js';
import type { LogFormat } from '../input/request-parser.js';
import type { ProgressBar } from '../report/progress-bar.js';
import { type Candidate, createReplayEngine, type ReplayOptions } from './replay-engine.js';
import type { ReplayReport } from './replay-report.js';

export interface RunReplayOptions extends ReplayOptions {
  readonly files: readonly string[];
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
}

export async function runReplay(options: RunReplayOptions): Promise<ReplayReport> {
  const logger: Logger = options.logger ?? { warn() {}, error() {} };
  const stats: InputStats = createInputStats(options.files);
  const keyer = createKeyer({ ...(options.ip === undefined ? {} : { ip: options.ip }), logger });
  const sourceOptions = {
    format: options.format,
    key: options.key,
    costField: options.costField,
    nginxExtraFields: options.nginxExtraFields ?? ['http_x_forwarded_for'],
    timeField: options.timeField,
    keyer,
  };
  const engine = createReplayEngine(options.candidates, options);
  const sources = options.files.map((_, i) => readRequests(i, sourceOptions, stats));
  let refused = 0;
  for await (const batch of mergeByTime(sources)) {
    for (let i = 0; i < batch.length; i++) {
      const r = batch[i] as { at: number; key: string; cost: number };
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
  return engine.report({
    files: stats.files,
    lines: stats.lines,
    malformed: stats.malformed + refused,
    malformedSamples: stats.malformedSamples,
  });
}
