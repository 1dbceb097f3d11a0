/**
 * @module Lines of a file in batches, streamed: gzip is recognised by its magic bytes (not the name) and
 * inflated on the fly; memory holds one chunk at a time, whatever the file's size. `\r\n` endings lose
 * their `\r`; a final line without `\n` still counts; a UTF-8 byte order mark is dropped.
 */

import { isAscii } from 'node:buffer';
import { closeSync, createReadStream, openSync, readSync, statSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { createGunzip } from 'node:zlib';
import { CliError } from '../cli-error.js';

const CHUNK_BYTES = 1 << 20;
/**
 * A longer line is cut to this many characters (and will usually fail to parse): without a bound, a
 * file with no newline would be held whole in memory.
 */
export const MAX_LINE_CHARS = 1 << 20;

/** True when the file starts with the gzip magic bytes 1f 8b. */
export function isGzip(path: string): boolean {
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(2);
    const n = readSync(fd, head, 0, 2, 0);
    return n === 2 && head[0] === 0x1f && head[1] === 0x8b;
  } finally {
    closeSync(fd);
  }
}

/** The file's size in bytes, or a CliError naming it when it cannot be read. */
export function fileSize(path: string): number {
  try {
    const stat = statSync(path);
    if (!stat.isFile()) throw new CliError('ERR_RL_REPLAY_INPUT', `'${path}' is not a file`);
    return stat.size;
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError('ERR_RL_REPLAY_INPUT', `cannot read '${path}' (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
}

/**
 * Yields the lines of `path` in batches (each batch is the lines completed by one chunk). `onBytes`
 * receives the count of file bytes (compressed, for gzip) read so far, for a progress bar.
 */
export async function* readLines(path: string, onBytes: (bytes: number) => void = () => {}): AsyncGenerator<string[]> {
  fileSize(path);
  const raw = createReadStream(path, { highWaterMark: CHUNK_BYTES });
  let read = 0;
  raw.on('data', (chunk) => {
    read += chunk.length;
    onBytes(read);
  });
  const stream = isGzip(path) ? raw.pipe(createGunzip({ chunkSize: CHUNK_BYTES })) : raw;
  if (stream !== raw) raw.on('error', (error) => stream.destroy(error));
  const decoder = new StringDecoder('utf8');
  let rest = '';
  // Logs are mostly ASCII (nginx escapes other bytes as \xHH): such a chunk is read as latin1, several
  // times faster than UTF-8 decoding and the same text. Once a chunk is not, the decoder takes over for
  // good (it may hold the first bytes of a character cut by the chunk boundary).
  let utf8 = false;
  let skipping = false;
  // A UTF-8 byte order mark (files saved by Windows tools) is not part of the first line.
  let atStart = true;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (!utf8 && !isAscii(chunk)) utf8 = true;
      let textChunk = rest + (utf8 ? decoder.write(chunk) : chunk.toString('latin1'));
      if (atStart && textChunk !== '') {
        atStart = false;
        if (textChunk.charCodeAt(0) === 0xfeff) textChunk = textChunk.slice(1);
      }
      if (skipping) {
        // The rest of a line already cut and counted: drop it up to its end.
        const nl = textChunk.indexOf('\n');
        if (nl < 0) {
          rest = '';
          continue;
        }
        textChunk = textChunk.slice(nl + 1);
        skipping = false;
      }
      const lines = textChunk.split('\n');
      rest = lines.pop() ?? '';
      if (rest.length > MAX_LINE_CHARS) {
        lines.push(rest.slice(0, MAX_LINE_CHARS));
        rest = '';
        skipping = true;
      }
      if (textChunk.includes('\r')) {
        for (let i = 0; i < lines.length; i++) {
          const l = lines[i] as string;
          if (l.charCodeAt(l.length - 1) === 13) lines[i] = l.slice(0, -1);
        }
      }
      if (lines.length > 0) yield lines;
    }
  } catch (error) {
    throw new CliError('ERR_RL_REPLAY_INPUT', `cannot read '${path}': ${(error as Error).message}`);
  }
  const last = skipping ? '' : rest + (utf8 ? decoder.end() : '');
  if (last !== '') yield [last.charCodeAt(last.length - 1) === 13 ? last.slice(0, -1) : last];
}
