/**
 * @module The example end to end: under a short burst of synthetic load, `/metrics` serves tollgate's
 * series, the hot-keys endpoint names the hammering client, and every query of the Grafana dashboard
 * names a series (and only labels) the integration emits.
 */
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { METRICS } from '@tollgate/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createObservedApp, type ObservedApp } from './app.js';
import { boundedLoad, runLoad } from './load.js';

interface Target {
  readonly expr: string;
  readonly refId: string;
}
interface Panel {
  readonly title: string;
  readonly datasource: { readonly uid: string };
  readonly targets: readonly Target[];
}
interface Dashboard {
  readonly __inputs: readonly { readonly name: string; readonly pluginId: string }[];
  readonly panels: readonly Panel[];
  readonly templating: { readonly list: readonly { readonly query: { readonly query: string } }[] };
}

const dashboard = JSON.parse(readFileSync(new URL('../dashboard/tollgate.json', import.meta.url), 'utf8')) as Dashboard;

let observed: ObservedApp;
let server: Server;
let base: string;
let scrape: string;

beforeAll(async () => {
  observed = createObservedApp();
  server = observed.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // A busy machine may serve too few requests in one round for every limit to bite: up to 5 rounds.
  const byStatus: Record<string, number> = {};
  for (let round = 0; round < 5; round++) {
    const summary = await runLoad({ url: base, durationMs: 1500, rate: 300 });
    for (const [status, n] of Object.entries(summary.byStatus)) byStatus[status] = (byStatus[status] ?? 0) + n;
    scrape = await (await fetch(`${base}/metrics`)).text();
    const hot = (await (await fetch(`${base}/admin/hot-keys?n=1`)).json()) as { items: { rejected: unknown[] } };
    const shadow = (await (await fetch(`${base}/admin/shadow`)).json()) as { wouldBlock: number }[];
    const bitten = /result="limited"/.test(scrape) && /tollgate_shaping_delay_seconds_count\{/.test(scrape);
    if (bitten && hot.items.rejected.length > 0 && (shadow[0]?.wouldBlock ?? 0) > 0) break;
  }
  expect(byStatus['200']).toBeGreaterThan(0);
  expect(byStatus['429']).toBeGreaterThan(0);
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await observed.close();
});

/** Series names with samples in the scrape, with the label names seen on them. */
function emitted(text: string): Map<string, Set<string>> {
  const series = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line === '') continue;
    const name = line.match(/^[a-zA-Z_:][a-zA-Z0-9_:]*/)?.[0] as string;
    const labels = series.get(name) ?? new Set<string>();
    for (const m of line.matchAll(/([a-zA-Z_]\w*)="/g)) labels.add(m[1] as string);
    series.set(name, labels);
  }
  return series;
}

/** Every series a metric of the integration may emit (histograms as their three series), with its possible labels. */
function declared(): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const labels = (ids: readonly string[]) =>
    ids.map(
      (id) =>
        ({
          policy: 'policy',
          result: 'result',
          mode: 'mode',
          route: 'route',
          plan: 'plan',
          storeKind: 'store',
          storeOutcome: 'outcome',
          storeState: 'state',
          storeNode: 'node',
          shadowVerdict: 'verdict',
          priority: 'priority',
          limiter: 'limiter',
        })[id] as string,
    );
  for (const m of Object.values(METRICS)) {
    const names = labels([...m.attributes, ...m.optionalAttributes]);
    if (m.type === 'histogram') {
      out.set(`${m.prom}_bucket`, new Set([...names, 'le']));
      out.set(`${m.prom}_sum`, new Set(names));
      out.set(`${m.prom}_count`, new Set(names));
    } else {
      out.set(m.prom, new Set(names));
    }
  }
  return out;
}

describe('examples/observability', () => {
  it('runs the load within its bounds, and says the rate it runs at (RATE=5000 printed 5000 while it ran 1000)', () => {
    expect(boundedLoad(5_000, 3_600_000)).toEqual({ rate: 1_000, durationMs: 600_000 });
    expect(boundedLoad(undefined, undefined)).toEqual({ rate: 200, durationMs: 60_000 });
    expect(() => boundedLoad(Number('abc'), 1_000)).toThrow(/RATE must be a positive number; received NaN/);
    expect(boundedLoad(50, 2_000)).toEqual({ rate: 50, durationMs: 2_000 });
  });

  it('serves the series on /metrics', () => {
    const series = emitted(scrape);
    for (const name of [
      'tollgate_requests_total',
      'tollgate_store_duration_seconds_bucket',
      'tollgate_shadow_verdicts_total',
      'tollgate_shaping_delay_seconds_bucket',
      'tollgate_store_state',
    ]) {
      expect(series.has(name), name).toBe(true);
    }
    expect(scrape).toMatch(/tollgate_requests_total\{[^}]*route="\/api\/items\/:id"/);
    expect(scrape).toMatch(/tollgate_requests_total\{[^}]*result="limited"/);
    expect(scrape).not.toContain('client:');
  });

  it('names the hammering client on the hot-keys endpoint', async () => {
    const res = await fetch(`${base}/admin/hot-keys?n=3`);
    const body = (await res.json()) as {
      items: { rejected: { key: string }[]; errorBound: number; size: number; windowMs: number };
      search: { size: number };
    };
    expect(body.items.rejected[0]?.key).toBe('client:hammer');
    expect(body.items.errorBound).toBeGreaterThan(0);
    // The items limiter's own sketch (hotKeys: { size: 512, epochMs: 30_000 }); search turns them on with the defaults (hotKeys: true).
    expect(body.items.size).toBe(512);
    expect(body.items.windowMs).toBeLessThanOrEqual(60_000);
    expect(body.search.size).toBe(128);
    const shadow = (await (await fetch(`${base}/admin/shadow`)).json()) as { name: string; wouldBlock: number }[];
    expect(shadow[0]?.name).toBe('search-next');
    expect(shadow[0]?.wouldBlock).toBeGreaterThan(0);
  });

  it('imports as is: one Prometheus data source input, used by every panel', () => {
    expect(dashboard.__inputs).toEqual([expect.objectContaining({ name: 'DS_PROMETHEUS', pluginId: 'prometheus' })]);
    for (const panel of dashboard.panels) {
      // Grafana's import placeholder for the data source input, a literal `${DS_PROMETHEUS}`.
      expect(panel.datasource.uid, panel.title).toBe(`\${DS_PROMETHEUS}`);
      expect(panel.targets.length, panel.title).toBeGreaterThan(0);
    }
    expect(dashboard.panels.map((p) => p.title)).toEqual(
      expect.arrayContaining([
        'Requests by result',
        'Top policies by rejections',
        'Store latency quantiles',
        'Degraded share',
        'Shadow disagreement',
      ]),
    );
  });

  it('every query names series the integration emits, and only their labels', () => {
    const known = declared();
    const live = emitted(scrape);
    const exprs = [
      ...dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr)),
      ...dashboard.templating.list.map((v) => v.query.query),
    ];
    for (const expr of exprs) {
      const names = [...expr.matchAll(/\btollgate_[a-z_]+/g)].map((m) => m[0]);
      expect(names.length, expr).toBeGreaterThan(0);
      for (const name of names) {
        expect(known.has(name), `${name} in ${expr}`).toBe(true);
        // Every metric of this app's features has samples in the scrape (leases and queues have no feature here yet).
        if (!name.startsWith('tollgate_leases') && !name.startsWith('tollgate_queue')) expect(live.has(name), `${name} scraped`).toBe(true);
      }
      const labelsUsed = [
        ...[...expr.matchAll(/by \(([^)]*)\)/g)].flatMap((m) => (m[1] as string).split(',').map((l) => l.trim())),
        ...[...expr.matchAll(/[{,]\s*([a-z_]+)\s*(?:=~|!=|=)/g)].map((m) => m[1] as string),
        ...[...expr.matchAll(/label_values\([a-z_]+,\s*([a-z_]+)\)/g)].map((m) => m[1] as string),
      ];
      // `job`: the label Prometheus adds to every series of a scrape target (the dashboard's `job` variable).
      const allowed = new Set(['job', ...names.flatMap((n) => [...(known.get(n) ?? [])])]);
      for (const label of labelsUsed) expect(allowed.has(label), `label ${label} in ${expr}`).toBe(true);
    }
  });
});
