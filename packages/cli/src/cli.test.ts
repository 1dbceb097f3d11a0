/**
 * @module The command line in process: the replay table, --json, the progress bar on a terminal only, usage errors (exit 2), the labs.
 */
import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, USAGE } from './cli.js';
import { rerunWith } from './input/time-order.js';
import type { ReplayReport } from './replay/replay-report.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-'));

async function run(args: string[], isTTY = false): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { isTTY, write: (t: string) => (stderr += t) },
  });
  return { code, stdout, stderr };
}

const T = 1_700_000_000_000;
const csv = join(dir, 'small.csv');
writeFileSync(
  csv,
  [
    'time,key',
    ...[0, 100, 200, 500, 900, 1000, 1050, 1100, 1500].map((t, i) => `${T + t},${i === 3 || i === 8 ? 'b' : 'a'}`),
    'broken',
  ].join('\n'),
);
const POLICIES = [
  '--policy',
  '{"algorithm":"fixed-window","limit":2,"windowMs":1000}',
  '--policy',
  '{"algorithm":"sliding-log","limit":2,"windowMs":1000}',
];

describe('tollgate replay', () => {
  it('prints the comparison table, malformed lines with their line numbers, and no progress bar on a pipe', async () => {
    const { code, stdout, stderr } = await run(['replay', csv, ...POLICIES]);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toContain('Replayed 9 requests from 2 clients');
    expect(stdout).toMatch(/#1\s+fixed-window 2\/1s\s+9\s+6\s+3\s+33\.3%/);
    expect(stdout).toMatch(/#2\s+sliding-log 2\/1s\s+9\s+6\s+3\s+33\.3%\s+1 \(50\.0%\)\s+2\s+-\s+1 \/ 1/);
    expect(stdout).toContain(`${csv}:11: expected time,key[,cost]`);
  });

  it("reads standard input for '-' (gzip too), as it reads a file; '-' twice or without a stdin is a usage error", async () => {
    const { gzipSync } = await import('node:zlib');
    const { Readable } = await import('node:stream');
    const viaStdin = async (args: string[], stdin: Buffer | undefined) => {
      let stdout = '';
      let stderr = '';
      const code = await runCli(args, {
        stdout: { write: (t: string) => (stdout += t) },
        stderr: { isTTY: false, write: (t: string) => (stderr += t) },
        ...(stdin === undefined ? {} : { stdin: Readable.from([stdin]) }),
      });
      return { code, stdout, stderr };
    };
    const { readdirSync } = await import('node:fs');
    const spools = () => readdirSync(tmpdir()).filter((f) => f.startsWith('tollgate-stdin-'));
    const before = new Set(spools());
    const text = readFileSync(csv);
    for (const input of [text, gzipSync(text)]) {
      const { code, stdout } = await viaStdin(['replay', '-', ...POLICIES, '--json'], input);
      expect(code).toBe(0);
      const report = JSON.parse(stdout) as ReplayReport;
      expect(report.input).toMatchObject({ lines: 11, requests: 9, malformed: 1 });
      // The report names standard input '-', never the temporary copy it was read from.
      expect(report.input.files.map((f) => f.file)).toEqual(['-']);
      expect(report.input.malformedSamples.map((m) => m.file)).toEqual(['-']);
    }
    expect(await viaStdin(['replay', '-', '-', ...POLICIES], text)).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('can be given once'),
    });
    expect(await viaStdin(['replay', '-', ...POLICIES], undefined)).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('not available'),
    });
    // The copy of standard input is gone once the replay is over.
    expect(spools().filter((f) => !before.has(f))).toEqual([]);
  });

  it('prints JSON with --json', async () => {
    const { code, stdout } = await run(['replay', csv, ...POLICIES, '--json']);
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as ReplayReport;
    expect(report.candidates.map((c) => [c.admitted, c.rejected])).toEqual([
      [6, 3],
      [6, 3],
    ]);
    expect(report.input).toMatchObject({ lines: 11, requests: 9, malformed: 1 });
  });

  it('counts a request the core refuses (cost 0.0001) as malformed only, not as a request', async () => {
    const refused = join(dir, 'refused.csv');
    writeFileSync(refused, `${T},k,1\n${T + 1000},k,0.0001\n${T + 2000},k,1\n`);
    const policy = ['--policy', '{"algorithm":"fixed-window","limit":3,"windowMs":10000}'];
    const { code, stdout } = await run(['replay', refused, ...policy]);
    expect(code).toBe(0);
    expect(stdout).toContain('Replayed 2 requests from 1 client,');
    expect(stdout).toContain('3 lines, 1 malformed.');
    // Refused where it is read, so the sample names its file and line.
    expect(stdout).toContain("refused.csv:2: bad cost '0.0001' (must be a positive multiple of 1/1000)");
    const report = JSON.parse((await run(['replay', refused, ...policy, '--json'])).stdout) as ReplayReport;
    expect(report.input).toMatchObject({ lines: 3, requests: 2, malformed: 1 });
    expect(report.candidates[0]).toMatchObject({ requests: 2, admitted: 2, rejected: 0 });
  });

  it('lists --top clients per candidate in the table, as in --json', async () => {
    const many = join(dir, 'many-clients.csv');
    writeFileSync(many, Array.from({ length: 24 }, (_, i) => `${T + (i % 2)},c${String(i >> 1).padStart(2, '0')}`).join('\n'));
    const policy = ['--policy', '{"algorithm":"fixed-window","limit":1,"windowMs":10000}'];
    const rows = (out: string) => out.split('\n').filter((l) => /^c\d\d\s/.test(l)).length;
    expect(rows((await run(['replay', many, ...policy])).stdout)).toBe(10);
    expect(rows((await run(['replay', many, ...policy, '--top', '12'])).stdout)).toBe(12);
    expect(rows((await run(['replay', many, ...policy, '--top', '3'])).stdout)).toBe(3);
  });

  it('draws a progress bar on a terminal and clears it', async () => {
    const { stderr } = await run(['replay', csv, ...POLICIES], true);
    const ESC = String.fromCharCode(27);
    expect(stderr.startsWith('\r[#')).toBe(true);
    expect(stderr).toContain(`] 100% `);
    expect(stderr.endsWith(`lines${ESC}[K\r${ESC}[K`)).toBe(true);
  });

  it.each([
    [['replay', csv], /ERR_RL_CLI_USAGE: replay needs at least one --policy/],
    [['replay', '--policy', '{"limit":1,"windowMs":1}'], /needs at least one log file/],
    [['replay', join(dir, 'nope.log'), '--policy', '{"limit":1,"windowMs":1}'], /ERR_RL_REPLAY_INPUT: cannot read/],
    [['replay', csv, '--policy', '{"limit":0,"windowMs":1}'], /--policy #1: ERR_RL_INVALID_LIMIT/],
    [['replay', csv, ...POLICIES, '--key', 'cookie:x'], /--key must be ip, header:<name> or field:<name>/],
    [['replay', csv, ...POLICIES, '--bogus'], /^ERR_RL_CLI_USAGE: unknown option '--bogus'\n\nUsage:/],
    [['frobnicate'], /unknown command 'frobnicate'/],
  ])('exits 2 with a coded message: %j', async (args, message) => {
    const { code, stderr } = await run(args);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });
});

describe("tollgate replay: flags said in the CLI's words", () => {
  it('refuses what it would ignore or round: --time-field on nginx or CSV, a reorder window under a ms; names --trusted-proxy', async () => {
    const timeField = await run(['replay', csv, ...POLICIES, '--format', 'csv', '--time-field', 'ts']);
    expect([timeField.code, timeField.stderr]).toEqual([
      2,
      expect.stringMatching(/--time-field names a JSON field; csv lines have their time in the first column/),
    ]);
    // A file detected as CSV beside --time-field: read, and said (before: ignored without a word).
    const detected = await run(['replay', csv, ...POLICIES, '--time-field', 'ts']);
    expect([detected.code, detected.stderr]).toEqual([
      0,
      expect.stringMatching(/^warning: --time-field ts names a JSON field; .*small\.csv was read as csv/m),
    ]);
    const window = await run(['replay', csv, ...POLICIES, '--reorder-window', '0.4ms']);
    expect([window.code, window.stderr]).toEqual([2, expect.stringMatching(/--reorder-window must be a duration/)]);
    expect((await run(['replay', csv, ...POLICIES, '--reorder-window', '1.1s'])).code).toBe(0);
    // Days too, up to the 7 the window holds.
    expect((await run(['replay', csv, ...POLICIES, '--reorder-window', '7d'])).code).toBe(0);
    expect((await run(['replay', csv, ...POLICIES, '--reorder-window', '8d'])).code).toBe(2);
    expect((await run(['replay', csv, ...POLICIES, '--reorder-window', '0.0000001ms'])).code).toBe(2);
    const proxy = await run(['replay', csv, ...POLICIES, '--trusted-proxy', 'private', '--trusted-proxy', 'bogus']);
    // Before: 'keys.ip.trustedProxies[1]', an option the CLI user never wrote.
    expect([proxy.code, proxy.stderr]).toEqual([
      2,
      expect.stringMatching(/ERR_RL_INVALID_TRUSTED_PROXY: --trusted-proxy #2 is not a known preset/),
    ]);
  });
});

describe('tollgate replay: what it refuses before reading', () => {
  it('refuses --html naming an input log, by real path (a symlink too), and leaves the log as it was', async () => {
    const log = join(dir, 'victim.csv');
    writeFileSync(log, readFileSync(csv));
    const link = join(dir, 'victim-link.html');
    symlinkSync(log, link);
    for (const html of [log, link, join(dir, '.', 'victim.csv')]) {
      const { code, stdout, stderr } = await run(['replay', log, ...POLICIES, '--html', html]);
      // Before: exit 0, and the log replaced by the HTML report.
      expect([code, stdout]).toEqual([2, '']);
      expect(stderr).toMatch(/^ERR_RL_CLI_USAGE: --html '.*' is the input log '.*victim\.csv': the report would overwrite it/);
      expect(readFileSync(log, 'utf8')).toBe(readFileSync(csv, 'utf8'));
    }
  });

  it("prints Node's multi-line argument errors as one readable line, not with escaped line breaks", async () => {
    const { code, stderr } = await run(['replay', csv, ...POLICIES, '--reorder-window', '-5m']);
    expect(code).toBe(2);
    const first = stderr.split('\n')[0] as string;
    // Before: "... is ambiguous.\u000aDid you forget ...".
    expect(first).not.toContain('\\u000a');
    expect(first).toMatch(
      /^ERR_RL_CLI_USAGE: Option '--reorder-window' argument is ambiguous\. Did you forget .* use '--reorder-window=-XYZ'\.$/,
    );
    // An unknown option is the user's text: its control characters stay escaped.
    expect((await run(['replay', csv, ...POLICIES, '--x\u001b[2J'])).stderr.split('\n')[0]).toBe(
      "ERR_RL_CLI_USAGE: unknown option '--x\\u001b[2J'",
    );
  });
});

describe('tollgate replay: a log whose times are whole seconds', () => {
  // Five requests stamped in one second (nginx's $time_local has no milliseconds), against 5 per second.
  const line = '203.0.113.7 - - [10/Oct/2026:13:55:00 +0000] "GET /a HTTP/1.1" 200 12 "-" "curl"';
  const log = join(dir, 'one-second.log');
  writeFileSync(log, `${Array.from({ length: 5 }, () => line).join('\n')}\n`);
  const policy = ['--policy', '{"limit":5,"windowMs":1000,"burst":1}'];

  it('replayed as they are: the figures of a short window are approximate, said in the report and on stderr, exit 3', async () => {
    const r = await run(['replay', log, ...policy]);
    // Before: exit 0, and nothing said of the 4 rejected that requests spread over the second would not have been.
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(
      /WARNING: Every time in the log is a whole second .* candidate #1, with a window \(or a bucket's refill of its burst\) of 10 s or less/,
    );
    expect(r.stderr).toMatch(/^warning: every time in the log is a whole second.*--spread-seconds to compare .* Exit status 3\.$/m);
    const report = JSON.parse((await run(['replay', log, ...policy, '--json'])).stdout) as ReplayReport;
    expect(report.input.times).toEqual({ wholeSeconds: true, spread: false, coarse: [0] });
    expect(report.candidates[0]).toMatchObject({ admitted: 1, rejected: 4 });
  });

  it('--spread-seconds spreads each second over it, in the order the requests came: all 5 admitted, exit 0', async () => {
    const r = await run(['replay', log, ...policy, '--spread-seconds']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Times: whole seconds; each second's requests spread evenly over it (--spread-seconds).");
    const report = JSON.parse((await run(['replay', log, ...policy, '--spread-seconds', '--json'])).stdout) as ReplayReport;
    expect(report.input.times).toEqual({ wholeSeconds: true, spread: true, coarse: [0] });
    expect(report.candidates[0]).toMatchObject({ admitted: 5, rejected: 0 });
  });

  it('--spread-seconds beside a file with milliseconds: each file spread in its own order, nothing replayed out of order', async () => {
    const ms = join(dir, 'ms-beside.jsonl');
    writeFileSync(
      ms,
      Array.from({ length: 10 }, (_, i) => JSON.stringify({ time: Date.UTC(2026, 9, 10, 13, 55, 0, 50 + i * 90), key: 'k' })).join('\n'),
    );
    const report = JSON.parse((await run(['replay', log, ms, ...policy, '--spread-seconds', '--json'])).stdout) as ReplayReport;
    // Before (spread after the merge): the second's nginx requests were pushed after later JSON ones.
    expect(report.input.outOfOrder).toBe(0);
    expect(report.input.requests).toBe(15);
  });

  it("a bucket's span is the refill of its burst, whatever its windowMs: 60 per minute with a burst of 1 warns as 1 per second does", async () => {
    const short = await run(['replay', log, '--policy', '{"limit":60,"windowMs":60000,"burst":1}']);
    expect(short.code).toBe(3);
    expect(short.stderr).toMatch(/^warning: every time in the log is a whole second/m);
    // A burst refilled over more than 10 s: no warning, as a window of a minute.
    expect((await run(['replay', log, '--policy', '{"limit":60,"windowMs":60000,"burst":11}'])).code).toBe(0);
    expect((await run(['replay', log, '--policy', '{"algorithm":"sliding-window","limit":60,"windowMs":60000}'])).code).toBe(0);
    // A leaky bucket's delays are counted in its interval (333 ms here), whatever its burst (refilled in 13 s).
    expect((await run(['replay', log, '--policy', '{"algorithm":"leaky-bucket","limit":3,"windowMs":1000,"burst":40}'])).code).toBe(3);
  });

  it('a window over 10 s, times with milliseconds, or too few requests to tell: no warning', async () => {
    expect((await run(['replay', log, '--policy', '{"limit":5,"windowMs":60000}'])).code).toBe(0);
    const ms = join(dir, 'ms.csv');
    writeFileSync(ms, Array.from({ length: 10 }, (_, i) => `${T + i * 100},k`).join('\n'));
    expect((await run(['replay', ms, ...policy])).code).toBe(0);
    // In --json, nothing whole-second is claimed of times with milliseconds, --spread-seconds or not
    // (before: coarse [0], and spread true beside wholeSeconds false).
    for (const flags of [[], ['--spread-seconds']]) {
      const report = JSON.parse((await run(['replay', ms, ...policy, ...flags, '--json'])).stdout) as ReplayReport;
      expect(report.input.times).toEqual({ wholeSeconds: false, spread: false, coarse: [] });
    }
    const few = join(dir, 'few.csv');
    writeFileSync(few, `${T},k\n${T + 1000},k\n`);
    expect((await run(['replay', few, ...policy])).code).toBe(0);
  });
});

describe('tollgate replay ordering', () => {
  // A request of 0.5 s logged last, after those of 1.2, 1.3 and 1.9 s (written at request end); limit 2 per 1 s (sliding log).
  const late = join(dir, 'late.csv');
  writeFileSync(late, [`${T + 1200},a`, `${T + 1300},a`, `${T + 1900},a`, `${T + 500},a`].join('\n'));
  const policy = ['--policy', '{"algorithm":"sliding-log","limit":2,"windowMs":1000}'];
  // As `late`, with one more line before the last: the window moves to +1900 ms only once lines agree on it.
  const lateWindow = join(dir, 'late-window.csv');
  writeFileSync(lateWindow, [`${T + 1200},a`, `${T + 1300},a`, `${T + 1600},a`, `${T + 1900},a`, `${T + 500},a`].join('\n'));
  writeFileSync(join(dir, 'in-order.csv'), [`${T + 500},a`, `${T + 1200},a`].join('\n'));

  it('sorts a small input whole by default and says so; exit 0', async () => {
    const { code, stdout, stderr } = await run(['replay', late, ...policy]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toContain(
      'Time order: every file sorted whole (small enough to hold); 1 of 4 requests was logged earlier than the line before it.',
    );
    // In time order: 0.5 and 1.2 admitted, 1.3 rejected (0.5 still in (0.3, 1.3]), 1.9 admitted (only 1.2 in (0.9, 1.9]).
    expect(stdout).toMatch(/#1\s+sliding-log 2\/1s\s+4\s+3\s+1/);
  });

  it('an input already in time order says no line was earlier, not "0 of n were"', async () => {
    const { code, stdout } = await run(['replay', lateWindow.replace('late-window', 'in-order'), ...policy]);
    expect(code).toBe(0);
    expect(stdout).toContain(
      'Time order: every file sorted whole (small enough to hold); no line was logged earlier than the line before it.',
    );
  });

  it('a request later than --reorder-window is replayed late, counted in the table, the JSON and the warning; exit 3', async () => {
    const { code, stdout, stderr } = await run(['replay', lateWindow, ...policy, '--reorder-window', '500ms']);
    expect(code).toBe(3);
    expect(stdout).toContain('Time order: reorder window 500ms (--reorder-window), up to 3 requests held;');
    expect(stdout).toContain('WARNING: 1 request (20.0%) came more than the 500ms window after later ones, the worst 1.4s late');
    // The table (and the HTML report) suggest what the stderr line does: a value --reorder-window takes, that holds them.
    expect(stdout).toContain('Rerun with --sort, or --reorder-window 2s.');
    expect(stderr).toBe(
      'warning: 1 request came more than the 500ms reorder window after later ones (worst 1.4s late) and was replayed out of time order: ' +
        'its decision is approximate. Rerun with --sort, or --reorder-window 2s. Exit status 3.\n',
    );
    const json = await run(['replay', lateWindow, ...policy, '--reorder-window', '500ms', '--json']);
    expect(json.code).toBe(3);
    expect((JSON.parse(json.stdout) as ReplayReport).input.order).toEqual({
      mode: 'window',
      reason: 'flag',
      windowMs: 500,
      disordered: 1,
      late: 1,
      worstLateMs: 1400,
      maxHeld: 3,
    });
    // A window as long as the worst lateness holds them all.
    expect((await run(['replay', lateWindow, ...policy, '--reorder-window', '1.4s'])).code).toBe(0);
  });

  it('nothing replayed (every line malformed, or an empty file) is an input error: exit 2 with ERR_RL_REPLAY_INPUT, after the report', async () => {
    const garbage = join(dir, 'garbage.csv');
    writeFileSync(garbage, 'time,key\nyesterday,a\nnoon,b\n');
    const bad = await run(['replay', garbage, ...POLICIES]);
    expect(bad.code).toBe(2);
    expect(bad.stdout).toContain('2 malformed');
    expect(bad.stderr).toMatch(/^ERR_RL_REPLAY_INPUT: nothing was replayed: all 2 lines were malformed \(the first, .*garbage\.csv:2: /);
    const empty = join(dir, 'empty.log');
    writeFileSync(empty, '');
    const none = await run(['replay', empty, ...POLICIES]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(
      /^ERR_RL_REPLAY_INPUT: nothing was replayed: the input holds no request; check --format, --time-field and --key/,
    );
  });

  it("escapes the log's control characters in what it writes to stderr: a malformed line's text cannot drive the terminal", async () => {
    const hostile = join(dir, 'hostile.csv');
    const esc = '\u001b[2J\u001b]0;owned\u0007';
    writeFileSync(hostile, `time,key\n${esc},a\n${esc},b\n${T},a\n`);
    const mostly = await run(['replay', hostile, ...POLICIES]);
    expect(mostly.code).toBe(3);
    const none = join(dir, 'hostile-only.csv');
    writeFileSync(none, `time,key\n${esc},a\n`);
    const nothing = await run(['replay', none, ...POLICIES]);
    expect(nothing.code).toBe(2);
    for (const { stderr } of [mostly, nothing]) {
      expect(stderr).toContain('\\u001b[2J\\u001b]0;owned\\u0007');
      // biome-ignore lint/suspicious/noControlCharactersInRegex: what must not be there.
      expect(stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
    }
  });

  it('a gzip cut short: the lines up to the cut are replayed, a warning names the file, exit 3', async () => {
    const { gzipSync } = await import('node:zlib');
    const whole = gzipSync(Array.from({ length: 20_000 }, (_, i) => `${T + i},k${i % 50}`).join('\n'));
    const cut = join(dir, 'rotating.csv.gz');
    writeFileSync(cut, whole.subarray(0, Math.floor(whole.length / 2)));
    const r = await run(['replay', cut, ...POLICIES, '--json']);
    // Before: exit 2 and no report, where zcat gives the lines before the cut.
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(
      /^warning: .*rotating\.csv\.gz ended early \(unexpected end of file: .* after [\d,]+ lines: the report covers them/m,
    );
    const report = JSON.parse(r.stdout) as ReplayReport;
    expect(report.input.files[0]?.cutShort).toMatch(/unexpected end of file/);
    expect(report.input.malformed).toBe(0);
    // Cut before its first whole line: nothing replayed (exit 2), and the cut is what the warning names.
    const early = join(dir, 'early.csv.gz');
    writeFileSync(early, whole.subarray(0, 30));
    const e = await run(['replay', early, ...POLICIES]);
    expect(e.code).toBe(2);
    expect(e.stderr).toMatch(/^warning: .*early\.csv\.gz ended early \(unexpected end of file: .* after 0 lines: .* dropped\.$/m);
  });

  it('more lines malformed than read: the report, a warning naming the first, and exit 3 (not a success)', async () => {
    const mostly = join(dir, 'mostly-garbage.csv');
    writeFileSync(mostly, `time,key\nyesterday,a\nnoon,b\n${T},a\nlater,c\n`);
    const r = await run(['replay', mostly, ...POLICIES]);
    // Before: exit 0, as if one request in four lines were the log.
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('3 malformed');
    expect(r.stderr).toMatch(/^warning: 3 lines were malformed and only 1 read \(the first, .*mostly-garbage\.csv:2: .*Exit status 3\.$/m);
    // As many read as malformed: a success.
    const half = join(dir, 'half-garbage.csv');
    writeFileSync(half, `time,key\nyesterday,a\n${T},a\n`);
    expect((await run(['replay', half, ...POLICIES])).code).toBe(0);
  });

  it('suggests a window only when the CLI accepts it (up to 7 days); past that, --sort alone', () => {
    expect(rerunWith(1400)).toBe('--sort, or --reorder-window 2s');
    expect(rerunWith(7 * 86_400_000)).toBe('--sort, or --reorder-window 10080m');
    expect(rerunWith(7 * 86_400_000 + 1)).toBe('--sort');
    expect(rerunWith(365 * 86_400_000)).toBe('--sort');
  });

  it('the HTML report carries the warning', async () => {
    const html = join(dir, 'late.html');
    const { code } = await run(['replay', late, ...policy, '--reorder-window', '0', '--html', html]);
    expect(code).toBe(3);
    expect(readFileSync(html, 'utf8')).toMatch(
      /<div class="warning" id="late-requests"><strong>Warning:<\/strong> 1 request \(25\.0%\) came more than the 0ms window/,
    );
  });

  it.each([
    [['--reorder-window', '5'], /--reorder-window must be a duration with a unit/],
    [['--reorder-window', 'soon'], /--reorder-window must be a duration/],
    [['--reorder-window', '8d'], /--reorder-window must be a duration/],
    [['--reorder-window', '5m', '--sort'], /--sort and --reorder-window exclude each other/],
  ])('refuses %j with exit 2', async (flags, message) => {
    const { code, stderr } = await run(['replay', late, ...policy, ...flags]);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });
});

describe('tollgate --help', () => {
  it.each([['--help'], ['-h'], ['help'], ['replay', '--help'], ['replay', csv, '-h'], ['lab', '--help'], ['lab', '-h']])(
    '%j prints the usage on stdout and exits 0',
    async (...args) => {
      const { code, stdout, stderr } = await run(args);
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      expect(stdout).toBe(USAGE);
    },
  );

  it.each([
    ['replay', '--version'],
    ['replay', csv, '-v'],
    ['lab', 'A', '--version'],
    ['lab', '-v'],
  ])('%j prints the version on stdout and exits 0, as --help does anywhere', async (...args) => {
    let stdout = '';
    let stderr = '';
    const io = { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) }, version: '1.2.3' };
    expect({ code: await runCli(args, io), stdout, stderr }).toEqual({ code: 0, stdout: '1.2.3\n', stderr: '' });
  });

  it('no command at all is a usage error: the usage on stderr, exit 2', async () => {
    const { code, stdout, stderr } = await run([]);
    expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
    expect(stderr).toBe(USAGE);
  });
});

describe('tollgate lab', () => {
  it('prints a lab table with its notes', async () => {
    const { code, stdout } = await run(['lab', 'A']);
    expect(code).toBe(0);
    expect(stdout).toContain('A. 199 requests in 2 s across a fixed-window boundary');
    expect(stdout).toMatch(/fixed-window\s+199\s+0\s+99\s+100/);
    expect(stdout).toContain('- Token bucket, GCRA and leaky bucket admit 103');
  });

  it('prints every lab as JSON with --json, seeded', async () => {
    const { code, stdout } = await run(['lab', 'all', '--json', '--seed', '1']);
    expect(code).toBe(0);
    expect((JSON.parse(stdout) as { name: string }[]).map((l) => l.name)).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('refuses an unknown lab', async () => {
    const { code, stderr } = await run(['lab', 'z']);
    expect(code).toBe(2);
    expect(stderr).toContain('lab needs one name: a, b, c, d, e or all');
  });
});

describe('tollgate replay flags', () => {
  const log = join(dir, 'proxied.log');
  const line = (peer: string, xff: string, apiKey: string, bytes: number, second: number) =>
    `${peer} - - [23/Nov/2026:09:00:0${second} +0000] "GET / HTTP/1.1" 200 ${bytes} "-" "ua" "${xff}" "${apiKey}"`;
  writeFileSync(
    log,
    [
      line('10.0.0.5', '198.51.100.1', 'k1', 1, 1),
      line('10.0.0.5', '198.51.100.2', 'k1', 1, 1),
      line('10.0.0.6', '2001:db8:1:2::1', 'k2', 1, 2),
      line('10.0.0.6', '2001:db8:1:3::1', 'k2', 3, 2),
    ].join('\n'),
  );
  const base = [
    'replay',
    log,
    '--policy',
    '{"limit":5,"windowMs":1000}',
    '--nginx-fields',
    'http_x_forwarded_for,http_x_api_key',
    '--json',
  ];
  const clients = async (args: string[]) => {
    const { code, stdout, stderr } = await run([...base, ...args]);
    expect(code).toBe(0);
    return { report: JSON.parse(stdout) as ReplayReport, stderr };
  };

  it('keys by the proxy, with a warning, unless it is a --trusted-proxy', async () => {
    const untrusted = await clients([]);
    expect(untrusted.report.clients).toBe(2);
    expect(untrusted.stderr).toContain('warning: WRN_RL_UNTRUSTED_FORWARDED_HEADER');
    // The warning speaks of "the field 'peer'": its value is on the line.
    expect(untrusted.stderr).toMatch(/--trusted-proxy .*\{"peer":"[0-9a-f.:]+"\}$/m);
    expect((await clients(['--trusted-proxy', '10.0.0.0/8'])).report.clients).toBe(4);
    // Two IPv6 clients in one /48.
    expect((await clients(['--trusted-proxy', '10.0.0.0/8', '--ipv6-prefix', '48'])).report.clients).toBe(3);
  });

  it('keys by a logged header and takes the cost from a field', async () => {
    const { report } = await clients(['--key', 'header:x-api-key', '--cost', 'body_bytes_sent', '--top', '1']);
    expect(report.clients).toBe(2);
    expect(report.candidates[0]?.topRejected).toEqual([]);
    const strict = await run([
      'replay',
      log,
      '--policy',
      '{"limit":3,"windowMs":1000}',
      '--nginx-fields',
      'http_x_forwarded_for,http_x_api_key',
      '--key',
      'header:x-api-key',
      '--cost',
      'body_bytes_sent',
      '--json',
    ]);
    // k2 spends 1 then asks for 3 of the 2 left.
    expect((JSON.parse(strict.stdout) as ReplayReport).candidates[0]).toMatchObject({ admitted: 3, rejected: 1 });
  });

  it('reads a file of another format with --format, and --html writes the page', async () => {
    const data = join(dir, 'data.txt');
    writeFileSync(data, `{"time":${T},"key":"a"}\n{"time":${T + 1},"key":"a"}\n`);
    const html = join(dir, 'out.html');
    const { code, stdout, stderr } = await run([
      'replay',
      data,
      '--format',
      'jsonl',
      '--policy',
      '{"limit":1,"windowMs":1000}',
      '--html',
      html,
    ]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/#1\s+gcra 1\/1s\s+2\s+1\s+1/);
    expect(stderr).toBe(`wrote ${html}\n`);
  });
});
