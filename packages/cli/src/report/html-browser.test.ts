/**
 * @module The HTML reports in a real browser (Debian's chromium, headless): the page loads without a script
 * error, every chart series is drawn, and the numbers each chart holds are the numbers `--json` prints.
 * Screenshots are kept in packages/cli/test-artifacts/. Without chromium the suite says so loudly and
 * skips, unless TOLLGATE_REQUIRE_CHROMIUM=1 (set by .ci/run), which turns the skip into a failure.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { expect, it } from 'vitest';
import { describeWith, type RequiredTool, versionOf } from '../../../../test/support/required-tool.js';
import { runCli } from '../cli.js';
import type { LabResult } from '../labs/lab-result.js';
import type { ReplayReport } from '../replay/replay-report.js';
import { generateAccessLog } from '../synthetic/access-log.js';

const run = promisify(execFile);
const CHROMIUM = process.env.TOLLGATE_CHROMIUM ?? 'chromium';
const ARTIFACTS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test-artifacts');
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', '--mute-audio', '--no-first-run'];

const CHROMIUM_TOOL: RequiredTool = {
  label: 'chromium',
  command: CHROMIUM,
  version: versionOf(CHROMIUM),
  requireVar: 'TOLLGATE_REQUIRE_CHROMIUM',
  install: 'apt-get install chromium',
};

function describeBrowser(name: string, fn: () => void): void {
  describeWith(CHROMIUM_TOOL, name, fn);
}

interface Rendered {
  ready: boolean;
  errors: string[];
  series: Record<string, { sum: number; drawn: boolean }>;
}

function attribute(body: string, name: string): string | undefined {
  const raw = new RegExp(`${name}="([^"]*)"`).exec(body)?.[1];
  return raw?.replace(/&quot;/g, '"').replace(/&amp;/g, '&');
}

/** Loads `file` in headless chromium and reads back what the page's check script recorded. */
async function render(file: string, screenshot: string, height: number): Promise<Rendered> {
  const url = pathToFileURL(file).href;
  const { stdout } = await run(CHROMIUM, [...FLAGS, '--dump-dom', url], { timeout: 60_000, maxBuffer: 64 << 20 });
  await run(CHROMIUM, [...FLAGS, `--window-size=1240,${height}`, `--screenshot=${screenshot}`, url], { timeout: 60_000 });
  const body = /<body[^>]*>/.exec(stdout)?.[0] ?? '';
  return {
    ready: attribute(body, 'data-ready') === '1',
    errors: JSON.parse(attribute(body, 'data-errors') ?? '["no data-errors: the check script did not run"]') as string[],
    series: JSON.parse(attribute(body, 'data-rendered') ?? '{}') as Rendered['series'],
  };
}

async function cli(args: string[], exit = 0): Promise<string> {
  let stdout = '';
  const code = await runCli(args, { stdout: { write: (t: string) => (stdout += t) }, stderr: { write() {} } });
  expect(code).toBe(exit);
  return stdout;
}

describeBrowser('HTML reports in headless chromium', () => {
  mkdirSync(ARTIFACTS, { recursive: true });

  it('the replay report loads without errors and its charts hold the --json numbers', async () => {
    const log = join(ARTIFACTS, 'browser-test.log.gz');
    const lines: string[] = [];
    // An hour (slices of 4 s, so peaks and the busiest minutes are drawn), written at request end.
    for (const batch of generateAccessLog({ seed: 3, durationS: 3600, visitors: 400, order: 'written-at-end' })) lines.push(...batch);
    writeFileSync(log, gzipSync(`${lines.join('\n')}\n`));
    const html = join(ARTIFACTS, 'replay-report.html');
    const args = [
      'replay',
      log,
      '--policy',
      '{"limit":100,"windowMs":60000}',
      '--policy',
      '{"algorithm":"sliding-window","limit":80,"windowMs":60000}',
      '--policy',
      '{"algorithm":"leaky-bucket","limit":5,"windowMs":1000,"burst":20}',
      '--json',
      '--html',
      html,
    ];
    // The log's times are whole seconds (nginx's), and the leaky bucket's window is 1 s: warned, exit 3.
    const report = JSON.parse(await cli(args, 3)) as ReplayReport;
    expect(report.input.times).toEqual({ wholeSeconds: true, spread: false, coarse: [2] });
    expect(readFileSync(html, 'utf8')).toContain('<div class="warning" id="whole-seconds">');
    const screenshot = join(ARTIFACTS, 'replay-report.png');
    const page = await render(html, screenshot, 2200);
    expect(page.errors).toEqual([]);
    expect(page.ready).toBe(true);
    const expected: Record<string, { sum: number; drawn: boolean }> = {};
    for (const c of report.candidates) {
      expected[`c${c.index}-admitted`] = { sum: c.admitted, drawn: true };
      expected[`c${c.index}-rejected`] = { sum: c.rejected, drawn: true };
      expected[`c${c.index}-streaks`] = { sum: c.streaks.reduce((s, b) => s + b.count, 0), drawn: true };
      expected[`c${c.index}-top`] = { sum: c.topRejected.reduce((s, r) => s + r.rejected, 0), drawn: true };
      expected[`c${c.index}-admitted-peak`] = { sum: c.series.peakAdmitted.reduce((s, v) => s + v, 0), drawn: true };
      expected[`c${c.index}-rejected-peak`] = { sum: c.series.peakRejected.reduce((s, v) => s + v, 0), drawn: true };
    }
    expect(report.timeline.bucketMs).toBe(4000);
    expect(report.busiestMinutes).toHaveLength(6);
    report.busiestMinutes.forEach((m, k) => {
      expected[`m${k}-requests`] = { sum: m.requests, drawn: true };
      m.candidates.forEach((c, i) => {
        expected[`m${k}-c${i}-rejected`] = { sum: c.rejected.reduce((s, v) => s + v, 0), drawn: true };
      });
    });
    expect(page.series).toEqual(expected);
    expect(report.candidates[0]?.rejected).toBeGreaterThan(0);
    expect(statSync(screenshot).size).toBeGreaterThan(20_000);
  }, 120_000); // two chromium runs take 7 s each on a loaded 2-core machine

  it('the labs page loads without errors and its charts hold the --json numbers', async () => {
    const html = join(ARTIFACTS, 'labs.html');
    const labs = JSON.parse(await cli(['lab', 'all', '--json', '--html', html])) as LabResult[];
    const page = await render(html, join(ARTIFACTS, 'labs.png'), 3000);
    expect(page.errors).toEqual([]);
    expect(page.ready).toBe(true);
    const expected: Record<string, { sum: number; drawn: boolean }> = {};
    for (const lab of labs) {
      lab.charts.forEach((chart, ci) => {
        chart.series.forEach((s, si) => {
          expected[`lab-${lab.name}-${ci}-${si}`] = { sum: s.points.reduce((sum, p) => sum + p[1], 0), drawn: true };
        });
      });
    }
    // Chart values pass through text: compare to 6 significant digits.
    const round = (r: Record<string, { sum: number; drawn: boolean }>) =>
      Object.fromEntries(Object.entries(r).map(([k, v]) => [k, { sum: Number(v.sum.toPrecision(6)), drawn: v.drawn }]));
    expect(round(page.series)).toEqual(round(expected));
  }, 120_000);
});
