/**
 * @module The replay as one self-contained HTML file: how the input was put in time order (and, loudly,
 * what fell outside the reorder window), the comparison table, admitted and rejected per second for each
 * candidate over the log's time (one shared scale; for long logs each slice's busiest second beside its
 * average, so bursts are not averaged away), the busiest minutes second by second, the reject-streak
 * distribution and the clients each candidate hurts most. Inline SVG only; the report's JSON rides along.
 */
import type { ReplayReport } from '../replay/replay-report.js';
import { escapeHtml, htmlPage, htmlTable } from './html.js';
import { clientCount, describeOrder, describeTimes } from './replay-table.js';
import { groupedBarChart, horizontalBarChart, legend, lineChart, PALETTE } from './svg-chart.js';
import { formatShare } from './text-table.js';

const ADMITTED = '#16a34a';
const REJECTED = '#dc2626';
const ADMITTED_MEAN = '#86efac';
const REJECTED_MEAN = '#fca5a5';
const REQUESTS = '#6b7280';

function clock(ms: number): string {
  return new Date(ms).toISOString().slice(11, 19);
}

/** The title, the input and how it was ordered (with the loud warning), and the comparison table. */
function headSection(report: ReplayReport): string[] {
  const { timeline, candidates, input } = report;
  const span =
    timeline.firstMs === null || timeline.lastMs === null
      ? 'no requests'
      : `${new Date(timeline.firstMs).toISOString()} to ${new Date(timeline.lastMs).toISOString()}`;
  const parts: string[] = [];
  parts.push('<h1>tollgate replay</h1>');
  parts.push(
    `<p class="meta">${input.requests.toLocaleString('en-US')} requests from ${clientCount(report, (n) => n.toLocaleString('en-US'))}, ${escapeHtml(span)}; ` +
      `${input.lines.toLocaleString('en-US')} lines from ${input.files.map((f) => escapeHtml(f.file)).join(', ')}, ${input.malformed.toLocaleString('en-US')} malformed.</p>`,
  );
  const order = describeOrder(report);
  parts.push(`<p class="meta">${escapeHtml(order.how)}</p>`);
  if (order.late !== null) parts.push(`<div class="warning" id="late-requests"><strong>Warning:</strong> ${escapeHtml(order.late)}</div>`);
  const times = describeTimes(report);
  if (times.note !== null) parts.push(`<p class="meta">${escapeHtml(times.note)}</p>`);
  if (times.warning !== null)
    parts.push(`<div class="warning" id="whole-seconds"><strong>Warning:</strong> ${escapeHtml(times.warning)}</div>`);
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
  return parts;
}

/** Admitted and rejected per second per candidate over the whole log, one shared scale. */
function overviewSection(report: ReplayReport): string[] {
  const { timeline, candidates } = report;
  const perSecond = timeline.bucketMs / 1000;
  const sliced = perSecond > 1;
  const yMax = Math.max(0, ...candidates.flatMap((c) => [...c.series.peakAdmitted, ...c.series.peakRejected]));
  const parts: string[] = [];
  parts.push(`<h2>Admitted and rejected per second</h2>`);
  parts.push(
    legend([
      { name: sliced ? 'admitted / s, busiest second of the slice' : 'admitted / s', color: ADMITTED },
      { name: sliced ? 'rejected / s, busiest second of the slice' : 'rejected / s', color: REJECTED },
      ...(sliced
        ? [
            { name: 'admitted / s, slice average', color: ADMITTED_MEAN },
            { name: 'rejected / s, slice average', color: REJECTED_MEAN },
          ]
        : []),
    ]),
  );
  parts.push(
    `<p class="meta">${
      sliced
        ? `One point per ${perSecond} s slice, UTC: the busiest second in it, and the average over it (an average alone would flatten the bursts). The busiest minutes are drawn second by second below.`
        : 'One point per second, UTC.'
    } Every chart on the same scale.</p>`,
  );
  parts.push('<div class="charts">');
  for (const c of candidates) {
    const xs = c.series.admitted.map((_, i) => timeline.startMs + i * timeline.bucketMs);
    const line = (id: string, name: string, color: string, values: readonly number[], divide: number) => ({
      id,
      name,
      color,
      points: xs.map((x, i) => [x, (values[i] ?? 0) / divide] as const),
      raw: values,
    });
    parts.push(
      `<div class="chart">${lineChart({
        title: `#${c.index + 1} ${c.label}`,
        yLabel: 'requests / s',
        yMax,
        xFormat: clock,
        series: [
          line(`c${c.index}-admitted`, 'admitted', sliced ? ADMITTED_MEAN : ADMITTED, c.series.admitted, perSecond),
          line(`c${c.index}-rejected`, 'rejected', sliced ? REJECTED_MEAN : REJECTED, c.series.rejected, perSecond),
          ...(sliced
            ? [
                line(`c${c.index}-admitted-peak`, 'admitted, busiest second', ADMITTED, c.series.peakAdmitted, 1),
                line(`c${c.index}-rejected-peak`, 'rejected, busiest second', REJECTED, c.series.peakRejected, 1),
              ]
            : []),
        ],
      })}</div>`,
    );
  }
  parts.push('</div>');
  return parts;
}

/** The busiest minutes second by second, as small multiples (when the overview is coarser than 1 s). */
function busiestSection(report: ReplayReport): string[] {
  const { candidates } = report;
  const sliced = report.timeline.bucketMs > 1000;
  const parts: string[] = [];
  if (sliced && report.busiestMinutes.length > 0) {
    parts.push('<h2>The busiest minutes, second by second</h2>');
    parts.push(
      legend([
        { name: 'requests / s', color: REQUESTS },
        ...candidates.map((c) => ({ name: `rejected / s by #${c.index + 1}`, color: PALETTE[c.index % PALETTE.length] as string })),
      ]),
    );
    parts.push(
      `<p class="meta">The ${report.busiestMinutes.length} minutes with the most requests, in time order, one point per second (UTC), each on its own scale.</p>`,
    );
    parts.push('<div class="charts">');
    report.busiestMinutes.forEach((m, k) => {
      const xs = Array.from({ length: 60 }, (_, sec) => m.startMs + sec * 1000);
      const first = m.candidates[0];
      const total = xs.map((_, sec) => (first?.admitted[sec] ?? 0) + (first?.rejected[sec] ?? 0));
      parts.push(
        `<div class="chart">${lineChart({
          title: `${new Date(m.startMs).toISOString().slice(0, 16).replace('T', ' ')}: ${m.requests.toLocaleString('en-US')} requests`,
          yLabel: 'requests / s',
          xFormat: clock,
          width: 372,
          series: [
            { id: `m${k}-requests`, name: 'requests', color: REQUESTS, points: xs.map((x, sec) => [x, total[sec] as number] as const) },
            ...m.candidates.map((c, i) => ({
              id: `m${k}-c${i}-rejected`,
              name: `rejected by #${i + 1}`,
              color: PALETTE[i % PALETTE.length] as string,
              points: xs.map((x, sec) => [x, c.rejected[sec] ?? 0] as const),
            })),
          ],
        })}</div>`,
      );
    });
    parts.push('</div>');
  }
  return parts;
}

/** Reject streaks, the clients each candidate hurts most, disagreements with #1, malformed lines. */
function clientsSection(report: ReplayReport): string[] {
  const { candidates, input } = report;
  const parts: string[] = [];
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
  return parts;
}

export function renderReplayHtml(report: ReplayReport): string {
  const parts = [...headSection(report), ...overviewSection(report), ...busiestSection(report), ...clientsSection(report)];
  return htmlPage('tollgate replay', parts.join('\n'), report);
}
