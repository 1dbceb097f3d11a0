/**
 * @module The `tollgate` command line: `tollgate replay <file...> --policy <json> ...` and
 * `tollgate lab <name>`. Parses arguments with `util.parseArgs`, runs, writes the table (or JSON, or an
 * HTML file), and returns the exit code: 0 done, 2 a usage or input error (printed, no stack trace),
 * 3 a replay done but with requests that fell outside the reorder window (the report says how many and
 * how late; its figures for them are approximate).
 */
import { realpathSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { type LogFields, type Logger, RateLimitConfigError } from '@tollgate/core';
import { formatLine } from '@tollgate/core/adapter';
import { CliError } from './cli-error.js';
import { parseKeySpec } from './input/request-key.js';
import { LOG_FORMATS, type LogFormat } from './input/request-parser.js';
import { STDIN_NAME, spoolStdin } from './input/stdin-spool.js';
import { formatDuration, MAX_REORDER_WINDOW_MS, parseDuration, rerunWith } from './input/time-order.js';
import { renderLabHtml, renderLabText } from './labs/lab-report.js';
import { LAB_NAMES, type LabName, runLab } from './labs/labs.js';
import { parseCandidates } from './replay/candidates.js';
import type { ReplayReport } from './replay/replay-report.js';
import { type RunReplayOptions, runReplay } from './replay/run-replay.js';
import { createProgressBar, type ProgressTarget } from './report/progress-bar.js';
import { renderReplayHtml } from './report/replay-html.js';
import { describeTimes, renderReplayTable } from './report/replay-table.js';
import { escapeControl } from './report/text-table.js';

export interface CliIo {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: ProgressTarget;
  /** What `-` reads (the process's standard input); without it, `-` is a usage error. */
  readonly stdin?: NodeJS.ReadableStream;
  /** What `--version` prints: the bin passes its package's version. */
  readonly version?: string;
}

export const USAGE = `Usage:
  tollgate replay <file...|-> --policy <json|file> [--policy <json|file> ...] [options]
  tollgate lab <${LAB_NAMES.join('|')}|all> [--json] [--html <file>] [--seed <n>]
  tollgate --version

Replay access logs through candidate policies in virtual time (the log's own timestamps), in one pass.
A --policy is a policy as @tollgate/core takes it ('{"limit":100,"windowMs":60000}'), a list of
policies enforced together, a plan {"name":"...","policies":[...]}, or the path of a JSON file with one.
The first --policy is the baseline the others are compared with. A file named - is standard input
(zcat access.log.gz | tollgate replay - --policy ...), copied to a temporary file first.

Labs (each prints tables of generated traffic against the algorithms, and says where tollgate differs
from the textbook figure):
  a  199 requests in 2 s across a fixed-window boundary
  b  sustained 2x overload against a 60 s window, per 10 s (the fixed window's boundary wave)
  c  a page load of 12 requests against bursts 1 to 20
  d  sliding-window estimate vs exact log, request by request on the same history (Poisson)
  e  100 requests in the last 0.1 s of a window, then 10/s for 2 minutes: the most in any rolling minute

Replay options:
  --format <nginx|jsonl|csv>   input format (default: by a .csv or .json* name, else by the first lines)
  --key <ip|header:NAME|field:NAME>
                               what a client is (default: the client address for nginx and JSON,
                               the key column for CSV)
  --trusted-proxy <cidr>       a proxy allowed to name the client in a logged X-Forwarded-For (repeatable;
                               presets: loopback, private, ...); default none: the peer address is the client
  --ipv6-prefix <bits>         IPv6 clients grouped by this prefix (default 64)
  --ipv4-prefix <bits>         IPv4 clients grouped by this prefix (default 32)
  --cost <field>               the field holding each request's cost (default 1; JSON 'cost'; CSV 3rd column)
  --nginx-fields <a,b,...>     names of the quoted nginx fields after the user agent
                               (default http_x_forwarded_for; a header X-Api-Key logs as http_x_api_key)
  --time-field <name>          JSON field with the time (default: time, timestamp, @timestamp or ts)
  --reorder-window <duration>  requests are replayed in time order: each file is reordered within this
                               window (e.g. 90s, 5m, 1h, 1d, up to 7d; 0 = file order). Default 5m, enough for logs
                               written at request end; inputs of up to 128 MiB of text are sorted whole
                               instead, unless this is given
  --sort                       sort each file whole by time (holds the whole log in memory)
  --spread-seconds             a log whose times are whole seconds (nginx $time_local): spread each
                               second's requests evenly over it, in the order they came (default: all
                               at the second's start, which short windows reject more of; warned, exit 3)
  --max-keys <n>               limiter entries kept per candidate, evicted like the MemoryStore (default 1000000)
  --top <n>                    clients listed per candidate (default 10)
  --json                       print the report as JSON instead of a table
  --html <file>                also write a self-contained HTML report with charts
  --no-progress                no progress bar (there is none unless stderr is a terminal)
  -h, --help                   this text
  -v, --version                the package's version

Exit status: 0 replayed; 2 usage or input error; 3 replayed, but some requests came later than the
reorder window allowed (replayed out of order: counted, with the worst lateness, in the report), or more
lines were malformed than read, or every time was a whole second and a candidate's window is 10 s or less
(without --spread-seconds), or a gzip file ended early (cut short: its lines up to the cut are replayed).
`;

function int(value: string | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new CliError('ERR_RL_CLI_USAGE', `--${name} must be an integer from ${min} to ${max}; got '${value}'`);
  return n;
}

/**
 * Writes `text` to stderr as one line, its control characters escaped (table text's `escapeControl`):
 * messages quote the log (a malformed line's time, a key) and argv, which must not drive the terminal.
 */
function say(io: CliIo, text: string): void {
  io.stderr.write(`${escapeControl(text)}\n`);
}

/** The core's log lines on stderr, a line each: the message, then its fields (which say what it is about: a peer address, a key). */
function stderrLogger(io: CliIo): Logger {
  const line = (fields: LogFields, message: string): void => {
    const { code: _code, ...about } = fields;
    say(io, `warning: ${Object.keys(about).length === 0 ? message : formatLine(about, message)}`);
  };
  return { warn: line, error: line };
}

function writeHtml(path: string, html: string): void {
  try {
    writeFileSync(path, html);
  } catch (error) {
    throw new CliError('ERR_RL_CLI_USAGE', `cannot write --html '${path}' (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
}

const REPLAY_FLAGS = {
  policy: { type: 'string', multiple: true },
  format: { type: 'string' },
  key: { type: 'string' },
  'trusted-proxy': { type: 'string', multiple: true },
  'ipv6-prefix': { type: 'string' },
  'ipv4-prefix': { type: 'string' },
  cost: { type: 'string' },
  'nginx-fields': { type: 'string' },
  'time-field': { type: 'string' },
  'max-keys': { type: 'string' },
  'reorder-window': { type: 'string' },
  sort: { type: 'boolean' },
  'spread-seconds': { type: 'boolean' },
  top: { type: 'string' },
  json: { type: 'boolean' },
  html: { type: 'string' },
  'no-progress': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

type ReplayFlags = ReturnType<typeof parseArgs<{ options: typeof REPLAY_FLAGS; allowPositionals: true; strict: true }>>['values'];

async function replayCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, strict: true, options: REPLAY_FLAGS });
  if (values.help === true) return help(io);
  if (values.version === true) return version(io);
  if (positionals.length === 0) throw new CliError('ERR_RL_CLI_USAGE', 'replay needs at least one log file (or - for standard input)');
  const options = replayOptions(values, io);
  if (values.html !== undefined) refuseHtmlOverInput(values.html, positionals);
  const input = await spoolStdin(positionals, io.stdin);
  try {
    return finishReplay(await runReplay({ ...options, files: input.files, names: positionals }), values, io);
  } finally {
    input.cleanup();
  }
}

/** The real path of `path` (links resolved), or undefined when it does not exist (or cannot be resolved). */
function realPath(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Refuses an `--html` file that is one of the input logs, by real path (`./access.log`, a symlink to it):
 * before, the report was written over the log without a word. Checked before anything is read.
 */
function refuseHtmlOverInput(html: string, files: readonly string[]): void {
  const target = realPath(html);
  if (target === undefined) return;
  const log = files.find((f) => f !== STDIN_NAME && realPath(f) === target);
  if (log !== undefined) {
    throw new CliError('ERR_RL_CLI_USAGE', `--html '${html}' is the input log '${log}': the report would overwrite it; name another file`);
  }
}

/** What a replay runs on, from the parsed flags (all but the files); throws a CliError for a bad flag. */
function replayOptions(values: ReplayFlags, io: CliIo): Omit<RunReplayOptions, 'files'> {
  if (values.policy === undefined || values.policy.length === 0) {
    throw new CliError('ERR_RL_CLI_USAGE', `replay needs at least one --policy, e.g. --policy '{"limit":100,"windowMs":60000}'`);
  }
  const format = values.format;
  if (format !== undefined && !LOG_FORMATS.includes(format as LogFormat)) {
    throw new CliError('ERR_RL_CLI_USAGE', `--format must be one of ${LOG_FORMATS.join(', ')}; got '${format}'`);
  }
  if (values['time-field'] !== undefined && (format === 'nginx' || format === 'csv')) {
    // Before: ignored without a word, as the format has its own time.
    throw new CliError(
      'ERR_RL_CLI_USAGE',
      `--time-field names a JSON field; ${format} lines have their time in ${format === 'nginx' ? '$time_local (or $msec, with --nginx-fields)' : 'the first column'}`,
    );
  }
  const key = values.key === undefined ? undefined : parseKeySpec(values.key);
  if (values.key !== undefined && key === undefined) {
    throw new CliError('ERR_RL_CLI_USAGE', `--key must be ip, header:<name> or field:<name>; got '${values.key}'`);
  }
  const candidates = parseCandidates(values.policy);
  const ipv6Prefix = int(values['ipv6-prefix'], 'ipv6-prefix', 32, 128);
  const ipv4Prefix = int(values['ipv4-prefix'], 'ipv4-prefix', 16, 32);
  const maxKeys = int(values['max-keys'], 'max-keys', 1, 100_000_000);
  const top = int(values.top, 'top', 1, 1000);
  const reorderWindowMs = reorderWindow(values);
  return {
    candidates,
    ...(format === undefined ? {} : { format: format as LogFormat }),
    ...(key === undefined ? {} : { key }),
    ...(values.cost === undefined ? {} : { costField: values.cost }),
    ...(values['nginx-fields'] === undefined ? {} : { nginxExtraFields: values['nginx-fields'].split(',').map((s) => s.trim()) }),
    ...(values['time-field'] === undefined ? {} : { timeField: values['time-field'] }),
    ...(maxKeys === undefined ? {} : { maxKeys }),
    ...(top === undefined ? {} : { top }),
    ...(values.sort === true ? { sort: true } : reorderWindowMs === undefined ? {} : { sort: false, reorderWindowMs }),
    ...(values['spread-seconds'] === true ? { spreadSeconds: true } : {}),
    ip: {
      ...(values['trusted-proxy'] === undefined ? {} : { trustedProxies: values['trusted-proxy'] }),
      ...(ipv6Prefix === undefined ? {} : { ipv6Prefix }),
      ...(ipv4Prefix === undefined ? {} : { ipv4Prefix }),
    },
    logger: stderrLogger(io),
    progress: values['no-progress'] !== true ? createProgressBar(io.stderr) : createProgressBar({ write() {} }),
  };
}

/** `--reorder-window` in ms, or undefined when not given; a usage error beside `--sort` or past 7 days. */
function reorderWindow(values: ReplayFlags): number | undefined {
  if (values['reorder-window'] === undefined) return undefined;
  if (values.sort === true) throw new CliError('ERR_RL_CLI_USAGE', '--sort and --reorder-window exclude each other: pick one');
  const ms = parseDuration(values['reorder-window']);
  if (ms === undefined || ms > MAX_REORDER_WINDOW_MS)
    throw new CliError(
      'ERR_RL_CLI_USAGE',
      `--reorder-window must be a duration with a unit (500ms, 90s, 5m, 1h, 1d; 0 for none) up to 7d; got '${values['reorder-window']}'`,
    );
  return ms;
}

/** Writes the report (table or JSON, and the HTML file); returns the exit code (2 nothing replayed, 3 approximate: some out of order, most lines malformed, whole seconds, a gzip cut short). */
function finishReplay(report: ReplayReport, values: ReplayFlags, io: CliIo): number {
  if (values.html !== undefined) {
    writeHtml(values.html, renderReplayHtml(report));
    say(io, `wrote ${values.html}`);
  }
  io.stdout.write(values.json === true ? `${JSON.stringify(report, null, 2)}\n` : renderReplayTable(report));
  // Said first: a file cut before its first whole line is why nothing was replayed (exit 2, below).
  const cut = report.input.files.filter((f) => f.cutShort !== undefined);
  for (const f of cut) {
    say(
      io,
      `warning: ${f.file} ended early (${f.cutShort}: a gzip file still being written, or a copy cut short) after ` +
        `${f.lines.toLocaleString('en-US')} lines: the report covers them, its last, cut line dropped.` +
        (report.input.requests === 0 ? '' : ' Exit status 3.'),
    );
  }
  if (report.input.requests === 0) {
    // Nothing replayed (an empty input, a wrong --format or --time-field): an input error, not a success.
    say(io, nothingReplayed(report).message);
    return 2;
  }
  const timeField = values['time-field'];
  for (const f of report.input.files) {
    // Refused up front with --format nginx or csv; a file whose format was detected says so here.
    if (timeField !== undefined && f.format !== undefined && f.format !== 'jsonl') {
      say(io, `warning: --time-field ${timeField} names a JSON field; ${f.file} was read as ${f.format}, with the time of its own lines.`);
    }
  }
  const mostlyMalformed = report.input.malformed > report.input.requests;
  if (mostlyMalformed) say(io, mostlyMalformedWarning(report));
  const order = report.input.order;
  const late = order !== null && order.late > 0;
  if (late) {
    say(
      io,
      `warning: ${order.late.toLocaleString('en-US')} ${order.late === 1 ? 'request' : 'requests'} came more than the ${formatDuration(order.windowMs ?? 0)} reorder window ` +
        `after later ones (worst ${formatDuration(order.worstLateMs)} late) and ${order.late === 1 ? 'was' : 'were'} replayed out of time order: ${order.late === 1 ? 'its decision is' : 'their decisions are'} approximate. ` +
        `Rerun with ${rerunWith(order.worstLateMs)}. Exit status 3.`,
    );
  }
  const coarse = describeTimes(report).warning;
  if (coarse !== null) say(io, `warning: ${coarse} Exit status 3.`);
  if (late || coarse !== null || cut.length > 0) return 3;
  return mostlyMalformed ? 3 : 0;
}

/**
 * More lines malformed than read: the figures describe a minority of the log (a wrong `--format` or
 * `--time-field` that a few lines happen to fit), so the replay is not the success exit 0 would say.
 */
function mostlyMalformedWarning(report: ReplayReport): string {
  const { malformed, requests, malformedSamples } = report.input;
  const first = malformedSamples[0];
  return (
    `warning: ${malformed.toLocaleString('en-US')} lines were malformed and only ${requests.toLocaleString('en-US')} read ` +
    `(the first, ${first?.file ?? ''}:${first?.line ?? ''}: ${first?.reason ?? ''}): the report describes the lines read only; ` +
    'check --format, --time-field and --key. Exit status 3.'
  );
}

/** The error of a replay that read no request: how many lines were malformed, and the first reason. */
function nothingReplayed(report: ReplayReport): CliError {
  const { malformed, malformedSamples } = report.input;
  const first = malformedSamples[0];
  const why =
    malformed === 0
      ? 'the input holds no request'
      : `all ${malformed.toLocaleString('en-US')} lines were malformed (the first, ${first?.file ?? ''}:${first?.line ?? ''}: ${first?.reason ?? ''})`;
  return new CliError('ERR_RL_REPLAY_INPUT', `nothing was replayed: ${why}; check --format, --time-field and --key`);
}

async function labCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: {
      json: { type: 'boolean' },
      html: { type: 'string' },
      seed: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'v' },
    },
  });
  if (values.help === true) return help(io);
  if (values.version === true) return version(io);
  const name = positionals[0]?.toLowerCase();
  if (positionals.length !== 1 || name === undefined || (name !== 'all' && !LAB_NAMES.includes(name as LabName))) {
    throw new CliError('ERR_RL_CLI_USAGE', `lab needs one name: ${LAB_NAMES.join(', ')} or all`);
  }
  const seed = int(values.seed, 'seed', 0, 2 ** 32 - 1);
  const names = name === 'all' ? LAB_NAMES : [name as LabName];
  const results = names.map((n) => runLab(n, seed === undefined ? {} : { seed }));
  if (values.html !== undefined) {
    writeHtml(values.html, renderLabHtml(results));
    say(io, `wrote ${values.html}`);
  }
  io.stdout.write(
    values.json === true
      ? `${JSON.stringify(results.length === 1 ? results[0] : results, null, 2)}\n`
      : results.map(renderLabText).join('\n'),
  );
  return 0;
}

/** `--help` or `-h` anywhere: the usage on stdout, exit 0 (help asked for is not an error). */
function help(io: CliIo): number {
  io.stdout.write(USAGE);
  return 0;
}

/** `--version` or `-v` anywhere: the package's version on stdout, exit 0. */
function version(io: CliIo): number {
  io.stdout.write(`${io.version ?? 'unknown (runCli was not given a version)'}\n`);
  return 0;
}

/** Runs the CLI on `argv` (without `node` and the script); resolves to the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === 'replay') return await replayCommand(rest, io);
    if (command === 'lab') return await labCommand(rest, io);
    if (command === 'help' || command === '--help' || command === '-h') return help(io);
    if (command === 'version' || command === '--version' || command === '-v') return version(io);
    if (command === undefined) {
      io.stderr.write(USAGE);
      return 2;
    }
    throw new CliError('ERR_RL_CLI_USAGE', `unknown command '${command}' (replay, lab, help, version)`);
  } catch (error) {
    if (error instanceof CliError || error instanceof RateLimitConfigError) {
      say(io, error.message);
      return 2;
    }
    const code = (error as NodeJS.ErrnoException).code;
    if (error instanceof TypeError && code?.startsWith('ERR_PARSE_ARGS') === true) {
      // Node's own text for an unknown option goes on about positionals after `--`, which no command here takes.
      // Its other texts are sentences on lines of their own (an ambiguous `--reorder-window -5m`): one line
      // here, as say() writes (before: the line breaks were escaped, `\u000a`, in the middle of the text).
      // Only option names the CLI knows are quoted in those; an unknown name, the user's text, stays escaped.
      const message =
        code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
          ? (error.message.split('. ')[0] as string).replace(/^Unknown/, 'unknown')
          : error.message.split('\n').join(' ');
      say(io, `ERR_RL_CLI_USAGE: ${message}`);
      io.stderr.write(`\n${USAGE}`);
      return 2;
    }
    throw error;
  }
}
