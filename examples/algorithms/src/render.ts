/**
 * @module Renders the comparison as plain text: an aligned summary table, then one timeline per phase
 * with a row per algorithm, one character per request.
 */
import type { Report } from './compare.js';
import type { Phase } from './stream.js';

/** Pads every column to its widest cell; `align[i]` 'r' right-aligns column i. */
export function formatTable(rows: readonly (readonly string[])[], align: readonly ('l' | 'r')[]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map((r) =>
    r
      .map((cell, i) => (align[i] === 'r' ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}

function ms(value: number): string {
  return value === 0 ? '-' : `${value} ms`;
}

/** `#` passed, `~` passed after a delay, `.` rejected; a space between the phase's groups. */
function timeline(report: Report, phaseIndex: number, phase: Phase): string {
  const outcomes = report.outcomes[phaseIndex] ?? [];
  const marks = outcomes.map((o) => (!o.allowed ? '.' : o.delayMs > 0 ? '~' : '#'));
  const groups: string[] = [];
  let from = 0;
  for (const size of phase.groups) {
    groups.push(marks.slice(from, from + size).join(''));
    from += size;
  }
  return groups.join(' ');
}

export function renderComparison(phases: readonly Phase[], reports: readonly Report[], limit: number, windowMs: number): string {
  const total = phases.reduce((n, p) => n + p.arrivals.length, 0);
  const header = [
    'algorithm',
    'passed',
    ...phases.map((p, i) => `${i + 1}. ${p.name}`),
    `most per ${windowMs} ms`,
    'max retry-after',
    'max delay',
  ];
  const rows = reports.map((r) => [
    r.label,
    `${r.passed}/${total}`,
    ...r.passedByPhase.map((n, i) => `${n}/${phases[i]?.arrivals.length ?? 0}`),
    String(r.mostInWindow),
    ms(r.longestRetryAfterMs),
    ms(r.longestDelayMs),
  ]);
  const align: ('l' | 'r')[] = header.map((_, i) => (i === 0 ? 'l' : 'r'));
  const lines = [
    `One client, one stream of ${total} requests, every algorithm at limit ${limit} per ${windowMs} ms (burst = limit).`,
    '',
    ...formatTable([header, ...rows], align),
    '',
    `"most per ${windowMs} ms": the most requests reaching the backend (after any delay) in any rolling ${windowMs} ms.`,
    '',
    'Timelines, one character per request: # passed, ~ passed after a delay, . rejected.',
  ];
  phases.forEach((phase, i) => {
    lines.push('', `${i + 1}. ${phase.description}`);
    const label = Math.max(...reports.map((r) => r.label.length));
    for (const r of reports) lines.push(`  ${r.label.padEnd(label)}  ${timeline(r, i, phase)}`);
  });
  return lines.join('\n');
}
