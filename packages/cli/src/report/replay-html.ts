/**
 * @module The replay as one self-contained HTML file: the comparison table, admitted and rejected per
 * second for each candidate over the log's time (one shared scale), the reject-streak distribution and
 * the clients each candidate hurts most. Inline SVG only; the report's JSON rides along in the page.
 */
import type { ReplayReport } from '../replay/replay-report.js';
import { escapeHtml, htmlPage, htmlTable } from './html.js';
import { groupedBarChart, horizontalBarChart, legend, lineChart, PALETTE } from './svg-chart.js';
import { formatShare } from './text-table.js';

const ADMITTED = '#16a34a';
const REJECTED = '#dc2626';

function clock(ms: number): string {
  return new Date(ms).toISOString().slice(11, 19);
}

export function renderReplayHtml(report: ReplayReport): string {
  const { timeline, candidates, input } = report;
  const perSecond = timeline.bucketMs / 1000;
  const rates = candidates.flatMap((c) => [...c.series.admitted, ...c.series.rejected].map((v) => v / perSecond));
  const yMax = Math.max(0, ...rates);
  const span =
    timeline.firstMs === null || timeline.lastMs === null
      ? 'no requests'
      : `${new Date(timeline.firstMs).toISOString()} to ${new Date(timeline.lastMs).toISOString()}`;
  const parts: string[] = [];
  parts.push('<h1>tollgate replay</h1>');
  parts.push(
    `<p class="meta">${input.requests.toLocaleString('en-US')} requests from ${report.clients.toLocaleString('en-US')} clients, ${escapeHtml(span)}; ` +
      `${input.lines.toLocaleString('en-US')} lines from ${input.files.map((f) => escapeHtml(f.file)).join(', ')}, ${input.malformed.toLocaleString('en-US')} malformed.</p>`,
  );
  parts.push('<h2>Candidates</h2>');
  parts.push(
    htmlTable(
      [
        '#',
        'candidate',
        'requests',
        'admitted',
        'rejected',
        'rejected %',
        'clients rejected',
        'longest streak',
        'delay p50 / p99 ms',
        'vs #1: only this / only #1',
      ],
      candidates.map((c) => [
        `#${c.index + 1}`,
        c.label,
        c.requests,
        c.admitted,
        c.rejected,
        formatShare(c.requests === 0 ? 0 : c.rejected / c.requests),
        `${c.clientsRejected.toLocaleString('en-US')} (${formatShare(c.clientsRejectedShare)})`,
        c.longestStreak.length,
        c.delayMs === null ? '-' : `${c.delayMs.p50} / ${c.delayMs.p99}`,
        c.disagreement === null
          ? '-'
          : `${c.disagreement.onlyThis.toLocaleString('en-US')} / ${c.disagreement.onlyFirst.toLocaleString('en-US')}`,
      ]),
    ),
  );
  parts.push(`<h2>Admitted and rejected per second</h2>`);
  parts.push(
    legend([
      { name: 'admitted / s', color: ADMITTED },
      { name: 'rejected / s', color: REJECTED },
    ]),
  );
  parts.push(
    `<p class="meta">One point per ${perSecond === 1 ? 'second' : `${perSecond} s (per-second average)`}, UTC; every chart on the same scale.</p>`,
  );
  parts.push('<div class="charts">');
  for (const c of candidates) {
    const xs = c.series.admitted.map((_, i) => timeline.startMs + i * timeline.bucketMs);
    parts.push(
      `<div class="chart">${lineChart({
        title: `#${c.index + 1} ${c.label}`,
        yLabel: 'requests / s',
        yMax,
        xFormat: clock,
        series: [
          {
            id: `c${c.index}-admitted`,
            name: 'admitted',
            color: ADMITTED,
            points: xs.map((x, i) => [x, (c.series.admitted[i] ?? 0) / perSecond]),
            raw: c.series.admitted,
          },
          {
            id: `c${c.index}-rejected`,
            name: 'rejected',
            color: REJECTED,
            points: xs.map((x, i) => [x, (c.series.rejected[i] ?? 0) / perSecond]),
            raw: c.series.rejected,
          },
        ],
      })}</div>`,
    );
  }
  parts.push('</div>');
  const buckets = Math.max(0, ...candidates.map((c) => c.streaks.length));
  const categories = Array.from({ length: buckets }, (_, b) => (b === 0 ? '1' : `${2 ** b}-${2 ** (b + 1) - 1}`));
  parts.push('<h2>Reject streaks</h2>');
  parts.push('<p class="meta">How many times a client was rejected so many times in a row (streak lengths grouped by powers of two).</p>');
  parts.push(legend(candidates.map((c) => ({ name: `#${c.index + 1} ${c.label}`, color: PALETTE[c.index % PALETTE.length] as string }))));
  parts.push(
    `<div class="chart">${groupedBarChart(
      'Reject streaks by length',
      'streaks',
      categories,
      candidates.map((c) => ({
        id: `c${c.index}-streaks`,
        name: `#${c.index + 1}`,
        color: PALETTE[c.index % PALETTE.length] as string,
        values: categories.map((_, b) => c.streaks[b]?.count ?? 0),
      })),
      Math.max(560, 80 + categories.length * 60),
    )}</div>`,
  );
  parts.push('<h2>Clients affected most</h2>');
  parts.push('<div class="charts">');
  for (const c of candidates) {
    const rows = c.topRejected.map((r) => ({ label: r.key, value: r.rejected, total: r.requests }));
    parts.push(
      `<div class="chart">${horizontalBarChart(`c${c.index}-top`, `#${c.index + 1} ${c.label}: rejected of requests`, rows, PALETTE[c.index % PALETTE.length] as string)}</div>`,
    );
  }
  parts.push('</div>');
  for (const c of candidates.slice(1)) {
    if (c.topDisagreeing.length === 0) continue;
    parts.push(`<h3>#${c.index + 1} ${escapeHtml(c.label)}: clients where it disagrees with #1 most</h3>`);
    parts.push(
      htmlTable(
        ['client', 'requests', 'disagreements', 'rejected here'],
        c.topDisagreeing.map((r) => [r.key, r.requests, r.disagreements, r.rejected]),
      ),
    );
  }
  if (input.malformed > 0) {
    parts.push('<h2>Malformed lines</h2>');
    parts.push(
      htmlTable(
        ['file', 'line', 'reason'],
        input.malformedSamples.map((m) => [m.file, m.line, m.reason]),
      ),
    );
  }
  return htmlPage('tollgate replay', parts.join('\n'), report);
}
