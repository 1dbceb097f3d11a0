/**
 * @module Just enough Markdown for the docs tests: a section by its heading, the pipe tables in it (cells
 * split on unescaped `|`, so `'a' \| 'b'` stays one cell), and its code (fenced blocks and inline spans).
 * Strict on purpose: a row whose cell count differs from its header's is reported, not repaired.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A file of the repository, by its path from the root. */
export function readRepoFile(path: string): string {
  return readFileSync(join(root, path), 'utf8');
}

/**
 * The text under the heading line `heading` (e.g. `'## Options'`), up to the next heading of the same
 * or a higher level. Throws when the heading is missing, so a renamed section fails loudly.
 */
export function section(markdown: string, heading: string): string {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => line.trimEnd() === heading);
  if (start === -1) throw new Error(`no heading "${heading}"`);
  const level = heading.indexOf(' ');
  let inFence = false;
  let end = lines.length;
  for (let i = start + 1; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line.startsWith('```')) inFence = !inFence;
    const hashes = /^(#+) /.exec(line)?.[1]?.length;
    if (!inFence && hashes !== undefined && hashes <= level) {
      end = i;
      break;
    }
  }
  return lines.slice(start + 1, end).join('\n');
}

/** One table: its header cells and its body rows (cells trimmed, the outer pipes dropped). */
export interface Table {
  readonly header: readonly string[];
  readonly rows: readonly (readonly string[])[];
  /** The body rows as written, for messages. */
  readonly lines: readonly string[];
}

/** The cells of a table line: split on `|` not preceded by a backslash, outer pipes dropped. */
export function cells(line: string): string[] {
  const parts = line.trim().split(/(?<!\\)\|/);
  return parts.slice(1, -1).map((c) => c.trim());
}

/** Every pipe table in `markdown`, in order (a table is a run of lines starting with `|`). */
export function tables(markdown: string): Table[] {
  const out: Table[] = [];
  let run: string[] = [];
  const flush = (): void => {
    if (run.length >= 2) {
      const [head = '', , ...body] = run;
      out.push({ header: cells(head), rows: body.map(cells), lines: body });
    }
    run = [];
  };
  for (const line of markdown.split('\n')) {
    if (line.trimStart().startsWith('|')) run.push(line);
    else flush();
  }
  flush();
  return out;
}

/** The contents of the fenced code blocks in `markdown`. */
export function fencedBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)].map((m) => m[1] ?? '');
}

/** The inline code spans of `markdown` outside fenced blocks. */
export function inlineSpans(markdown: string): string[] {
  const prose = markdown.replace(/^```[^\n]*\n[\s\S]*?^```/gm, '');
  return [...prose.matchAll(/`([^`\n]+)`/g)].map((m) => m[1] ?? '');
}
