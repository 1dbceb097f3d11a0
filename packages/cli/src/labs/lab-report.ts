/**
 * @module A lab's text for the terminal (its tables and notes) and, with the replay's chart code, its HTML.
 */
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
