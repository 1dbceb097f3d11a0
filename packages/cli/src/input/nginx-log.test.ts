/**
 * @module Splitting nginx combined lines, and the reason given for each kind of malformed line.
 */
import { describe, expect, it } from 'vitest';
import { createNginxLine, NGINX_FIELDS, nginxField, splitNginxLine } from './nginx-log.js';

const LINE =
  '203.0.113.7 - alice [23/Nov/2026:09:00:01 +0000] "GET /a?b=1 HTTP/1.1" 200 512 "https://x.example/" "Mozilla/5.0 (X11)" "198.51.100.2, 10.0.0.1"';

describe('nginx combined lines', () => {
  it('splits every field, and the extra quoted ones after the user agent', () => {
    const l = createNginxLine();
    expect(splitNginxLine(LINE, l)).toBeUndefined();
    expect(l.at).toBe(Date.UTC(2026, 10, 23, 9, 0, 1));
    const fields = Array.from({ length: l.count }, (_, i) => nginxField(l, i));
    expect(fields).toEqual([
      '203.0.113.7',
      'alice',
      '23/Nov/2026:09:00:01 +0000',
      'GET /a?b=1 HTTP/1.1',
      '200',
      '512',
      'https://x.example/',
      'Mozilla/5.0 (X11)',
      '198.51.100.2, 10.0.0.1',
    ]);
    expect(NGINX_FIELDS[5]).toBe('body_bytes_sent');
    expect(nginxField(l, 9)).toBeUndefined();
  });

  it('reads Apache too: the Common Log Format (no referer, no user agent), and a quote escaped as \\" inside a field', () => {
    const l = createNginxLine();
    // Before: 'missing "referer" "user agent"' on every common line, and "bad status ''" after a \".
    expect(splitNginxLine('203.0.113.7 - - [23/Nov/2026:09:00:01 +0000] "GET / HTTP/1.1" 200 5', l)).toBeUndefined();
    expect([l.count, nginxField(l, 0), nginxField(l, 5), nginxField(l, 7)]).toEqual([6, '203.0.113.7', '5', undefined]);
    const escaped = '203.0.113.7 - - [23/Nov/2026:09:00:01 +0000] "GET /q?x=\\"a\\" HTTP/1.1" 200 5 "-" "say \\"hi\\""';
    expect(splitNginxLine(escaped, l)).toBeUndefined();
    expect([nginxField(l, 3), nginxField(l, 4), nginxField(l, 7)]).toEqual(['GET /q?x=\\"a\\" HTTP/1.1', '200', 'say \\"hi\\"']);
    // An escaped backslash before the quote: the quote ends the field.
    expect(splitNginxLine('203.0.113.7 - - [23/Nov/2026:09:00:01 +0000] "GET /\\\\" 200 5 "-" "ua"', l)).toBeUndefined();
    expect(nginxField(l, 3)).toBe('GET /\\\\');
  });

  it("reads an unquoted list (nginx's $upstream_* of a request that tried several servers) as one field", () => {
    const l = createNginxLine();
    const head = '203.0.113.7 - - [23/Nov/2026:09:00:01 +0000] "GET / HTTP/1.1" 502 5 "-" "ua" "-"';
    const fields = (tail: string) => {
      expect(splitNginxLine(`${head}${tail}`, l)).toBeUndefined();
      return Array.from({ length: l.count - 9 }, (_, i) => nginxField(l, 9 + i));
    };
    expect(fields(' 10.0.0.1:80, 10.0.0.2:80 0.300, 0.200 0.5')).toEqual(['10.0.0.1:80, 10.0.0.2:80', '0.300, 0.200', '0.5']);
    expect(fields(' 0.300, 0.200 : 0.050 0.6')).toEqual(['0.300, 0.200 : 0.050', '0.6']);
    expect(fields(' 502, 200 : 404 0.6  7')).toEqual(['502, 200 : 404', '0.6', '7']);
    // A lone comma or colon at the end is the field's own text.
    expect(fields(' a, 0.6 :')).toEqual(['a, 0.6', ':']);
    expect(fields(' 0.6 "q" 1,')).toEqual(['0.6', 'q', '1,']);
  });

  it.each([
    ['', 'no client address'],
    ['garbage', 'no client address'],
    ['1.2.3.4 - - 23/Nov/2026:09:00:01 +0000 "GET / HTTP/1.1"', 'no [time]'],
    ['1.2.3.4 - - [23/Nov/2026:09:00:01 +0000] "GET / HTTP/1.1" 200 5 "-"', 'missing "referer" "user agent"'],
    ['1.2.3.4 - - [yesterday] "GET / HTTP/1.1" 200 5 "-" "-"', "bad time 'yesterday'"],
    ['1.2.3.4 - - [23/Nov/2026:09:00:01 +0000] "GET / HTTP/1.1" OK 5 "-" "-"', "bad status 'OK'"],
    ['1.2.3.4 - - [23/Nov/2026:09:00:01 +0000] "GET / HTTP/1.1" 200 5 "-" "cut', 'unterminated quoted field'],
  ])('refuses %j: %s', (line, reason) => {
    expect(splitNginxLine(line, createNginxLine())).toContain(reason);
  });
});
