/**
 * @module The dashboard and the alert rules, judged by Prometheus's own evaluator (`promtool`, Debian's
 * `prometheus` package). `promtool check rules` and `promtool test rules` run the alert rules file and
 * its unit tests. Then the example runs under its synthetic load while `/metrics` is scraped a few
 * times; the scrapes become the input series of a generated rule test, where every query of the
 * Grafana dashboard must return a value (no "No data", no NaN), and the panels about things that did
 * not happen here (degraded decisions, store errors, leases, queues) must read 0. Without promtool the
 * suite says so loudly and skips, unless TOLLGATE_REQUIRE_PROMTOOL=1 (set by .ci/run) turns the skip
 * into a failure.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeWith, type RequiredTool, versionOf } from '../../../test/support/required-tool.js';
import { createObservedApp, type ObservedApp } from './app.js';
import { runLoad } from './load.js';

const run = promisify(execFile);
const PROMTOOL = process.env.TOLLGATE_PROMTOOL ?? 'promtool';
const DASHBOARD_DIR = fileURLToPath(new URL('../dashboard/', import.meta.url));

const PROMTOOL_TOOL: RequiredTool = {
  label: 'promtool',
  command: PROMTOOL,
  version: versionOf(PROMTOOL),
  requireVar: 'TOLLGATE_REQUIRE_PROMTOOL',
  install: 'apt-get install prometheus',
};

function describePromtool(name: string, fn: () => void): void {
  describeWith(PROMTOOL_TOOL, name, fn);
}

/** Runs promtool in the dashboard folder; resolves with its output, rejects with it when it fails. */
async function promtool(args: readonly string[], cwd = DASHBOARD_DIR): Promise<string> {
  try {
    const { stdout, stderr } = await run(PROMTOOL, [...args], { cwd, timeout: 60_000 });
    return stdout + stderr;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`promtool ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? e.message}`);
  }
}

interface Panel {
  readonly title: string;
  readonly targets: readonly { readonly refId: string; readonly expr: string }[];
}

const dashboard = JSON.parse(readFileSync(join(DASHBOARD_DIR, 'tollgate.json'), 'utf8')) as { panels: readonly Panel[] };

/** Panels about things the example's load never does: each must read 0, not "No data". */
const ZERO_PANELS = ['Degraded share', 'Store errors by outcome', 'In flight'];

/** What the example's load shows once every limiter has bitten: 429s, shadow verdicts, shaped requests. */
const EVERY_FEATURE = [
  /tollgate_requests_total\{[^}]*result="limited"/,
  /tollgate_shadow_verdicts_total\{/,
  /tollgate_shaping_delay_seconds_count\{/,
];

/** The seconds each real scrape stands for in the generated test: Prometheus's default scrape interval. */
const STEP_S = 15;

/** One scrape's samples: the series selector (`name{labels}`, as the exposition prints it) and its value. */
function samples(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('tollgate_')) continue;
    const cut = line.lastIndexOf(' ');
    out.set(line.slice(0, cut), line.slice(cut + 1));
  }
  return out;
}

/**
 * A `promtool test rules` file whose input series are `scrapes` (one every STEP_S seconds, `_` where a
 * series did not exist yet) and whose expression tests are `tests`, evaluated at the last scrape.
 */
function ruleTest(scrapes: readonly string[], tests: readonly { expr: string; value: number }[]): string {
  const parsed = scrapes.map(samples);
  const names = [...new Set(parsed.flatMap((s) => [...s.keys()]))].sort();
  const lines = ['rule_files: []', 'evaluation_interval: 15s', 'tests:', `  - interval: ${STEP_S}s`, '    input_series:'];
  for (const name of names) {
    lines.push(`      - series: ${JSON.stringify(name)}`);
    lines.push(`        values: ${JSON.stringify(parsed.map((s) => s.get(name) ?? '_').join(' '))}`);
  }
  lines.push('    promql_expr_test:');
  for (const t of tests) {
    lines.push(`      - expr: ${JSON.stringify(t.expr)}`, `        eval_time: ${(scrapes.length - 1) * STEP_S}s`, '        exp_samples:');
    lines.push('          - labels: "{}"', `            value: ${t.value}`);
  }
  return `${lines.join('\n')}\n`;
}

/** A dashboard query as Grafana sends it: all jobs, policies and limiters, a rate interval of 4 scrape intervals. */
function asSent(expr: string): string {
  return expr
    .replaceAll('$__rate_interval', `${4 * STEP_S}s`)
    .replaceAll('$policy', '.*')
    .replaceAll('$limiter', '.*')
    .replaceAll('$job', '.*');
}

describePromtool('alert rules (promtool)', () => {
  it('pass `promtool check rules`', async () => {
    expect(await promtool(['check', 'rules', 'tollgate-alerts.yml'])).toContain('SUCCESS: 7 rules found');
  });

  it('pass their unit tests: `promtool test rules tollgate-alerts.test.yml`', async () => {
    expect(await promtool(['test', 'rules', 'tollgate-alerts.test.yml'])).toContain('SUCCESS');
  });

  it('name only series the integration emits', () => {
    const rules = readFileSync(join(DASHBOARD_DIR, 'tollgate-alerts.yml'), 'utf8');
    const used = new Set([...rules.matchAll(/\b(tollgate_[a-z_]+)\{?/g)].map((m) => m[1] as string));
    expect([...used].sort()).toEqual([
      'tollgate_queue_length',
      'tollgate_requests_total',
      'tollgate_store_evictions_total',
      'tollgate_store_state',
    ]);
  });
});

describePromtool("dashboard queries on the example's real scrapes (promtool)", () => {
  let observed: ObservedApp;
  let server: Server;
  let dir: string;
  const scrapes: string[] = [];

  beforeAll(async () => {
    observed = createObservedApp();
    server = observed.app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const scrape = async () => scrapes.push(await (await fetch(`${base}/metrics`)).text());
    // As Prometheus sees the app: a scrape at start, one every 400 ms during the load, two after it. A
    // busy machine may serve too few requests in one round for every limit to bite: up to 5 rounds.
    await scrape();
    for (let round = 0; round < 5; round++) {
      const load = runLoad({ url: base, durationMs: 1500, rate: 400 });
      let done = false;
      void load.finally(() => {
        done = true;
      });
      while (!done) {
        await new Promise((resolve) => setTimeout(resolve, 400));
        await scrape();
      }
      await load;
      if (EVERY_FEATURE.every((re) => re.test(scrapes.at(-1) as string))) break;
    }
    await scrape();
    await scrape();
    dir = mkdtempSync(join(tmpdir(), 'tollgate-promtool-'));
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await observed.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('every query of every panel returns a value; the panels of what did not happen read 0', async () => {
    expect(scrapes.length).toBeGreaterThanOrEqual(5);
    for (const re of EVERY_FEATURE) expect(scrapes.at(-1), String(re)).toMatch(re);
    const tests: { expr: string; value: number }[] = [];
    for (const panel of dashboard.panels) {
      for (const target of panel.targets) {
        const q = asSent(target.expr);
        // At least one sample, and none NaN (NaN != NaN drops it): a panel with a line on it.
        tests.push({ expr: `clamp_max(count((${q}) == (${q})), 1)`, value: 1 });
        if (ZERO_PANELS.includes(panel.title)) tests.push({ expr: `sum(${q})`, value: 0 });
      }
    }
    expect(tests.length).toBe(14 + 4);
    const file = join(dir, 'dashboard.test.yml');
    writeFileSync(file, ruleTest(scrapes, tests));
    expect(await promtool(['test', 'rules', file], dir)).toContain('SUCCESS');
  });
});
