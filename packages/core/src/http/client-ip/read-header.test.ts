import { describe, expect, it } from 'vitest';
import { readHeader } from './read-header.js';

describe('readHeader', () => {
  it.each([
    [{ 'x-api-key': 'k1' }, 'k1'],
    [{ 'x-api-key': ['k1', 'k2'] }, 'k1, k2'],
    [{ 'x-api-key': [] }, undefined],
    [{}, undefined],
    [{ 'x-api-key': undefined }, undefined],
  ])('reads %j as %j', (headers, expected) => {
    expect(readHeader(headers, 'x-api-key')).toBe(expected);
  });

  it('ignores non-string entries of a hand-built view', () => {
    const headers = { 'x-api-key': ['k1', 7 as unknown as string] };
    expect(readHeader(headers, 'x-api-key')).toBe('k1');
    expect(readHeader({ 'x-api-key': 7 as unknown as string }, 'x-api-key')).toBeUndefined();
  });
});
