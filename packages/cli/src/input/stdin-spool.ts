/**
 * @module `-` as a replay input: standard input (`zcat access.log.gz | tollgate replay - ...`). Replay
 * learns a file's size before it reads it (to sort small inputs whole, to size the reorder window, for the
 * progress bar) and detects gzip by its first bytes, so standard input is first copied to a temporary
 * file, streamed (memory holds one chunk), and read from there like any file; the copy is removed after,
 * and on Ctrl-C (SIGINT) or SIGTERM.
 */
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { CliError } from '../cli-error.js';

/** The name that means standard input among the replay's files. */
export const STDIN_NAME = '-';

export interface Spooled {
  /** The files, `-` replaced by the copy of standard input. */
  readonly files: readonly string[];
  /** Removes the copy (nothing when there was none). */
  cleanup(): void;
}

/** The exit code a shell gives a process ended by each signal (128 + its number), which the replay exits with after removing the copy. */
const SIGNAL_EXIT: Readonly<Record<'SIGINT' | 'SIGTERM', number>> = { SIGINT: 130, SIGTERM: 143 };

/** What the copy listens to for Ctrl-C and `kill`: the process, or a test's stand-in. */
export interface SignalTarget {
  on(signal: 'SIGINT' | 'SIGTERM', listener: () => void): unknown;
  off(signal: 'SIGINT' | 'SIGTERM', listener: () => void): unknown;
  exit(code: number): void;
}

/**
 * Copies `stdin` to a temporary file when `files` names `-` (at most once). Until `cleanup()`, SIGINT and
 * SIGTERM remove the copy and exit with 130 or 143, as the signal would have: listening to a signal
 * replaces Node's own exit on it, so the handler exits itself (before, the copy of a log of gigabytes
 * stayed in the temporary directory after every Ctrl-C). `cleanup()` stops listening, so a process that
 * replays many times (a test suite) does not gather listeners.
 */
export async function spoolStdin(
  files: readonly string[],
  stdin: NodeJS.ReadableStream | undefined,
  signals: SignalTarget = process,
): Promise<Spooled> {
  const dashes = files.filter((f) => f === STDIN_NAME).length;
  if (dashes === 0) return { files, cleanup() {} };
  if (dashes > 1) throw new CliError('ERR_RL_CLI_USAGE', "'-' (standard input) can be given once");
  if (stdin === undefined) throw new CliError('ERR_RL_CLI_USAGE', "'-' (standard input) is not available here");
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-stdin-'));
  const listeners = (Object.keys(SIGNAL_EXIT) as (keyof typeof SIGNAL_EXIT)[]).map((signal) => {
    const listener = () => {
      cleanup();
      signals.exit(SIGNAL_EXIT[signal]);
    };
    signals.on(signal, listener);
    return { signal, listener };
  });
  const cleanup = () => {
    for (const { signal, listener } of listeners) signals.off(signal, listener);
    rmSync(dir, { recursive: true, force: true });
  };
  const path = join(dir, 'stdin');
  try {
    await pipeline(stdin, createWriteStream(path));
  } catch (error) {
    cleanup();
    throw new CliError('ERR_RL_REPLAY_INPUT', `cannot read standard input (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  return { files: files.map((f) => (f === STDIN_NAME ? path : f)), cleanup };
}
