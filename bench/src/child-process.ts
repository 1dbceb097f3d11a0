/**
 * @module Runs one benchmark cell in its own Node process, so JIT state, heap and timers never leak
 * from one cell into the next. The child gets its input as JSON in argv[2] and answers with one IPC
 * message; `childMain` is the child's side of that contract.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The bench package's folder (children run with it as their working directory). */
export const BENCH_DIR = join(dirname(fileURLToPath(import.meta.url)), '..');
export const PROFILE_DIR = join(BENCH_DIR, '.results', 'profiles');

type Message<T> = { readonly type: 'result'; readonly value: T } | { readonly type: 'error'; readonly message: string };

export interface ChildOptions {
  /** Extra `node` flags, e.g. `--expose-gc`. */
  readonly nodeFlags?: readonly string[];
  /** Adds `--cpu-prof`; the profile is named after `label`. */
  readonly profile?: boolean;
  readonly label?: string;
  /** The child is killed after this long. */
  readonly timeoutMs: number;
  /** The child's environment; defaults to this process's. */
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * Node flags every child gets: the bench's own TypeScript through tsx; tollgate's packages resolve to
 * their built `dist/` (what users run; built.ts checks it is fresh), not to their source.
 */
export function baseFlags(): string[] {
  return ['--import', 'tsx'];
}

function profileFlags(label: string): string[] {
  mkdirSync(PROFILE_DIR, { recursive: true });
  const name = `${label.replace(/[^a-zA-Z0-9._-]+/g, '_')}-${Date.now()}.cpuprofile`;
  return ['--cpu-prof', '--cpu-prof-dir', PROFILE_DIR, '--cpu-prof-name', name];
}

/** Spawns `file` (a .ts module under src/) with `input`, and resolves with the value it sends back. */
export function runChild<I, T>(file: string, input: I, options: ChildOptions): Promise<T> {
  const execArgv = [...baseFlags(), ...(options.nodeFlags ?? []), ...(options.profile ? profileFlags(options.label ?? 'cell') : [])];
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let answer: Message<T> | undefined;
    const child: ChildProcess = fork(file, [JSON.stringify(input)], {
      cwd: BENCH_DIR,
      env: options.env ?? process.env,
      execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      child.kill('SIGKILL');
      reject(new Error(`${options.label ?? file}: no answer within ${options.timeoutMs} ms; killed`));
    }, options.timeoutMs);
    child.on('message', (m: Message<T>) => {
      answer = m;
    });
    child.on('error', (error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(error);
    });
    child.on('exit', (code, signal) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (answer?.type === 'result') resolve(answer.value);
      else if (answer?.type === 'error') reject(new Error(answer.message));
      else reject(new Error(`${options.label ?? file}: exited (${signal ?? code}) without an answer`));
    });
  });
}

/**
 * The child's side: parses argv[2], runs `body`, sends the result (or the error) to the parent and exits,
 * so a stray timer in a peer library can't keep the process alive.
 */
export function childMain<I, T>(body: (input: I) => Promise<T>): void {
  const send = (m: Message<T>): Promise<void> =>
    new Promise((resolve) => {
      if (process.send === undefined) {
        process.stdout.write(`${JSON.stringify(m)}\n`);
        resolve();
      } else {
        process.send(m, () => resolve());
      }
    });
  const raw = process.argv[2];
  if (raw === undefined) {
    process.stderr.write('expected the cell input as JSON in argv[2]\n');
    process.exit(2);
  }
  body(JSON.parse(raw) as I).then(
    async (value) => {
      await send({ type: 'result', value });
      process.exit(0);
    },
    async (error: unknown) => {
      await send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
      process.exit(1);
    },
  );
}
