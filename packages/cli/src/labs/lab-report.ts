/**
 * @module A lab's text for the terminal (its tables and notes) and, with the replay's chart code, its HTML.
 */
import { escapeHtml, htmlPage, htmlTable } from '../report/html.js';
import { groupedBarChart, legend, lineChart, PALETTE } from '../report/svg-chart.js';
import { renderTable } from '../report/text-table.js';
import type { LabResult } from './lab-result.js';

export function renderLabText(lab: LabResult): string {
  const out = [lab.title, '', lab.setup, ''];
  for (const t of lab.tables) {
    out.push(t.title);
    out.push(renderTable([` ${t.columns[0]}`, ...t.columns.slice(1)], t.rows));
    out.push('');
  }
  for (const n of lab.notes) out.push(`- ${n}`);
  return `${out.join('\n')}\n`;
}

/** The labs as one self-contained HTML page: each lab's setup, tables, charts and notes. */
export function renderLabHtml(labs: readonly LabResult[]): string {
  const parts = ['<h1>tollgate labs</h1>', '<p class="meta">Generated traffic decided by @tollgate/core in virtual time.</p>'];
  for (const lab of labs) {
    parts.push(`<h2 id="lab-${lab.name}">${escapeHtml(lab.title)}</h2>`);
    parts.push(`<p class="meta">${escapeHtml(lab.setup)}</p>`);
    for (const t of lab.tables) {
      parts.push(`<h3>${escapeHtml(t.title)}</h3>`);
      parts.push(htmlTable(t.columns, t.rows));
    }
    parts.push('<div class="charts">');
    lab.charts.forEach((chart, ci) => {
      const series = chart.series.map((s, si) => ({
        id: `lab-${lab.name}-${ci}-${si}`,
        name: s.name,
        color: PALETTE[si % PALETTE.length] as string,
        points: s.points,
      }));
      const svg =
        chart.categories === undefined
          ? lineChart({ title: chart.title, yLabel: chart.yLabel, series, width: 620 })
          : groupedBarChart(
              chart.title,
              chart.yLabel,
              chart.categories,
              series.map((s) => ({
                id: s.id,
                name: s.name,
                color: s.color,
                values: chart.categories?.map((_, i) => s.points.find((p) => p[0] === i)?.[1] ?? 0) ?? [],
              })),
              620,
            );
      parts.push(`<div class="chart">${legend(series)}${svg}<p class="meta">x: ${escapeHtml(chart.xLabel)}</p></div>`);
    });
    parts.push('</div>');
    parts.push(`<ul class="notes">${lab.notes.map((n) => `<li>${escapeHtml(n)}</li>`).join('')}</ul>`);
  }
  return htmlPage('tollgate labs', parts.join('\n'), labs);
}
