import { describe, expect, it } from 'vitest';
import { checkRateLimitField } from './strict-validator.js';

describe('strict validator (http-spec.md section 1.4 vectors)', () => {
  it.each([
    ['RateLimit-Policy', '"default";q=100;w=60'],
    ['RateLimit', '"default";r=99;t=60'],
    ['RateLimit-Policy', '"burst";q=10;w=1, "daily";q=1000;w=86400'],
    ['RateLimit', '"default";r=0;t=42;pk=:YzZhlaR+lA/r:'],
    ['RateLimit-Policy', '"bytes";q=65535;qu="content-bytes";w=10'],
    ['RateLimit', '"default"; r=99; t=60'],
  ] as const)('accepts %s: %s', (field, raw) => {
    expect(() => checkRateLimitField(field, raw)).not.toThrow();
  });

  it.each([
    ['RateLimit-Policy', '"default";q=100;w=0'],
    ['RateLimit-Policy', '"default";w=60'],
    ['RateLimit', '"default";t=5'],
    ['RateLimit', '"default";r=-1;t=5'],
    ['RateLimit', '"default";r=1.5;t=5'],
    ['RateLimit', '"default";r=10.0;t=5'],
    ['RateLimit', 'default;r=1;t=5'],
    ['RateLimit', '"default" ;r=1'],
    ['RateLimit', '"default";R=1'],
    ['RateLimit', 'limit=100, remaining=50, reset=5'],
    ['RateLimit-Policy', '100;w=60'],
    ['RateLimit-Policy', '"a";q=1;qu="bytes"'],
    ['RateLimit-Policy', '"a";q=1;pk="abc"'],
    ['RateLimit', '"a"b"; r=0; t=60'],
    ['RateLimit', '"a";r=1, "a";r=2'],
    ['RateLimit', ''],
  ] as const)('rejects %s: %s', (field, raw) => {
    expect(() => checkRateLimitField(field, raw)).toThrow();
  });
});
