/**
 * @module `-` as a replay input: standard input (`zcat access.log.gz | tollgate replay - ...`). Replay
 * learns a file's size before it reads it (to sort small inputs whole, to size the reorder window, for the
 * progress bar) and detects gzip by its first bytes, so standard input is first copied to a temporary
 * file, streamed (memory holds one chunk), and read from there like any file; the copy is removed after.
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

/** Copies `stdin` to a temporary file when `files` names `-` (at most once). */
export async function spoolStdin(files: readonly string[], stdin: NodeJS.ReadableStream | undefined): Promise<Spooled> {
  const dashes = files.filter((f) => f === STDIN_NAME).length;
  if (dashes === 0) return { files, cleanup() {} };
  if (dashes > 1) throw new CliError('ERR_RL_CLI_USAGE', "'-' (standard input) can be given once");
  if (stdin === undefined) throw new CliError('ERR_RL_CLI_USAGE', "'-' (standard input) is not available here");
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-stdin-'));
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  const path = join(dir, 'stdin');
  try {
    await pipeline(stdin, createWriteStream(path));
  } catch (error) {
    cleanup();
    throw new CliError('ERR_RL_REPLAY_INPUT', `cannot read standard input (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  return { files: files.map((f) => (f === STDIN_NAME ? path : f)), cleanup };
}
