/**
 * @module Every name `@tollgate/core` and `@tollgate/core/adapter` export has a doc comment (issue 24: a
 * reader meets each name with a sentence that says what it is).
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const ENTRIES = ['packages/core/src/index.ts', 'packages/core/src/adapter.ts'].map((f) => join(ROOT, f));

describe('exported names', () => {
  it('every export of both core entries has a doc comment', () => {
    const program = ts.createProgram(ENTRIES, {
      customConditions: ['@tollgate/source'],
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      strict: true,
      noEmit: true,
    });
    const checker = program.getTypeChecker();
    const undocumented: string[] = [];
    let count = 0;
    for (const entry of ENTRIES) {
      const source = program.getSourceFile(entry);
      const module = source === undefined ? undefined : checker.getSymbolAtLocation(source);
      expect(module, entry).toBeDefined();
      for (const exported of checker.getExportsOfModule(module as ts.Symbol)) {
        count += 1;
        const target = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
        if (ts.displayPartsToString(target.getDocumentationComment(checker)).trim() === '') undocumented.push(exported.name);
      }
    }
    expect(count).toBeGreaterThan(100);
    expect(undocumented).toEqual([]);
  }, 60_000);
});
