/**
 * @module A run of some sections only (`pnpm bench --sections D,O`) rewrites those sections of an
 * existing RESULTS.md and their rows of the Targets table, and keeps everything else as it was, so one
 * section can be measured again without re-running the hour-long rest. The sections rewritten carry a
 * line saying when and at which commit.
 */

/** The order sections appear in RESULTS.md. */
export const SECTION_ORDER = ['A', 'B', 'C', 'D', 'H', 'I', 'O', 'R'] as const;
export type SectionId = (typeof SECTION_ORDER)[number];

interface Block {
  readonly heading: string;
  readonly lines: string[];
}

function blocks(text: string): { head: string[]; blocks: Block[] } {
  const head: string[] = [];
  const out: Block[] = [];
  for (const line of text.trimEnd().split('\n')) {
    if (line.startsWith('## ')) out.push({ heading: line, lines: [] });
    else if (out.length === 0) head.push(line);
    else (out.at(-1) as Block).lines.push(line);
  }
  return { head, blocks: out };
}

/** The section a block holds (`## D. ...` is D), or undefined for Machine, Versions, Targets. */
function sectionOf(b: Block): SectionId | undefined {
  const m = /^## ([A-Z])\. /.exec(b.heading);
  return m !== null && (SECTION_ORDER as readonly string[]).includes(m[1] as string) ? (m[1] as SectionId) : undefined;
}

const isTargets = (b: Block): boolean => b.heading.startsWith('## Targets');

/** The section column of a Targets row, or undefined for anything else (header, separator, text). */
function rowSection(line: string): SectionId | undefined {
  const m = /^\| ([A-Z]) \|/.exec(line);
  return m !== null && (SECTION_ORDER as readonly string[]).includes(m[1] as string) ? (m[1] as SectionId) : undefined;
}

function mergeTargets(old: Block, fresh: Block, sections: readonly SectionId[]): Block {
  const kept = old.lines.filter((l) => {
    const s = rowSection(l);
    return s !== undefined && !sections.includes(s);
  });
  const added = fresh.lines.filter((l) => {
    const s = rowSection(l);
    return s !== undefined && sections.includes(s);
  });
  const rank = (l: string): number => SECTION_ORDER.indexOf(rowSection(l) as SectionId);
  // Array.prototype.sort is stable: each section's rows keep their order.
  const rows = [...kept, ...added].sort((a, b) => rank(a) - rank(b));
  const first = fresh.lines.findIndex((l) => rowSection(l) !== undefined || /^\| section \|/.test(l));
  const header = fresh.lines.filter((l) => /^\| section \|/.test(l) || /^\| ---/.test(l));
  const before = fresh.lines.slice(0, Math.max(0, first));
  return { heading: fresh.heading, lines: [...before, ...header, ...rows, ''] };
}

/**
 * `existing` with the blocks of `sections` (and their Targets rows) taken from `fresh`, a report of a
 * run of those sections only. `stamp` goes under each rewritten section's heading.
 */
export function mergeResults(existing: string, fresh: string, sections: readonly SectionId[], stamp: string): string {
  const old = blocks(existing);
  const neu = blocks(fresh);
  const freshSection = (s: SectionId): Block | undefined => {
    const b = neu.blocks.find((x) => sectionOf(x) === s);
    // A blank line after it: the fresh report's last section has none, and a section placed before an old one needs it.
    return b === undefined ? undefined : { heading: b.heading, lines: ['', stamp, ...b.lines, ''] };
  };
  const out: Block[] = [];
  const placed = new Set<SectionId>();
  const placeBefore = (limit: number): void => {
    for (const s of sections) {
      if (placed.has(s) || SECTION_ORDER.indexOf(s) >= limit) continue;
      const b = freshSection(s);
      if (b !== undefined) out.push(b);
      placed.add(s);
    }
  };
  for (const b of old.blocks) {
    const s = sectionOf(b);
    if (isTargets(b)) {
      const t = neu.blocks.find(isTargets);
      out.push(t === undefined ? b : mergeTargets(b, t, sections));
      continue;
    }
    if (s === undefined) {
      out.push(b);
      continue;
    }
    placeBefore(SECTION_ORDER.indexOf(s));
    if (sections.includes(s)) {
      const f = freshSection(s);
      if (f !== undefined) out.push(f);
      placed.add(s);
    } else {
      out.push(b);
    }
  }
  placeBefore(SECTION_ORDER.length);
  const text = [...old.head, ...out.flatMap((b) => [b.heading, ...b.lines])].join('\n');
  return `${text.replace(/\n{3,}/g, '\n\n').trimEnd()}\n`;
}
