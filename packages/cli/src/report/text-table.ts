/**
 * @module Plain-text tables for the terminal: a header row, a rule, right-aligned numbers, left-aligned text.
 * Text from the log (keys, quoted lines) is shown with its control characters escaped (`\u001b`), so it
 * can neither drive the terminal (escape sequences) nor split a row (line breaks).
 */

import { escapeControl } from '@tollgate/core/adapter';

export type Cell = string | number;

// The core's, which its log lines use too: table cells and stderr lines escape what log lines do.
export { escapeControl };

function show(cell: Cell): string {
  return typeof cell === 'number' ? formatNumber(cell) : escapeControl(cell);
}

/** Integers with thin grouping (`1 234 567`), other numbers to 2 decimals. */
export function formatNumber(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Number.isInteger(n)) return n.toLocaleString('en-US').replace(/,/g, ' ');
  return n.toFixed(2);
}

/**
 * A share 0..1 as a percentage: `12.3%`; `0%` and `100%` only when exact: `<0.1%` for a non-zero share
 * below, `>99.9%` for a share short of all (1,999 of 2,000 is not everyone).
 */
export function formatShare(share: number): string {
  if (share === 0) return '0%';
  if (share === 1) return '100%';
  if (share < 0.001) return '<0.1%';
  if (share > 0.999) return '>99.9%';
  return `${(share * 100).toFixed(1)}%`;
}

/** Renders `rows` under `header`; columns whose header starts with a space are left-aligned. */
export function renderTable(header: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const text = rows.map((r) => r.map(show));
  const left = header.map(
    (h, i) => h.startsWith(' ') || rows.every((r) => typeof r[i] === 'string' && !/^[\d<.%\s/-]+$/.test(r[i] as string)),
  );
  const names = header.map((h) => h.trim());
  const widths = names.map((h, i) => Math.max(h.length, ...text.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (left[i] ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number)))
      .join('  ')
      .trimEnd();
  return [line(names), widths.map((w) => '-'.repeat(w)).join('  '), ...text.map(line)].join('\n');
}
