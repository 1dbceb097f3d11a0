/**
 * @module @tollgate/cli as a library: the replay engine and its inputs, for scripts that want the numbers
 * without the command line. Named exports only.
 */

export { type CliIo, runCli, USAGE } from './cli.js';
export { CliError, type CliErrorCode } from './cli-error.js';
export { type InputStats, type MalformedLine, mergeByTime, readRequests } from './input/log-source.js';
export { type KeySpec, parseKeySpec } from './input/request-key.js';
export { createLineParser, detectFormat, LOG_FORMATS, type LogFormat, type LogRequest } from './input/request-parser.js';
export { renderLabHtml, renderLabText } from './labs/lab-report.js';
export type { LabChart, LabResult, LabTable } from './labs/lab-result.js';
export { LAB_NAMES, type LabName, type LabOptions, runLab } from './labs/labs.js';
export { describePolicies, parseCandidate, parseCandidates } from './replay/candidates.js';
export { type Candidate, createReplayEngine, type ReplayEngine, type ReplayOptions } from './replay/replay-engine.js';
export type { CandidateReport, ClientRow, ReplayReport, StreakBucket } from './replay/replay-report.js';
export { type RunReplayOptions, runReplay } from './replay/run-replay.js';
export { renderReplayHtml } from './report/replay-html.js';
export { renderReplayTable } from './report/replay-table.js';
export { type AccessLogOptions, formatNginxTime, generateAccessLog } from './synthetic/access-log.js';
export { createRandom, type Random } from './synthetic/seeded-random.js';
