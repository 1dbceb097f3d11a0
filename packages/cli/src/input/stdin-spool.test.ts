/**
 * @module Standard input's copy: removed after the replay, and on Ctrl-C (SIGINT) or SIGTERM, which then
 * exit with the shell's code for the signal; no listener is left behind once the copy is gone.
 */
import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { type SignalTarget, spoolStdin } from './stdin-spool.js';

/** A process stand-in: its signals are events a test emits, its exit a recorded code. */
function fakeProcess(): SignalTarget & { emitter: EventEmitter; exits: number[] } {
  const emitter = new EventEmitter();
  const exits: number[] = [];
  return {
    emitter,
    exits,
    on: (signal, listener) => emitter.on(signal, listener),
    off: (signal, listener) => emitter.off(signal, listener),
    exit: (code) => void exits.push(code),
  };
}

describe('the copy of standard input', () => {
  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('is removed on %s, which then exits with %i (before: left in the temporary directory)', async (signal, code) => {
    const target = fakeProcess();
    const spooled = await spoolStdin(['-'], Readable.from([Buffer.from('1700000000,alice\n')]), target);
    const dir = dirname(spooled.files[0] as string);
    expect(existsSync(dir)).toBe(true);
    target.emitter.emit(signal);
    expect(existsSync(dir)).toBe(false);
    expect(target.exits).toEqual([code]);
    expect(target.emitter.listenerCount('SIGINT') + target.emitter.listenerCount('SIGTERM')).toBe(0);
  });

  it('stops listening once removed: many replays in one process add no listeners to it', async () => {
    const before = [process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')];
    for (let i = 0; i < 20; i++) {
      const spooled = await spoolStdin(['-'], Readable.from([Buffer.from('1700000000,alice\n')]));
      expect(process.listenerCount('SIGINT')).toBe((before[0] as number) + 1);
      spooled.cleanup();
    }
    expect([process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')]).toEqual(before);
  });
});
