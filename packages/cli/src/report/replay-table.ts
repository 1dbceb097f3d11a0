/**
 * @module The terminal summary of a replay: one row per candidate, then the clients each candidate hurts
 * most, then the malformed lines. Text from the log is shown with control characters escaped (text-table.ts).
 */
import { formatDuration, rerunWith } from '../input/time-order.js';
import type { ReplayReport } from '../replay/replay-report.js';
import { escapeControl, formatNumber, formatShare, renderTable } from './text-table.js';

/** `n` and its noun, singular for 1: '1 request', '2 requests'. */
function counted(n: number, noun: string, format: (n: number) => string = formatNumber): string {
  return `${format(n)} ${noun}${n === 1 ? '' : 's'}`;
}

/**
 * How many clients the report holds, in `format`'s digits: past `--max-keys` distinct clients the later
 * ones are not tracked, so the count is a floor ("more than 2 clients").
 */
export function clientCount(report: ReplayReport, format: (n: number) => string = formatNumber): string {
  if (report.untrackedRequests > 0) return `more than ${format(report.clients)} client${report.clients === 1 ? '' : 's'}`;
  return counted(report.clients, 'client', format);
}

function span(report: ReplayReport): string {
  const { firstMs, lastMs } = report.timeline;
  if (firstMs === null || lastMs === null) return 'no requests';
  const seconds = (lastMs - firstMs) / 1000;
  return `${new Date(firstMs).toISOString()} .. ${new Date(lastMs).toISOString()} (${formatNumber(Math.round(seconds))} s)`;
}

/** How the input was ordered, in one sentence; and when requests fell outside the window, a loud second one. */
export function describeOrder(report: ReplayReport): { how: string; late: string | null } {
  const o = report.input.order;
  if (o === null) return { how: 'Requests replayed in the order they were pushed.', late: null };
  const disordered =
    o.disordered === 0
      ? 'no line was logged earlier than the line before it'
      : `${formatNumber(o.disordered)} of ${counted(report.input.requests, 'request')} ${o.disordered === 1 ? 'was' : 'were'} logged earlier than the line before ${o.disordered === 1 ? 'it' : 'them'}`;
  const how =
    o.mode === 'sort'
      ? `Time order: every file sorted whole (${o.reason === 'flag' ? '--sort' : 'small enough to hold'}); ${disordered}.`
      : `Time order: reorder window ${formatDuration(o.windowMs ?? 0)} (${o.reason === 'flag' ? '--reorder-window' : 'default for a file too large to hold, or a gzip file found to hold over 1,000,000 requests; smaller ones sorted whole; --sort to sort every file whole'}), up to ${counted(o.maxHeld, 'request')} held; ${disordered}.`;
  const late =
    o.late === 0
      ? null
      : `${counted(o.late, 'request')} (${formatShare(o.late / Math.max(1, report.input.requests))}) came more than the ${formatDuration(o.windowMs ?? 0)} window after later ones, ` +
        `the worst ${formatDuration(o.worstLateMs)} late: ${o.late === 1 ? 'it was' : 'they were'} replayed out of time order, so the figures below are approximate. Rerun with ${rerunWith(o.worstLateMs)}.`;
  return { how, late };
}

/** `names` in a sentence: 'a.log', 'a.log and b.log', 'a.log, b.log and 3 more files'. */
function listed(names: readonly string[]): string {
  const shown = names.slice(0, 3).map(escapeControl);
  const more = names.length - shown.length;
  if (more > 0) return `${shown.join(', ')} and ${counted(more, 'more file')}`;
  return shown.length === 1 ? (shown[0] as string) : `${shown.slice(0, -1).join(', ')} and ${shown[shown.length - 1]}`;
}

/**
 * What whole-second times do to the figures: a note when `--spread-seconds` spread them, a warning (the
 * figures of candidates with a window, or a bucket's refill of its burst, of 10 s or less are approximate, usually too many rejections) when
 * they were replayed as they are; null when the times have milliseconds or no candidate is that short.
 * Judged per file (`input.files[].wholeSeconds`): when only some files' times are whole seconds, the note
 * and the warning name them (before: one judgement over all the files, so a whole-second file beside a
 * millisecond one was bunched without a warning).
 */
export function describeTimes(report: ReplayReport): { note: string | null; warning: string | null } {
  const t = report.input.times;
  if (t === null) return { note: null, warning: null };
  const files = t.wholeSeconds ? null : report.input.files.filter((f) => f.wholeSeconds).map((f) => f.file);
  if (files !== null && files.length === 0) return { note: null, warning: null };
  const these = files === null ? null : listed(files);
  if (t.spread) {
    const where = these === null ? 'whole seconds' : `whole seconds in ${these}`;
    return { note: `Times: ${where}; each second's requests spread evenly over it (--spread-seconds).`, warning: null };
  }
  if (t.coarse.length === 0) return { note: null, warning: null };
  const which = t.coarse.map((i) => `#${i + 1}`).join(', ');
  const one = t.coarse.length === 1;
  const what =
    these === null
      ? "every time in the log is a whole second (nginx's $time_local, Apache's %t), so the requests of one second were replayed as "
      : `the times of ${these} are whole seconds (nginx's $time_local, Apache's %t), so the requests of one second there were replayed as `;
  return {
    note: null,
    warning:
      what +
      `arriving together at its start: ${one ? 'candidate' : 'candidates'} ${which}, with a window (or a bucket's refill of its burst) of 10 s or less, ` +
      `${one ? 'was' : 'were'} decided on times up to a second off, usually rejecting more than the real arrivals would have, so ` +
      `${one ? 'its' : 'their'} figures are approximate. ` +
      'Log $msec with --nginx-fields (nginx: it has milliseconds), or rerun with --spread-seconds to compare with the requests spread evenly over each second.',
  };
}

/**
 * The summary of `report`: its top-client lists as long as the report holds them (`--top`, the engine's
 * `top`), or at most `topRows`.
 */
export function renderReplayTable(report: ReplayReport, topRows = Number.POSITIVE_INFINITY): string {
  const out: string[] = [];
  const { input } = report;
  out.push(
    `Replayed ${counted(input.requests, 'request')} from ${clientCount(report)}, ${span(report)}; ` +
      `${counted(input.lines, 'line')}, ${formatNumber(input.malformed)} malformed.`,
  );
  const order = describeOrder(report);
  out.push(order.how);
  if (order.late !== null) out.push('', `WARNING: ${order.late}`);
  const times = describeTimes(report);
  if (times.note !== null) out.push(times.note);
  if (times.warning !== null) out.push('', `WARNING: ${times.warning[0]?.toUpperCase()}${times.warning.slice(1)}`);
  out.push('');
  const rows = report.candidates.map((c) => [
    `#${c.index + 1}`,
    c.label,
    c.requests,
    c.admitted,
    c.rejected,
    formatShare(c.requests === 0 ? 0 : c.rejected / c.requests),
    `${formatNumber(c.clientsRejected)} (${formatShare(c.clientsRejectedShare)})`,
    c.longestStreak.length,
    c.delayMs === null ? '-' : `${c.delayMs.p50} / ${c.delayMs.p99}`,
    c.disagreement === null ? '-' : `${formatNumber(c.disagreement.onlyThis)} / ${formatNumber(c.disagreement.onlyFirst)}`,
  ]);
  out.push(
    renderTable(
      [
        ' #',
        ' candidate',
        'requests',
        'admitted',
        'rejected',
        'rejected %',
        'clients rejected',
        'longest streak',
        'delay p50/p99 ms',
        'vs #1: only this / only #1',
      ],
      rows,
    ),
  );
  for (const c of report.candidates) {
    const topRejected = c.topRejected.slice(0, topRows);
    if (topRejected.length > 0) {
      out.push('');
      out.push(`#${c.index + 1} ${c.label}: clients rejected most`);
      out.push(
        renderTable(
          [' client', 'requests', 'rejected', 'longest streak'],
          topRejected.map((r) => [r.key, r.requests, r.rejected, r.longestStreak]),
        ),
      );
    }
    const topDisagreeing = c.topDisagreeing.slice(0, topRows);
    if (topDisagreeing.length > 0) {
      out.push('');
      out.push(`#${c.index + 1} ${c.label}: clients where it disagrees with #1 most`);
      out.push(
        renderTable(
          [' client', 'requests', 'disagreements', 'rejected here'],
          topDisagreeing.map((r) => [r.key, r.requests, r.disagreements, r.rejected]),
        ),
      );
    }
  }
  if (input.malformed > 0) {
    out.push('');
    out.push(
      `${formatNumber(input.malformed)} malformed ${input.malformed === 1 ? 'line' : 'lines'} (skipped)${input.malformed > input.malformedSamples.length ? `; the first ${input.malformedSamples.length}` : ''}:`,
    );
    for (const m of input.malformedSamples) out.push(`  ${escapeControl(m.file)}:${m.line}: ${escapeControl(m.reason)}`);
  }
  const notes: string[] = [];
  if (input.outOfOrder > 0 && input.order === null)
    notes.push(
      `${counted(input.outOfOrder, 'request')} ${input.outOfOrder === 1 ? 'was' : 'were'} earlier than the one before ${input.outOfOrder === 1 ? 'it' : 'them'} (replayed at their time; the limiter never refunds)`,
    );
  if (report.untrackedRequests > 0)
    notes.push(
      `${counted(report.untrackedRequests, 'request')} of clients beyond --max-keys distinct clients are in the totals but not the per-client figures`,
    );
  if (report.evictions > 0)
    notes.push(
      `${formatNumber(report.evictions)} limiter ${report.evictions === 1 ? 'entry was' : 'entries were'} evicted to stay within --max-keys, as the MemoryStore does: ` +
        'the verdicts are those of a MemoryStore of that size; an evicted client starts over with a whole budget, so a store that keeps every key (Redis) would have rejected more',
    );
  if (notes.length > 0) {
    out.push('');
    for (const n of notes) out.push(`Note: ${n}.`);
  }
  return `${out.join('\n')}\n`;
}
