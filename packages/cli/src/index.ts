/**
 * @module @tollgate/cli as a library: the replay engine and its inputs, for scripts that want the numbers
 * without the command line. Named exports only.
 */

export { type CliIo, runCli, USAGE } from './cli.js';
export { CliError, type CliErrorCode } from './cli-error.js';
export { type InputStats, type MalformedLine, mergeByTime, readRequests } from './input/log-source.js';
export { type KeySpec, parseKeySpec } from './input/request-key.js';
export { createLineParser, detectFormat, LOG_FORMATS, type LogFormat, type LogRequest } from './input/request-parser.js';
export {
  AUTO_SORT_BYTES,
  DEFAULT_REORDER_WINDOW_MS,
  inTimeOrder,
  type OrderMode,
  type OrderStats,
  parseDuration,
} from './input/time-order.js';
export { renderLabHtml, renderLabText } from './labs/lab-report.js';
export type { LabChart, LabResult, LabTable } from './labs/lab-result.js';
export { LAB_NAMES, type LabName, type LabOptions, runLab } from './labs/labs.js';
export { describePolicies, parseCandidate, parseCandidates } from './replay/candidates.js';
export { type Candidate, createReplayEngine, type ReplayEngine, type ReplayOptions } from './replay/replay-engine.js';
export type { BusyMinute, CandidateReport, ClientRow, ReplayReport, StreakBucket } from './replay/replay-report.js';
export { chooseOrder, type RunReplayOptions, runReplay } from './replay/run-replay.js';
export { renderReplayHtml } from './report/replay-html.js';
export { renderReplayTable } from './report/replay-table.js';
export { type AccessLogOptions, type AccessLogOrder, formatNginxTime, generateAccessLog } from './synthetic/access-log.js';
export { createRandom, type Random } from './synthetic/seeded-random.js';
