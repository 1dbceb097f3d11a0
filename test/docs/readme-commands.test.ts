/**
 * @module The README opens with exactly two commands (the demo, then the tests), on the pinned pnpm, and
 * `.ci/run` runs the second one as written: a change to one of them cannot leave the others behind.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');

describe('the README commands', () => {
  const readme = read('README.md');
  const first = /```sh\n([\s\S]*?)```/.exec(readme);
  const commands = (first?.[1] ?? '').trim().split('\n');
  const pinned = (JSON.parse(read('package.json')) as { packageManager: string }).packageManager;

  it('opens the README, before any other section: exactly the demo and the tests', () => {
    expect(readme.indexOf('```sh')).toBeLessThan(readme.indexOf('\n## '));
    expect(commands).toEqual([`npx -y ${pinned} install && npx -y ${pinned} demo`, `npx -y ${pinned} install && npx -y ${pinned} test`]);
  });

  it('.ci/run runs the README test command as written', () => {
    expect(read('.ci/run').split('\n')).toContain(commands[1]);
  });

  it('names root scripts that exist', () => {
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    expect(Object.keys(scripts)).toEqual(expect.arrayContaining(['demo', 'test', 'build', 'lint', 'typecheck', 'bench']));
  });
});
