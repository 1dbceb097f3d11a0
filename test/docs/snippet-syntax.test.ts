/**
 * @module Every TypeScript and JavaScript block in the docs parses: a snippet a user copies must at least
 * be a program. Blocks are fragments (free names, `...` elisions are allowed only as spread syntax), so
 * they are not typechecked here, only parsed as TypeScript; two shadow-rollout snippets once carried a
 * stray `}` that no reader's editor would accept.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
/** Every Markdown file in the repository (tracked or not yet), outside node_modules. */
const docs = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.md'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((f) => f !== '' && !f.includes('node_modules/'));

/** The fenced blocks of `markdown` whose info string names TypeScript or JavaScript, with their first line. */
function codeBlocks(markdown: string): { line: number; code: string }[] {
  const out: { line: number; code: string }[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(ts|typescript|js|javascript|mjs|tsx)\s*$/.exec(lines[i] ?? '');
    if (open === null) continue;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j] ?? ''); j++) body.push(lines[j] ?? '');
    out.push({ line: i + 2, code: body.join('\n') });
    i = j;
  }
  return out;
}

/** The syntax errors of `code` parsed as a TypeScript module, as `line: message`. */
function syntaxErrors(code: string): string[] {
  const { diagnostics = [] } = ts.transpileModule(code, {
    reportDiagnostics: true,
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  return diagnostics.map((d) => {
    const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : 0;
    return `${line}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}

describe('code blocks in the docs', () => {
  const blocks = docs.flatMap((file) => codeBlocks(readFileSync(join(root, file), 'utf8')).map((b) => ({ file, ...b })));

  it('finds the blocks', () => {
    expect(blocks.filter((b) => b.file === 'README.md').length).toBeGreaterThan(10);
    expect(syntaxErrors('rateLimit({ a: { b: 1 } }, });')).not.toEqual([]);
  });

  it('parses every TypeScript and JavaScript block', () => {
    const broken = blocks.flatMap(({ file, line, code }) => syntaxErrors(code).map((e) => `${file}:${line} (block line ${e})`));
    expect(broken).toEqual([]);
  });
});
