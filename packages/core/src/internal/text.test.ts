import { describe, expect, it } from 'vitest';
import { isWellFormed } from './text.js';

describe('isWellFormed', () => {
  it.each([
    ['abc', true],
    ['', true],
    ['😀', true],
    ['a😀b', true],
    ['\uD83D', false],
    ['\uDE00', false],
    ['a\uDE00\uD83D', false],
    ['😀\uD83D', false],
  ])('%j -> %s', (text, expected) => {
    expect(isWellFormed(text)).toBe(expected);
  });
});
