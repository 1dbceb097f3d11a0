/**
 * @module Whole-second times judged per file, through the command line: a millisecond log whose bursts land
 * on `.000` is not spread, a whole-second log beside a millisecond one is (and warned of, by name), and
 * inputs all whole or all with milliseconds are judged as before.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';
import type { ReplayReport } from './replay-report.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-whole-files-'));

async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { isTTY: false, write: (t: string) => (stderr += t) },
  });
  return { code, stdout, stderr };
}

async function json(args: string[]): Promise<ReplayReport> {
  return JSON.parse((await run([...args, '--json'])).stdout) as ReplayReport;
}

const figures = (r: ReplayReport) => r.candidates.map((c) => ({ admitted: c.admitted, rejected: c.rejected }));
const T0 = Date.UTC(2026, 9, 10, 13, 55, 0);
const POLICIES = ['--policy', '{"limit":3,"windowMs":1000,"burst":3}', '--policy', '{"algorithm":"sliding-log","limit":3,"windowMs":1000}'];

// One client of a millisecond log: bursts of 5 in one ms, every other one on a whole second (.000), then one 999 ms later.
const ms = join(dir, 'ms.jsonl');
const msLines: string[] = [];
for (let s = 0; s < 40; s++) {
  const base = T0 + s * 2000 + (s % 2 === 0 ? 0 : 137);
  for (const t of [base, base, base, base, base, base + 999])
    msLines.push(JSON.stringify({ time: new Date(t).toISOString(), key: 'ms-client' }));
}
writeFileSync(ms, `${msLines.join('\n')}\n`);

// Another client, in an nginx log (whole seconds): 6 requests in each of 10 seconds.
const nginx = join(dir, 'access.log');
const nginxLines: string[] = [];
for (let s = 0; s < 10; s++) {
  const line = `203.0.113.7 - - [10/Oct/2026:13:55:${String(s).padStart(2, '0')} +0000] "GET /a HTTP/1.1" 200 12 "-" "curl"`;
  for (let i = 0; i < 6; i++) nginxLines.push(line);
}
writeFileSync(nginx, `${nginxLines.join('\n')}\n`);

describe('--spread-seconds on a millisecond log whose bursts land on .000', () => {
  it('replays it as it is: the figures of the exact times, spread false', async () => {
    const exact = await json(['replay', ms, ...POLICIES]);
    const flagged = await json(['replay', ms, ...POLICIES, '--spread-seconds']);
    // Before: the .000 bursts were spread over their second, so more were admitted than the exact times allow.
    expect(figures(flagged)).toEqual(figures(exact));
    // Worked by hand: of each burst of 5 and the request 999 ms later, gcra (3 per 1 s, burst 3) admits 3 and
    // that one (its turn came at +1000 ms, within the 667 ms the burst allows), the sliding log 3.
    expect(figures(exact)).toEqual([
      { admitted: 160, rejected: 80 },
      { admitted: 120, rejected: 120 },
    ]);
    expect(flagged.input.times).toEqual({ wholeSeconds: false, spread: false, coarse: [] });
    expect(flagged.input.files[0]).toMatchObject({ file: ms, wholeSeconds: false, spread: false });
  });
});

describe('a whole-second log merged with a millisecond one', () => {
  it('is warned of by name without --spread-seconds (exit 3), in the table, on stderr, in --json per file and in the HTML report', async () => {
    const html = join(dir, 'mixed.html');
    const r = await run(['replay', nginx, ms, ...POLICIES, '--html', html]);
    // Before: exit 0 and no warning, the whole-second file bunched at the start of each second unsaid.
    expect(r.code).toBe(3);
    const named = `the times of ${nginx} are whole seconds (nginx's $time_local, Apache's %t), so the requests of one second there were replayed`;
    expect(r.stdout).toContain(`WARNING: T${named.slice(1)}`);
    expect(r.stderr).toContain(`warning: ${named}`);
    expect(readFileSync(html, 'utf8')).toContain('<div class="warning" id="whole-seconds">');
    const report = await json(['replay', nginx, ms, ...POLICIES]);
    expect(report.input.times).toEqual({ wholeSeconds: false, spread: false, coarse: [0, 1] });
    expect(report.input.files.map((f) => [f.file, f.wholeSeconds, f.spread])).toEqual([
      [nginx, true, false],
      [ms, false, false],
    ]);
  });

  it('--spread-seconds spreads the whole-second file only, says so per file, exit 0', async () => {
    const r = await run(['replay', nginx, ms, ...POLICIES, '--spread-seconds']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Times: whole seconds in ${nginx}; each second's requests spread evenly over it (--spread-seconds).`);
    const mixed = await json(['replay', nginx, ms, ...POLICIES, '--spread-seconds']);
    // Before: {"wholeSeconds":false,"spread":false}, though the nginx file was spread (and the .000 bursts too).
    expect(mixed.input.times).toEqual({ wholeSeconds: false, spread: true, coarse: [0, 1] });
    expect(mixed.input.files.map((f) => [f.file, f.wholeSeconds, f.spread])).toEqual([
      [nginx, true, true],
      [ms, false, false],
    ]);
    // Two clients, one per file: the figures are the nginx file's spread plus the millisecond file's as it is.
    const spread = figures(await json(['replay', nginx, ...POLICIES, '--spread-seconds']));
    const exact = figures(await json(['replay', ms, ...POLICIES]));
    expect(figures(mixed)).toEqual(
      spread.map((s, i) => ({ admitted: s.admitted + (exact[i]?.admitted ?? 0), rejected: s.rejected + (exact[i]?.rejected ?? 0) })),
    );
    expect(figures(mixed)).not.toEqual(figures(await json(['replay', nginx, ms, ...POLICIES])));
  });
});

describe('inputs all whole, or all with milliseconds: judged as before', () => {
  it('all whole: the warning and exit 3 of before, or spread with --spread-seconds; each file whole', async () => {
    const r = await run(['replay', nginx, ...POLICIES]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^warning: every time in the log is a whole second \(nginx's \$time_local, Apache's %t\), so the requests/m);
    const plain = await json(['replay', nginx, ...POLICIES]);
    expect(plain.input.times).toEqual({ wholeSeconds: true, spread: false, coarse: [0, 1] });
    expect(plain.input.files[0]).toMatchObject({ wholeSeconds: true, spread: false });
    const spread = await run(['replay', nginx, ...POLICIES, '--spread-seconds']);
    expect(spread.code).toBe(0);
    expect(spread.stdout).toContain("Times: whole seconds; each second's requests spread evenly over it (--spread-seconds).");
    const flagged = await json(['replay', nginx, ...POLICIES, '--spread-seconds']);
    expect(flagged.input.times).toEqual({ wholeSeconds: true, spread: true, coarse: [0, 1] });
    expect(flagged.input.files[0]).toMatchObject({ wholeSeconds: true, spread: true });
  });

  it('two whole-second files too short alone are whole together, as before', async () => {
    const a = join(dir, 'a.log');
    const b = join(dir, 'b.log');
    writeFileSync(a, `${nginxLines.slice(0, 3).join('\n')}\n`);
    writeFileSync(b, `${nginxLines.slice(6, 9).join('\n')}\n`);
    expect((await run(['replay', a, b, ...POLICIES])).code).toBe(3);
    const report = await json(['replay', a, b, ...POLICIES]);
    expect(report.input.times).toEqual({ wholeSeconds: true, spread: false, coarse: [0, 1] });
    expect(report.input.files.map((f) => f.wholeSeconds)).toEqual([true, true]);
  });
});
