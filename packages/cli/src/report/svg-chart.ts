/**
 * @module Inline SVG charts, drawn from numbers alone: lines over time, grouped bars, horizontal bars.
 * Every series carries its raw numbers (`data-values` or `data-v` per mark) next to what is drawn, so a
 * test in a real browser can check the picture holds the report's numbers.
 */
import { escapeHtml } from './html.js';

export const PALETTE = ['#2563eb', '#d97706', '#059669', '#7c3aed', '#db2777', '#0891b2', '#65a30d', '#dc2626'];

const W = 560;
const H = 220;
const M = { top: 24, right: 12, bottom: 32, left: 52 };

/** A round upper bound for an axis: 1, 2 or 5 x 10^n at or above `max`. */
export function niceMax(max: number): number {
  if (!(max > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

function fmt(n: number): string {
  if (Math.abs(n) >= 1e6) return `${+(n / 1e6).toFixed(1)}M`;
  if (Math.abs(n) >= 1e4) return `${+(n / 1e3).toFixed(1)}k`;
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

function frame(
  title: string,
  yMax: number,
  yLabel: string,
  xTicks: readonly (readonly [number, string, string?])[],
  inner: string,
  width = W,
): string {
  const plotW = width - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const y = (v: number) => M.top + plotH - (v / yMax) * plotH;
  const grid = [0, 0.5, 1]
    .map(
      (f) =>
        `<line x1="${M.left}" x2="${M.left + plotW}" y1="${y(f * yMax)}" y2="${y(f * yMax)}" stroke="#eceff3"/><text x="${M.left - 6}" y="${y(f * yMax) + 4}" text-anchor="end">${fmt(f * yMax)}</text>`,
    )
    .join('');
  const xs = xTicks
    .map(([x, label, anchor]) => `<text x="${x}" y="${H - M.bottom + 16}" text-anchor="${anchor ?? 'middle'}">${escapeHtml(label)}</text>`)
    .join('');
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${H}" viewBox="0 0 ${width} ${H}" role="img" aria-label="${escapeHtml(title)}">` +
    `<text class="title" x="${M.left}" y="14">${escapeHtml(title)}</text>` +
    `<text x="12" y="${M.top + plotH / 2}" transform="rotate(-90 12 ${M.top + plotH / 2})" text-anchor="middle">${escapeHtml(yLabel)}</text>` +
    `${grid}${xs}<line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${M.top + plotH}" stroke="#c9ced6"/>${inner}</svg>`
  );
}

export interface LineSeries {
  /** Identifies the series for the browser check, e.g. `c0-admitted`. */
  readonly id: string;
  readonly name: string;
  readonly color: string;
  /** Points (x, y) to draw. */
  readonly points: readonly (readonly [number, number])[];
  /** The raw numbers behind the points (defaults to the y values). */
  readonly raw?: readonly number[];
}

export interface LineChartOptions {
  readonly title: string;
  readonly yLabel: string;
  readonly series: readonly LineSeries[];
  /** Shared y maximum (several charts on one scale); defaults to this chart's. */
  readonly yMax?: number;
  readonly xFormat?: (x: number) => string;
  readonly width?: number;
}

export function lineChart(o: LineChartOptions): string {
  const width = o.width ?? W;
  const all = o.series.flatMap((s) => s.points);
  const xMin = all.length === 0 ? 0 : Math.min(...all.map((p) => p[0]));
  const xMax = Math.max(...all.map((p) => p[0]), xMin + 1);
  const yMax = niceMax(o.yMax ?? Math.max(0, ...all.map((p) => p[1])));
  const plotW = width - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const x = (v: number) => M.left + ((v - xMin) / (xMax - xMin || 1)) * plotW;
  const y = (v: number) => M.top + plotH - (Math.min(v, yMax) / yMax) * plotH;
  const format = o.xFormat ?? fmt;
  const ticks: [number, string, string][] = [0, 0.5, 1].map((f) => [
    x(xMin + f * (xMax - xMin)),
    format(xMin + f * (xMax - xMin)),
    f === 0 ? 'start' : f === 1 ? 'end' : 'middle',
  ]);
  const lines = o.series
    .map((s) => {
      const pts = s.points.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(' ');
      const raw = (s.raw ?? s.points.map((p) => p[1])).join(',');
      const dots =
        s.points.length <= 40
          ? s.points.map((p) => `<circle cx="${x(p[0]).toFixed(1)}" cy="${y(p[1]).toFixed(1)}" r="2.5" fill="${s.color}"/>`).join('')
          : '';
      return `<g data-series="${escapeHtml(s.id)}" data-values="${raw}"><polyline fill="none" stroke="${s.color}" stroke-width="1.6" points="${pts}"/>${dots}</g>`;
    })
    .join('');
  return frame(o.title, yMax, o.yLabel, ticks, lines, width);
}

export interface BarGroup {
  readonly id: string;
  readonly name: string;
  readonly color: string;
  /** One value per category. */
  readonly values: readonly number[];
}

/** Bars grouped by category: one bar per group in each category. */
export function groupedBarChart(
  title: string,
  yLabel: string,
  categories: readonly string[],
  groups: readonly BarGroup[],
  width = W,
): string {
  const plotW = width - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const yMax = niceMax(Math.max(0, ...groups.flatMap((g) => g.values)));
  const slot = plotW / Math.max(1, categories.length);
  const bar = Math.max(1, (slot * 0.8) / Math.max(1, groups.length));
  const bars = groups
    .map((g, gi) => {
      const marks = g.values
        .map((v, ci) => {
          const h = (v / yMax) * plotH;
          const bx = M.left + ci * slot + slot * 0.1 + gi * bar;
          return `<rect data-v="${v}" x="${bx.toFixed(1)}" y="${(M.top + plotH - h).toFixed(1)}" width="${bar.toFixed(1)}" height="${Math.max(h, v > 0 ? 1 : 0).toFixed(1)}" fill="${g.color}"><title>${escapeHtml(`${g.name}, ${categories[ci]}: ${v}`)}</title></rect>`;
        })
        .join('');
      return `<g data-series="${escapeHtml(g.id)}">${marks}</g>`;
    })
    .join('');
  const ticks: [number, string][] = categories.map((c, i) => [M.left + i * slot + slot / 2, c]);
  return frame(title, yMax, yLabel, ticks, bars, width);
}

export interface HBarRow {
  readonly label: string;
  readonly value: number;
  /** A lighter bar behind (e.g. the client's requests, of which `value` were rejected). */
  readonly total: number;
}

/** Horizontal bars, one row per label (top clients). */
export function horizontalBarChart(id: string, title: string, rows: readonly HBarRow[], color: string, width = W): string {
  const rowH = 18;
  const left = 190;
  const height = 28 + rows.length * rowH + 8;
  const max = niceMax(Math.max(1, ...rows.map((r) => r.total)));
  const plotW = width - left - 70;
  const marks = rows
    .map((r, i) => {
      const y = 28 + i * rowH;
      const label = r.label.length > 30 ? `${r.label.slice(0, 29)}…` : r.label;
      return (
        `<text x="${left - 6}" y="${y + 12}" text-anchor="end">${escapeHtml(label)}</text>` +
        `<rect x="${left}" y="${y + 2}" width="${((r.total / max) * plotW).toFixed(1)}" height="${rowH - 5}" fill="#e5e7eb"/>` +
        `<rect data-v="${r.value}" x="${left}" y="${y + 2}" width="${Math.max(1, (r.value / max) * plotW).toFixed(1)}" height="${rowH - 5}" fill="${color}"><title>${escapeHtml(`${r.label}: ${r.value} of ${r.total}`)}</title></rect>` +
        `<text x="${left + (r.total / max) * plotW + 4}" y="${y + 12}">${r.value.toLocaleString('en-US')} / ${r.total.toLocaleString('en-US')}</text>`
      );
    })
    .join('');
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeHtml(title)}">` +
    `<text class="title" x="8" y="16">${escapeHtml(title)}</text><g data-series="${escapeHtml(id)}">${marks}</g></svg>`
  );
}

export function legend(items: readonly { name: string; color: string }[]): string {
  return `<div class="legend">${items.map((i) => `<span><i style="background:${i.color}"></i>${escapeHtml(i.name)}</span>`).join('')}</div>`;
}
