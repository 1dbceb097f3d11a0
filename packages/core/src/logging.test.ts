import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogGate, formatLine, isAbstractNoopLogger, type LogFields } from './logging.js';

function recorder() {
  const lines: [LogFields, string][] = [];
  return { lines, warn: (f: LogFields, m: string) => lines.push([f, m]), error: (f: LogFields, m: string) => lines.push([f, m]) };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('createLogGate', () => {
  it('writes at most `lines` per interval, then one summary with the count, from a timer', async () => {
    vi.useFakeTimers();
    const target = recorder();
    const gate = createLogGate({ lines: 2, intervalMs: 1000 }, target);
    const logger = gate.wrap(target);
    for (let i = 0; i < 7; i++) logger.warn({ code: 'X', i }, 'X: line');
    expect(target.lines).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1000);
    expect(target.lines).toHaveLength(3);
    expect(target.lines[2]?.[0]).toEqual({ code: 'WRN_RL_LOG_SUPPRESSED', suppressed: 5, intervalMs: 1000 });
    logger.error({ code: 'Y' }, 'Y: next interval');
    expect(target.lines).toHaveLength(4);
    expect(gate.suppressed).toBe(5);
  });

  it('never lets a broken logger throw', () => {
    const gate = createLogGate({ lines: 1, intervalMs: 1000 }, recorder());
    const logger = gate.wrap({
      warn: () => {
        throw new Error('broken');
      },
      error: () => undefined,
    });
    expect(() => logger.warn({}, 'x')).not.toThrow();
    gate.close();
  });
});

describe('isAbstractNoopLogger', () => {
  it("recognises Fastify's default logger, not pino at level silent", () => {
    const noop = () => undefined;
    expect(isAbstractNoopLogger(Object.create({ warn: noop, error: noop, info: noop }))).toBe(true);
    expect(isAbstractNoopLogger({ warn: noop, error: noop, level: 'silent' })).toBe(false);
    expect(isAbstractNoopLogger({ warn: () => undefined, error: () => undefined })).toBe(false);
    expect(isAbstractNoopLogger(undefined)).toBe(false);
  });
});

describe('formatLine', () => {
  it('keeps a line one line and inert: C1 controls, separators and bidi overrides a header carried are escaped, as C0 are', () => {
    const line = formatLine({ code: 'X', key: 'a\u0085b\u2028c\u202ed\u001b[2Je\n' }, 'X: from \u009b31m a plan name');
    expect(line).toBe('X: from \\u009b31m a plan name {"code":"X","key":"a\\u0085b\\u2028c\\u202ed\\u001b[2Je\\n"}');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: what must not be there.
    expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202e]/);
    // Still JSON: the fields parse back to what was logged.
    expect(JSON.parse(line.slice(line.indexOf('{')))).toEqual({ code: 'X', key: 'a\u0085b\u2028c\u202ed\u001b[2Je\n' });
  });
});
