/**
 * @module The README's metric table stays in step with the metrics tollgate emits: one row per metric
 * of `METRICS`, with its OpenTelemetry name, Prometheus series, type and unit, and every attribute.
 */
import { readFileSync } from 'node:fs';
import { METRICS } from '@tollgate/core';
import { describe, expect, it } from 'vitest';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const section = readme.slice(readme.indexOf('## Observability'), readme.indexOf('\n## ', readme.indexOf('## Observability') + 1));
const rows = section.split('\n').filter((line) => line.startsWith('| `tollgate.'));

const OTEL_ATTRIBUTE: Record<string, string> = {
  policy: 'tollgate.policy',
  result: 'tollgate.result',
  mode: 'tollgate.mode',
  route: 'http.route',
  plan: 'tollgate.plan',
  storeKind: 'tollgate.store.kind',
  storeOutcome: 'tollgate.store.outcome',
  storeState: 'tollgate.store.state',
  storeNode: 'tollgate.store.node',
  shadowVerdict: 'tollgate.shadow.verdict',
  priority: 'tollgate.priority',
  limiter: 'tollgate.limiter',
};

describe('README "Observability" metric table', () => {
  it('has one row per emitted metric, and no other', () => {
    expect(rows).toHaveLength(Object.keys(METRICS).length);
  });

  it.each(Object.values(METRICS))('$otel: name, series, type, unit and attributes', (m) => {
    const cells = rows.map((r) => r.split('|').map((c) => c.trim())).find((c) => c[1] === `\`${m.otel}\``);
    expect(cells, m.otel).toBeDefined();
    if (cells === undefined) return;
    expect(cells[2]).toBe(`\`${m.prom}\``);
    expect(cells[3]?.startsWith(m.type), cells[3]).toBe(true);
    expect(cells[4]).toBe(`\`${m.unit}\``);
    for (const id of [...m.attributes, ...m.optionalAttributes]) expect(cells[5]).toContain(`\`${OTEL_ATTRIBUTE[id]}\``);
  });
});

describe('examples/observability README: what the dashboard variables filter', () => {
  const dashboard = JSON.parse(readFileSync(new URL('../../examples/observability/dashboard/tollgate.json', import.meta.url), 'utf8')) as {
    panels: { title: string; targets?: { expr?: string }[] }[];
  };
  const filteredBy = (variable: string) =>
    dashboard.panels.filter((p) => (p.targets ?? []).some((t) => t.expr?.includes(variable) === true)).map((p) => p.title);
  const titles = dashboard.panels.map((p) => p.title);

  it('says that `job` filters every panel, in each of its series', () => {
    expect(filteredBy('$job')).toEqual(titles);
    for (const panel of dashboard.panels) {
      for (const t of panel.targets ?? []) {
        // Every selector of a tollgate series names the job: one left out would sum every service into the panel.
        const selectors = [...(t.expr ?? '').matchAll(/\btollgate_[a-z_]+(\{[^}]*\})?/g)];
        for (const s of selectors) expect(s[1] ?? '', `${panel.title}: ${s[0]}`).toContain('job=~"$job"');
      }
    }
  });

  it('says which panels `limiter` and `policy` filter, as the dashboard queries them', () => {
    // The README's words (examples/observability/README.md): every panel but these two for `limiter`, these four for `policy`.
    expect(titles.filter((t) => !filteredBy('$limiter').includes(t))).toEqual(['Store latency quantiles', 'Store errors by outcome']);
    expect(filteredBy('$policy')).toEqual(['Requests by result', 'Top policies by rejections', 'Rejections by route', 'Degraded share']);
  });
});
