/**
 * @module The root README's "Examples" table lists every folder under examples/, once, and no folder
 * that does not exist; each row links its folder (`[name](examples/name)`) and its commands run on the
 * pinned pnpm, naming the folder's own package and one of its scripts (`--filter <package> <script>`)
 * or a root script.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRepoFile, root, section, tables } from './markdown.js';

interface Manifest {
  readonly name?: string;
  readonly scripts?: Record<string, string>;
  readonly packageManager?: string;
}

const manifest = (path: string): Manifest => JSON.parse(readRepoFile(path)) as Manifest;

const folders = readdirSync(join(root, 'examples'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.') && entry.name !== 'node_modules')
  .map((entry) => entry.name);

const [table] = tables(section(readRepoFile('README.md'), '## Examples'));
const rows = (table?.rows ?? []).map((cells, i) => ({ cells, line: table?.lines[i] ?? '' }));

/** The folder a row links: its first cell opens with `[name](examples/name)`. */
function linkedFolder(cell: string): string | undefined {
  const m = /^\[([^\]]+)\]\(examples\/([^)/]+)\/?\)/.exec(cell);
  return m !== null && m[1] === m[2] ? m[1] : undefined;
}

describe('README "Examples" table', () => {
  it('exists, with a row per example', () => {
    expect(table?.header).toEqual(['example', 'command']);
    expect(folders.length).toBeGreaterThan(0);
  });

  it('links each row to one folder, by its name', () => {
    for (const { cells, line } of rows) {
      expect(cells.length, line).toBe(2);
      expect(linkedFolder(cells[0] ?? ''), `the first cell must open with [name](examples/name):\n${line}`).toBeDefined();
    }
  });

  it('lists every folder under examples/, once, and no other', () => {
    const listed = rows.map(({ cells }) => linkedFolder(cells[0] ?? ''));
    expect(
      listed.filter((name, i) => listed.indexOf(name) !== i),
      'examples listed twice',
    ).toEqual([]);
    expect(
      folders.filter((name) => !listed.includes(name)),
      'folders under examples/ the table does not list',
    ).toEqual([]);
    expect(
      listed.filter((name) => name === undefined || !folders.includes(name)),
      'rows for folders that do not exist',
    ).toEqual([]);
  });

  it('gives commands that name the pinned pnpm and a script that exists', () => {
    const rootManifest = manifest('package.json');
    const pnpm = `npx -y ${rootManifest.packageManager}`;
    for (const { cells, line } of rows) {
      const folder = linkedFolder(cells[0] ?? '');
      const commands = [...(cells[1] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '');
      expect(commands.length, `no command in\n${line}`).toBeGreaterThan(0);
      for (const command of commands) {
        expect(command.startsWith(`${pnpm} `), `${command} does not start with "${pnpm} "`).toBe(true);
        const args = command.slice(pnpm.length + 1).split(/\s+/);
        if (args[0] === '--filter') {
          const path = `examples/${folder}/package.json`;
          expect(existsSync(join(root, path)), `${path} is missing`).toBe(true);
          const own = manifest(path);
          expect(args[1], `${command}: the package of examples/${folder}`).toBe(own.name);
          expect(Object.keys(own.scripts ?? {}), `${command}: a script of ${path}`).toContain(args[2]);
        } else {
          expect(Object.keys(rootManifest.scripts ?? {}), `${command}: a root script`).toContain(args[0]);
        }
      }
    }
  });
});
