/**
 * @module The house rules a reader relies on, held by a test (issue 24): no import circles in any
 * package's source (type-only imports count: a circle of types is still two rooms that need each other),
 * no function or closure over 100 lines (the engineering standard's "about 100"; issue 24 asked for
 * 120), and no adapter that imports from outside `@tollgate/core`'s public entries.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const MAX_FUNCTION_LINES = 100;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (/\.ts$/.test(entry.name) && !/\.test(-d)?\.ts$/.test(entry.name)) out.push(path);
  }
  return out;
}

const PACKAGES = readdirSync(join(ROOT, 'packages'));
const FILES = PACKAGES.flatMap((p) => sourceFiles(join(ROOT, 'packages', p, 'src')));

/** Relative imports and re-exports of `file` (`import`, `import type`, `export ... from`), as absolute .ts paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+'(\.{1,2}\/[^']+)'/g)) {
    out.push(resolve(dirname(file), (m[1] as string).replace(/\.js$/, '.ts')));
  }
  return out;
}

/** Every cycle's path in `graph` (file -> its imports), found by a depth-first walk. */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const files = [...graph.keys()];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (f: string): void => {
    state.set(f, 'open');
    stack.push(f);
    for (const next of graph.get(f) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next].map((p) => relative(ROOT, p)));
      else if (state.get(next) === undefined) visit(next);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of files) if (state.get(f) === undefined) visit(f);
  return found;
}

/** Functions (declarations, expressions, arrows, methods) longer than `max` lines, as `file:line name (n lines)`. */
function longFunctions(files: readonly string[], max: number): string[] {
  const out: string[] = [];
  for (const file of files) {
    const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const walk = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
        const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
        const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
        const lines = end - start + 1;
        if (lines > max) {
          const name = node.name !== undefined && ts.isIdentifier(node.name) ? node.name.text : '(anonymous)';
          out.push(`${relative(ROOT, file)}:${start + 1} ${name} (${lines} lines)`);
        }
      }
      ts.forEachChild(node, walk);
    };
    walk(sf);
  }
  return out;
}

describe('the house rules', () => {
  it('finds the packages and their sources', () => {
    expect(PACKAGES).toEqual(expect.arrayContaining(['core', 'express', 'fastify', 'koa', 'cli']));
    expect(FILES.length).toBeGreaterThan(100);
  });

  it('has no import circle in any package', () => {
    expect(cycles(new Map(FILES.map((f) => [f, importsOf(f)])))).toEqual([]);
  });

  it('finds a circle when there is one, type-only imports included (the check can fail)', () => {
    const [a, b, c] = ['a.ts', 'b.ts', 'c.ts'].map((f) => join(ROOT, f)) as [string, string, string];
    expect(
      cycles(
        new Map([
          [a, [b]],
          [b, [c]],
          [c, [a]],
        ]),
      ),
    ).toEqual([['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
    expect(
      cycles(
        new Map([
          [a, [b]],
          [b, [c]],
          [c, []],
        ]),
      ),
    ).toEqual([]);
    // `import type` and `export ... from` count as edges.
    expect(importsOf(join(ROOT, 'packages/core/src/limiter/limiter.ts')).some((p) => p.endsWith('observability/hot-keys.ts'))).toBe(true);
    expect(importsOf(join(ROOT, 'packages/core/src/index.ts')).length).toBeGreaterThan(10);
  });

  it(`has no function or closure over ${MAX_FUNCTION_LINES} lines`, () => {
    expect(longFunctions(FILES, MAX_FUNCTION_LINES)).toEqual([]);
  });

  it('keeps the adapters on the public entries of @tollgate/core', () => {
    const offenders: string[] = [];
    for (const adapter of ['express', 'fastify', 'koa']) {
      for (const file of sourceFiles(join(ROOT, 'packages', adapter, 'src'))) {
        const text = readFileSync(file, 'utf8');
        for (const m of text.matchAll(/from\s+'([^']+)'/g)) {
          const spec = m[1] as string;
          if (spec.startsWith('.')) continue;
          if (spec.startsWith('@tollgate/') && spec !== '@tollgate/core' && spec !== '@tollgate/core/adapter') {
            offenders.push(`${relative(ROOT, file)}: ${spec}`);
          }
          if (spec.includes('/src/') || spec.includes('core/dist')) offenders.push(`${relative(ROOT, file)}: ${spec}`);
        }
      }
    }
    expect(offenders).toEqual([]);
  });
});
