/**
 * @module docs/errors.md stays complete. Every message tollgate throws or logs links to
 * `DOCS_URL#<code in lower case>`; this suite scans the packages' shipped source (packages/*\/src, without
 * tests, type tests, `testing/` helpers and `*-fixture.ts` test support) for `ERR_RL_*` / `WRN_RL_*` codes
 * and checks that each one has its `### CODE` section (the heading GitHub turns into that anchor), under
 * `## Errors` or `## Warnings` as its prefix says, with an example message, and that every section still
 * names a code the code raises. Comments are read apart from code: a code that only a comment mentions
 * (a placeholder such as `WRN_RL_X`, or a code since removed) fails, so JSDoc never points at nothing.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DOCS_URL } from '@tollgate/core';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const DOC_PATH = join(root, 'docs', 'errors.md');
const CODE_PATTERN = /\b(?:ERR|WRN)_RL_[A-Z0-9_]+\b/g;

function isShippedSource(name: string): boolean {
  return name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.test-d.ts') && !name.endsWith('-fixture.ts');
}

function walk(dir: string, out: string[]): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'testing' && entry.name !== 'node_modules') walk(path, out);
    } else if (isShippedSource(entry.name)) {
      out.push(path);
    }
  }
  return out;
}

function sourceFiles(): string[] {
  const packages = join(root, 'packages');
  const files: string[] = [];
  for (const pkg of readdirSync(packages, { withFileTypes: true })) {
    const src = join(packages, pkg.name, 'src');
    if (pkg.isDirectory() && existsSync(src)) walk(src, files);
  }
  return files.sort();
}

/** The file without its comments, as the TypeScript printer writes it (string and template literals kept verbatim). */
function withoutComments(path: string, text: string): string {
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  return ts.createPrinter({ removeComments: true }).printFile(source);
}

function codesIn(text: string): Set<string> {
  return new Set(text.match(CODE_PATTERN) ?? []);
}

interface SourceScan {
  /** Codes in code (string literals, types), by file, for messages. */
  readonly raised: Map<string, string[]>;
  /** Codes that appear in the source at all, comments included, by file. */
  readonly mentioned: Map<string, string[]>;
}

function scanSources(): SourceScan {
  const raised = new Map<string, string[]>();
  const mentioned = new Map<string, string[]>();
  const add = (map: Map<string, string[]>, code: string, file: string) => {
    const files = map.get(code) ?? [];
    if (!files.includes(file)) files.push(file);
    map.set(code, files);
  };
  for (const path of sourceFiles()) {
    const file = relative(root, path);
    const text = readFileSync(path, 'utf8');
    for (const code of codesIn(text)) add(mentioned, code, file);
    for (const code of codesIn(withoutComments(path, text))) add(raised, code, file);
  }
  return { raised, mentioned };
}

interface DocSection {
  readonly code: string;
  /** The `##` section it sits under. */
  readonly group: string;
  readonly body: string;
}

function docSections(markdown: string): { sections: DocSection[]; strayHeadings: string[] } {
  const sections: DocSection[] = [];
  const strayHeadings: string[] = [];
  let group = '';
  let current: { code: string; group: string; lines: string[] } | undefined;
  const close = () => {
    if (current !== undefined) sections.push({ code: current.code, group: current.group, body: current.lines.join('\n') });
    current = undefined;
  };
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    if (!fenced && line.startsWith('## ')) {
      close();
      group = line.slice(3).trim();
    } else if (!fenced && line.startsWith('### ')) {
      close();
      const heading = line.slice(4);
      if (/^(?:ERR|WRN)_RL_[A-Z0-9_]+$/.test(heading)) current = { code: heading, group, lines: [] };
      else strayHeadings.push(line);
    } else {
      current?.lines.push(line);
    }
  }
  close();
  return { sections, strayHeadings };
}

const scan = scanSources();
const markdown = existsSync(DOC_PATH) ? readFileSync(DOC_PATH, 'utf8') : '';
const { sections, strayHeadings } = docSections(markdown);
const documented = new Map(sections.map((s) => [s.code, s]));

describe('docs/errors.md', () => {
  it('is the page DOCS_URL points at', () => {
    expect(DOCS_URL.endsWith('/docs/errors.md')).toBe(true);
    expect(existsSync(DOC_PATH)).toBe(true);
  });

  it('finds the codes in the source (the scan itself works)', () => {
    // A few codes raised in different ways: a RateLimitConfigError, a diagnostic, a store error type, the
    // Fastify adapter. If these go missing the scan is broken, not the docs.
    for (const code of ['ERR_RL_INVALID_LIMIT', 'WRN_RL_UNKEYED', 'ERR_RL_STORE_NOT_READY', 'ERR_RL_INVALID_HOOK']) {
      expect(scan.raised.has(code), code).toBe(true);
    }
  });

  it('documents every code the source raises', () => {
    const missing = [...scan.raised.keys()].filter((code) => !documented.has(code)).sort();
    expect(
      missing.map((code) => `${code} (raised in ${scan.raised.get(code)?.join(', ')})`),
      'add a `### CODE` section to docs/errors.md for each',
    ).toEqual([]);
  });

  it('documents no code the source no longer raises', () => {
    const stale = sections.map((s) => s.code).filter((code) => !scan.raised.has(code));
    expect(stale, 'remove these sections, or the code is raised through a name this scan cannot see').toEqual([]);
  });

  it('mentions in comments only codes the source raises (no placeholders, no removed codes)', () => {
    const onlyInComments = [...scan.mentioned.keys()].filter((code) => !scan.raised.has(code)).sort();
    expect(onlyInComments.map((code) => `${code} (in ${scan.mentioned.get(code)?.join(', ')})`)).toEqual([]);
  });

  it('has one section per code, each under the group its prefix names', () => {
    const codes = sections.map((s) => s.code);
    expect(
      codes.filter((code, i) => codes.indexOf(code) !== i),
      'duplicate sections',
    ).toEqual([]);
    expect(strayHeadings, 'every ### heading is exactly a code, so GitHub makes it the anchor the messages link to').toEqual([]);
    for (const { code, group } of sections) {
      expect(group, code).toBe(code.startsWith('ERR_') ? 'Errors' : 'Warnings');
    }
  });

  it('shows an example message for every code', () => {
    // Every message starts with its code and a colon; the example is copied from a real run.
    const withoutExample = sections.filter((s) => !/```text\n/.test(s.body) || !s.body.includes(`\n${s.code}: `)).map((s) => s.code);
    expect(withoutExample).toEqual([]);
  });

  it("WRN_RL_HOOK_FAILED's table gives the fallback of every callback the source warns about, and WRN_RL_HOOK_TIMEOUT names each one it times", () => {
    const warned = new Set<string>();
    const timed = new Set<string>();
    for (const path of sourceFiles()) {
      const code = withoutComments(path, readFileSync(path, 'utf8'));
      // `hooks.failed(diagnostics, 'plan', ...)` warns on a throw, a rejection and a timeout; `hook: 'onDecision'` on a throw.
      for (const m of code.matchAll(/\bfailed\([\w.]+, ['"]([\w.]+)['"]/g)) {
        warned.add(m[1] as string);
        timed.add(m[1] as string);
      }
      for (const m of code.matchAll(/\bhook: ['"]([\w.]+)['"]/g)) warned.add(m[1] as string);
    }
    expect([...timed].sort()).toEqual(['cost', 'key', 'onLimited', 'plan', 'requestWasSuccessful', 'skip']);
    const failed = sections.find((s) => s.code === 'WRN_RL_HOOK_FAILED')?.body ?? '';
    const rows = new Set([...failed.matchAll(/^\| `([\w.]+)` +\|/gm)].map((m) => m[1] as string));
    expect([...warned].filter((hook) => !rows.has(hook))).toEqual([]);
    const timeout = sections.find((s) => s.code === 'WRN_RL_HOOK_TIMEOUT')?.body ?? '';
    expect([...timed].filter((hook) => !timeout.includes(`\`${hook}\``))).toEqual([]);
  });
});
