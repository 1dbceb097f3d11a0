/**
 * @module Tests of the target checks and the report on synthetic results: verdicts, "not measured"
 * for missing subjects, and every section rendered.
 */
import { describe, expect, it } from 'vitest';
import type { DecisionCellResult } from './decisions/decision-cell.js';
import type { OverheadRow } from './observability/observability-section.js';
import type { RedisCellResult } from './redis/redis-cell.js';
import { renderResults, renderSummary } from './report.js';
import type { BenchResults, DecisionRow, HttpGroup, HttpVariantResult, RedisRow } from './results.js';
import { checkTargets } from './targets.js';

function cell(ns: number, heap?: number): DecisionCellResult {
  return { nsPerDecision: ns, runNs: [ns], heapBytesPerKey: heap, populateMs: 1, unexpected: 0, decisions: 1000 };
}

function row(subject: string, kind: DecisionRow['kind'], scenario: string, ns: number, heap?: number): DecisionRow {
  return { subject, label: subject, kind, scenario, outcome: { status: 'ok', ...cell(ns, heap) } };
}

function redis(ops256: number, bytes: number, trips = 1): RedisCellResult {
  return {
    concurrency: [
      { inFlight: 1, opsPerSec: ops256 / 4, runOpsPerSec: [ops256 / 4], p50Ms: 0.05, p99Ms: 0.1 },
      { inFlight: 256, opsPerSec: ops256, runOpsPerSec: [ops256], p50Ms: 3, p99Ms: 9 },
    ],
    memoryUsageBytes: bytes - 50,
    usedMemoryPerRedisKey: bytes,
    usedMemoryPerRedisKeyNet: bytes - 0.1,
    usedMemoryDeltaPerClientKey: bytes - 10,
    redisKeysPerClientKey: 1,
    roundTripsPerDecision: trips,
    unexpected: 0,
  };
}

function variant(
  name: HttpVariantResult['variant'],
  label: string,
  rps: number,
  ratios: number[],
  ratiosToWire: number[] = [],
): HttpVariantResult {
  const mid = (xs: number[]): number => (xs.length === 0 ? Number.NaN : ((xs[0] as number) + (xs[xs.length - 1] as number)) / 2);
  return {
    variant: name,
    label,
    missing: undefined,
    rps,
    ratios,
    ratio: mid(ratios),
    ratiosToWire,
    ratioToWire: mid(ratiosToWire),
    unexpected: 0,
    requests: Number.isNaN(rps) ? 0 : rps * 2,
  };
}

const scenarios = [
  { id: '1key', label: '1 key' },
  { id: '100k', label: '100k keys' },
  { id: '1m', label: '1M keys' },
  { id: 'over', label: 'over the limit (1 key)' },
];

function results(): BenchResults {
  const decisions: DecisionRow[] = [
    row('tollgate-gcra', 'tollgate', '1key', 50),
    row('tollgate-gcra', 'tollgate', '100k', 300, 70),
    row('tollgate-gcra', 'tollgate', '1m', 500, 110),
    row('tollgate-gcra', 'tollgate', 'over', 49),
    row('express-rate-limit', 'peer', '1key', 90),
    row('express-rate-limit', 'peer', '100k', 400, 189),
    row('express-rate-limit', 'peer', '1m', 600, 181),
    row('express-rate-limit', 'peer', 'over', 90),
    row('rate-limiter-flexible', 'peer', '100k', 1000, 414),
    row('map-counter', 'baseline', '100k', 280, 37),
    row('map-counter', 'baseline', '1m', 400, 36),
  ];
  const redisRows: RedisRow[] = [
    { subject: 'tollgate-redis-1', label: 'tollgate one', kind: 'tollgate', outcome: { status: 'ok', ...redis(80_000, 100) } },
    { subject: 'tollgate-redis-2', label: 'tollgate two', kind: 'tollgate', outcome: { status: 'ok', ...redis(70_000, 150, 2) } },
    { subject: 'rate-limit-redis', label: 'rate-limit-redis', kind: 'peer', outcome: { status: 'ok', ...redis(75_000, 130) } },
    { subject: 'evalsha-token-bucket', label: 'ceiling', kind: 'baseline', outcome: { status: 'ok', ...redis(85_000, 140) } },
  ];
  const groups: HttpGroup[] = [
    {
      framework: 'express',
      mode: 'allow',
      error: undefined,
      variants: [
        variant('bare', 'bare express', 10_000, [1, 1]),
        {
          ...variant('tollgate', '@tollgate/express', Number.NaN, []),
          missing: { status: 'not available', reason: 'the adapter is not on this branch yet' },
        },
        variant('peer', 'express-rate-limit', 8000, [0.8, 0.78]),
      ],
    },
    {
      framework: 'express',
      mode: 'block',
      error: undefined,
      variants: [
        variant('bare', 'bare express', 10_000, [1, 1]),
        variant('wire', 'wire express', 9000, [0.9, 0.9]),
        variant('tollgate', '@tollgate/express', 8800, [0.88, 0.88], [0.98, 0.97]),
        variant('peer', 'express-rate-limit', 8000, [0.8, 0.78]),
      ],
    },
  ];
  return {
    mode: 'full',
    machine: {
      cpu: 'Test CPU',
      cores: 2,
      memoryGiB: 8,
      os: 'Linux',
      node: 'v20.20.2',
      redis: '7.0.15',
      loadGenerator: 'wrk 4.1.0',
      loadAverage: { start: 1, end: 2 },
      commit: 'abc1234',
      date: '2026-01-01T00:00:00Z',
    },
    versions: { 'express-rate-limit': '8.7.5' },
    decisions,
    decisionScenarios: scenarios,
    redis: { rows: redisRows, keys: 100_000, error: undefined },
    http: { groups, tool: 'wrk 4.1.0', roundSeconds: 2, rounds: 2 },
    settings: ['mode full'],
  };
}

describe('checkTargets', () => {
  const targets = checkTargets(results());
  const verdict = (prefix: string): boolean | undefined => {
    const t = targets.find((x) => x.target.startsWith(prefix));
    if (t === undefined) throw new Error(`no target ${prefix}`);
    return t.met;
  };

  it('judges the cost of an attached exporter (issue 12) only when the run measured it', () => {
    expect(targets.some((t) => t.target.includes('MeterProvider'))).toBe(false);
    const base = results();
    const observed = checkTargets({
      ...base,
      decisions: [
        ...(base.decisions ?? []),
        row('tollgate-gcra-otel', 'tollgate', '1key', 54),
        row('tollgate-gcra-prometheus', 'tollgate', '1key', 60),
      ],
    });
    const find = (prefix: string) => observed.find((t) => t.target.startsWith(prefix));
    expect(find('gcra with an OpenTelemetry MeterProvider within 1.10x of without, 1 key')).toMatchObject({
      met: true,
      figure: '1.08x (54.0 ns vs 50.0 ns)',
    });
    expect(find('gcra with a prom-client registry within 1.10x of without, 1 key')?.met).toBe(false);
    expect(find('gcra with a prom-client registry within 1.10x of without, 1 key')?.reference).toBe(true);
    expect(find('gcra with an OpenTelemetry MeterProvider within 1.10x of without, 100k keys')?.met).toBeUndefined();
  });

  it('judges section O on the pooled median, with its bootstrap interval and the control beside it', () => {
    const overhead = (subject: OverheadRow['subject'], ratio: number, low: number, high: number): OverheadRow => ({
      subject,
      case: 'over',
      label: 'over the limit (1 key)',
      baselineNs: 290,
      currentNs: 290 * ratio,
      ratio,
      processRatios: [low, ratio, high],
      interval: { low, high },
    });
    const judged = checkTargets({
      ...results(),
      observability: {
        rows: [overhead('control', 0.995, 0.98, 1.01), overhead('none', 1.018, 1.005, 1.031), overhead('otel', 1.12, 1.09, 1.15)],
        processes: 3,
        copies: 4,
        passes: 21,
        batch: 20_000,
        errors: [],
      },
    });
    const none = judged.find(
      (t) => t.target === 'gcra without a provider within 1.02x of the build without observability, over the limit (1 key)',
    );
    expect(none).toMatchObject({ section: 'O', met: true });
    expect(none?.figure).toBe('1.018x (90 % interval 1.005 to 1.031; 295.2 ns vs 290.0 ns; control 0.995x)');
    expect(judged.find((t) => t.target.startsWith('gcra with an OpenTelemetry MeterProvider within 1.10x of the same run'))?.met).toBe(
      false,
    );
  });

  it('gives the hot-keys-on row of section O for reference only: the targets judge the default, hot keys off', () => {
    const hot: OverheadRow = {
      subject: 'none',
      case: 'over-hot',
      label: 'over the limit (1 key), hot keys on',
      baselineNs: 290,
      currentNs: 302,
      ratio: 1.041,
      processRatios: [1.03, 1.041, 1.05],
      interval: { low: 1.028, high: 1.053 },
    };
    const judged = checkTargets({
      ...results(),
      observability: { rows: [hot], processes: 3, copies: 4, passes: 21, batch: 20_000, errors: [] },
    });
    const row = judged.find((t) => t.target.endsWith('over the limit (1 key), hot keys on'));
    expect(row).toMatchObject({ section: 'O', met: false, reference: true });
    expect(judged.filter((t) => t.section === 'O' && t.reference !== true)).toEqual([]);
  });

  it('judges section A against the fastest peer, rate-limiter-flexible, the Map floor and the heap budget', () => {
    expect(verdict('gcra faster than every peer, 1 key')).toBe(true);
    expect(verdict('gcra at least 1.25x the fastest peer, 100k keys')).toBe(true);
    expect(verdict('gcra at least 3x rate-limiter-flexible')).toBe(true);
    expect(verdict('gcra within 1.15x of a bare Map counter, 100k keys')).toBe(true);
    expect(verdict('gcra within 1.15x of a bare Map counter, 1M keys')).toBe(false);
    expect(verdict('gcra no slower over the limit')).toBe(true);
    expect(verdict('gcra at most 120 heap bytes')).toBe(true);
  });

  it('judges section B per tollgate cell: round trips, the best peer, the ceiling, bytes per key', () => {
    expect(verdict('tollgate one: one round trip')).toBe(true);
    expect(verdict('tollgate two: one round trip')).toBe(false);
    expect(verdict("tollgate one: at 256 in flight, at least the best peer's")).toBe(true);
    expect(verdict('tollgate two: at 256 in flight, at least 85%')).toBe(false);
    expect(verdict('tollgate one: at 1 in flight, p50 within 10%')).toBe(true);
    expect(verdict('Redis bytes per key')).toBe(true);
    // The peers limit one policy: the two-policy cell's throughput and latency lines are references.
    expect(targets.find((x) => x.target.startsWith('tollgate two: at 256 in flight, at least 85%'))?.reference).toBe(true);
    expect(targets.find((x) => x.target.startsWith('tollgate one: at 256 in flight, at least 85%'))?.reference).toBeUndefined();
    expect(targets.find((x) => x.target.startsWith('tollgate two: one round trip'))?.reference).toBeUndefined();
  });

  it('reports a missing adapter as not measured, never as met', () => {
    const t = targets.find((x) => x.target.startsWith('express allow'));
    expect(t?.met).toBeUndefined();
    expect(t?.figure).toContain('not on this branch yet');
  });

  it("keeps the issue's C target on tollgate / bare and adds tollgate / wire as a reference line", () => {
    const target = targets.find((x) => x.target.startsWith('express block: tollgate at least'));
    expect(target).toMatchObject({ figure: '0.880 vs peer 0.790', met: false });
    expect(target?.reference).toBeUndefined();
    const own = targets.find((x) => x.target.startsWith('express block: tollgate / wire'));
    expect(own).toMatchObject({ figure: '0.975 (wire / bare 0.900)', met: true, reference: true });
  });
});

describe('renderResults', () => {
  it('writes the machine, the targets and every section, with missing cells marked', () => {
    const md = renderResults(results());
    expect(md).toContain('| Test CPU | 2 | 8 GiB | Linux | v20.20.2 | 7.0.15 | wrk 4.1.0 | 1.00 / 2.00 |');
    expect(md).toContain('| A | gcra within 1.15x of a bare Map counter, 1M keys | 1.25x (500.0 ns vs 400.0 ns) | not met |');
    expect(md).toContain('| tollgate-gcra | 50.0 | 300 | 500 | 49.0 |');
    expect(md).toContain('| tollgate-gcra | 70 | 110 |');
    expect(md).toContain('| express | allow | @tollgate/express | not available |');
    expect(md).toContain('| express | allow | express-rate-limit | 8,000 | 0.790 | 0.800, 0.780 |  | 0 / 16,000 |');
    expect(md).toContain('| express | block | @tollgate/express | 8,800 | 0.880 | 0.880, 0.880 | 0.975 (0.980, 0.970) | 0 / 17,600 |');
    expect(md).toContain('| express | block | 0.880 | 0.900 | 0.975 | 0.790 |');
    expect(md).toContain(
      "| C | express block: tollgate / wire, the limiter's own cost (reference: the same 0.95) | 0.975 (wire / bare 0.900) | reference: reaches it |",
    );
    expect(md).toContain('wire / bare is what sending the draft-11 fields');
    expect(md).toContain('| tollgate one | 256 | 80,000 |');
  });

  it('summarises the verdicts', () => {
    const summary = renderSummary(results());
    expect(summary).toMatch(/Targets: \d+ met, \d+ not met, 1 not measured\./);
    expect(summary).toContain('| express | block | 0.880 | 0.900 | 0.975 | 0.790 |');
  });
});
