/**
 * @module Every input format to { at, key, cost }: the core's ip keys (/64, trusted proxies), header and field keys, costs, malformed lines.
 */
import { keys } from '@tollgate/core';
import { createDiagnostics } from '@tollgate/core/adapter';
import { describe, expect, it } from 'vitest';
import { CliError } from '../cli-error.js';
import { createKeyer, parseKeySpec } from './request-key.js';
import { createLineParser, detectFormat, type LineParser, type ParserOptions } from './request-parser.js';

const T = Date.UTC(2026, 10, 23, 9, 0, 1);
const warnings: string[] = [];
const logger = { warn: (_f: unknown, m?: string) => void warnings.push(m ?? ''), error() {} };

function parser(options: Partial<ParserOptions> & Pick<ParserOptions, 'format'>, trustedProxies?: string[]): LineParser {
  return createLineParser({
    key: undefined,
    costField: undefined,
    nginxExtraFields: ['http_x_forwarded_for', 'http_x_api_key'],
    timeField: undefined,
    keyer: createKeyer({ logger, ...(trustedProxies === undefined ? {} : { ip: { trustedProxies } }) }),
    ...options,
  });
}

function nginx(address: string, xff = '-', apiKey = '-', bytes = '512'): string {
  return `${address} - - [23/Nov/2026:09:00:01 +0000] "GET / HTTP/1.1" 200 ${bytes} "-" "curl/8" "${xff}" "${apiKey}"`;
}

describe('nginx input', () => {
  it('keys by client address with the core ip rules: IPv6 by /64, IPv4-mapped as IPv4', () => {
    const p = parser({ format: 'nginx' });
    expect(p(nginx('203.0.113.7'), 1)).toEqual({ at: T, key: 'ip:203.0.113.7', cost: 1 });
    expect(p(nginx('2001:db8:1:2:aaaa::1'), 1)).toEqual({ at: T, key: 'ip:2001:db8:1:2::/64', cost: 1 });
    expect(p(nginx('2001:db8:1:2:bbbb::9'), 1)).toEqual({ at: T, key: 'ip:2001:db8:1:2::/64', cost: 1 });
    expect(p(nginx('::ffff:198.51.100.4'), 1)).toEqual({ at: T, key: 'ip:198.51.100.4', cost: 1 });
    expect(p(nginx('not-an-ip'), 1)).toBe('no key (bad client address)');
  });

  it('takes the arrival from $msec and $request_time when the format logs them, quoted or not: nginx stamps a line at its end', () => {
    const line = (tail: string) => `203.0.113.7 - - [23/Nov/2026:09:00:01 +0000] "GET / HTTP/1.1" 200 512 "-" "curl/8" "-"${tail}`;
    const at = (fields: string[], tail: string) => parser({ format: 'nginx', nginxExtraFields: fields })(line(tail), 1);
    // Before: every line at $time_local, a whole second and the request's end; unquoted fields not read at all.
    // Without $msec the arrival is the whole second $time_local less the duration falls in: the log has no finer time.
    expect(at(['http_x_forwarded_for', 'request_time'], ' 0.250')).toMatchObject({ at: T - 1000 });
    expect(at(['http_x_forwarded_for', 'request_time'], ' 0.000')).toMatchObject({ at: T });
    expect(at(['http_x_forwarded_for', 'msec'], ' 1795424401.734')).toMatchObject({ at: T + 734 });
    expect(at(['http_x_forwarded_for', 'request_time', 'msec'], ' 2.005 1795424401.734')).toMatchObject({ at: T + 734 - 2005 });
    expect(at(['http_x_forwarded_for', 'msec', 'request_time'], ' "1795424401.734" "0.734"')).toMatchObject({ at: T });
    expect(at(['http_x_forwarded_for', 'request_time'], ' -')).toBe("bad request_time '-'");
    expect(at(['http_x_forwarded_for', 'msec'], '')).toBe("bad msec ''");
    // Unquoted fields between quoted ones keep their names' order.
    expect(at(['http_x_forwarded_for', 'request_time', 'http_x_api_key'], ' 0.5 "k-1"')).toMatchObject({ at: T - 1000 });
    // Outside 1970 to 2248, as every other time: unreadable, never a crash or a date in 1969.
    expect(at(['http_x_forwarded_for', 'msec', 'request_time'], ' 1795424401.734 1795424402.000')).toMatch(/out of range/);
    // A $msec in another second than $time_local is not $msec: a field named wrongly, or shifted by one
    // (before: 1.000 read as 1970, and the replay's span was 56 years).
    expect(at(['http_x_forwarded_for', 'msec'], ' 99999999999999.000')).toMatch(/msec '99999999999999.000' is not the time of \[23\/Nov/);
    expect(at(['http_x_forwarded_for', 'msec', 'request_time'], ' 1.000 5.000')).toMatch(/msec '1.000' is not the time of/);
    expect(at(['http_x_forwarded_for', 'msec'], ' 1795424399.999')).toMatch(/is not the time of/);
    expect(at(['http_x_forwarded_for', 'msec'], ' 1795424400.000')).toMatchObject({ at: T - 1000 });
    expect(at(['http_x_forwarded_for', 'msec'], ' 1795424402.999')).toMatchObject({ at: T + 1999 });
    expect(at(['http_x_forwarded_for', 'msec'], ' 1795424403.000')).toMatch(/is not the time of/);
    // nginx logs the $upstream_* of a request that tried several servers as a list (`, ` between servers,
    // ` : ` across an internal redirect): one field (before: three, and $request_time and $msec shifted).
    const upstream = ['http_x_forwarded_for', 'upstream_response_time', 'request_time', 'msec'];
    expect(at(upstream, ' 0.300, 0.200 0.550 1795424401.734')).toMatchObject({ at: T + 734 - 550 });
    expect(at(upstream, ' 0.300, 0.200 : 0.050 0.600 1795424401.734')).toMatchObject({ at: T + 734 - 600 });
    expect(at(upstream, ' - 0.550 1795424401.734')).toMatchObject({ at: T + 734 - 550 });
    // Unquoted fields only when asked for: a format adding $upstream_addr is not read as X-Forwarded-For.
    const quotedOnly = parser({ format: 'nginx', nginxExtraFields: ['http_x_forwarded_for'], nginxUnquoted: false }, ['10.0.0.0/8']);
    expect(quotedOnly(`10.0.0.5 - - [23/Nov/2026:09:00:01 +0000] "GET / HTTP/1.1" 200 512 "-" "curl/8" 192.0.2.50 0.1`, 1)).toMatchObject({
      key: 'ip:10.0.0.5',
    });
    const byKey = parser({
      format: 'nginx',
      nginxExtraFields: ['http_x_forwarded_for', 'request_time', 'http_x_api_key'],
      key: parseKeySpec('field:http_x_api_key'),
    });
    expect(byKey(line(' 0.5 "k-1"'), 1)).toMatchObject({ key: 'k-1' });
  });

  it("keys a client logged by host name (Apache's %h with HostnameLookups On) by the name, and says so once", () => {
    const said: string[] = [];
    const p = createLineParser({
      format: 'nginx',
      key: undefined,
      costField: undefined,
      nginxExtraFields: ['http_x_forwarded_for'],
      timeField: undefined,
      keyer: createKeyer({ logger: { warn: (_f: unknown, m?: string) => void said.push(m ?? ''), error() {} } }),
    });
    // Before: 'no key (bad client address)', half of a NASA-style log dropped with an adapter's warning.
    expect(p(nginx('unicomp6.unicomp.net'), 1)).toMatchObject({ key: 'host:unicomp6.unicomp.net' });
    expect(p(nginx('Burger.Letters.COM', '198.51.100.9'), 1)).toMatchObject({ key: 'host:burger.letters.com' });
    expect(p(nginx('d104.aa.net'), 1)).toMatchObject({ key: 'host:d104.aa.net' });
    expect(said).toEqual([expect.stringMatching(/^some lines name their client by host name.*HostnameLookups/)]);
    // Neither an IP address nor a name with a dot and a lettered last label: no key, in the CLI's words.
    for (const bad of ['not-an-ip', '1.2.3.999', 'a..b.com', '-x.example.com', 'x_y.example.com']) {
      expect(p(nginx(bad), 1)).toBe('no key (bad client address)');
    }
    expect(said[1]).toMatch(/^WRN_RL_INVALID_REMOTE_ADDRESS: a logged client address is neither .* --key field:remote_addr/);
    expect(said.join('\n')).not.toMatch(/adapter|keys\.ip\(/);
  });

  it("gives keys.ip()'s warnings in the CLI's words: --trusted-proxy, not trustedProxies", () => {
    const said: string[] = [];
    const keyer = createKeyer({
      logger: { warn: (_f: unknown, m?: string) => void said.push(m ?? ''), error() {} },
      ip: { trustedProxies: ['0.0.0.0/1', '10.0.0.0/8'] },
    });
    expect(keyer.fromAddress('10.0.0.5', 'unknown')).toBe('ip:10.0.0.5');
    expect(said).toEqual([
      expect.stringMatching(
        /^WRN_RL_PERMISSIVE_TRUSTED_PROXIES: --trusted-proxy names '0\.0\.0\.0\/1'.*proxies in front of the server that wrote the log/,
      ),
      expect.stringMatching(/^WRN_RL_MALFORMED_FORWARDED_HEADER: .*If the proxies in --trusted-proxy wrote such entries/),
    ]);
    expect(said.join('\n')).not.toMatch(/keys\.ip\(|your proxies/);
  });

  it('reads a logged X-Forwarded-For only from a trusted proxy', () => {
    const untrusted = parser({ format: 'nginx' });
    expect(untrusted(nginx('10.0.0.5', '198.51.100.9'), 1)).toMatchObject({ key: 'ip:10.0.0.5' });
    // In the CLI's words: the option it has is --trusted-proxy (before: keys.ip({ trustedProxies }) and validate).
    const warned = warnings.find((w) => w.startsWith('WRN_RL_UNTRUSTED_FORWARDED_HEADER'));
    expect(warned).toContain('--trusted-proxy');
    expect(warned).not.toContain('trustedProxies');
    const trusted = parser({ format: 'nginx' }, ['10.0.0.0/8']);
    expect(trusted(nginx('10.0.0.5', '198.51.100.9'), 1)).toMatchObject({ key: 'ip:198.51.100.9' });
    // A client can prepend anything; the rightmost untrusted hop is the client.
    expect(trusted(nginx('10.0.0.5', '6.6.6.6, 198.51.100.9, 10.0.0.7'), 1)).toMatchObject({ key: 'ip:198.51.100.9' });
  });

  it('keys by a logged header (hashed like keys.header) or a field, and takes the cost from a field', () => {
    const byHeader = parser({ format: 'nginx', key: parseKeySpec('header:X-Api-Key') });
    const a = byHeader(nginx('1.2.3.4', '-', 'secret-1'), 1);
    const b = byHeader(nginx('5.6.7.8', '-', 'secret-1'), 1);
    expect(a).toMatchObject({ key: expect.stringMatching(/^apikey:[\w-]{43}$/) });
    expect(a).toEqual(b);
    expect(byHeader(nginx('1.2.3.4'), 3)).toBe('no key (no http_x_api_key)');
    const byField = parser({ format: 'nginx', key: parseKeySpec('field:http_user_agent'), costField: 'body_bytes_sent' });
    expect(byField(nginx('1.2.3.4', '-', '-', '2048'), 1)).toEqual({ at: T, key: 'curl/8', cost: 2048 });
    expect(byField(nginx('1.2.3.4', '-', '-', '0'), 1)).toBe("bad cost '0' (must be a positive multiple of 1/1000)");
    // An empty variable (`-`): no cost logged, so 1, as without --cost.
    expect(byField(nginx('1.2.3.4', '-', '-', '-'), 1)).toEqual({ at: T, key: 'curl/8', cost: 1 });
  });

  it('refuses at setup a key or cost field the log format lacks', () => {
    expect(() => parser({ format: 'nginx', key: parseKeySpec('header:authorization') })).toThrow(CliError);
    expect(() => parser({ format: 'nginx', costField: 'bytes' })).toThrow(/--nginx-fields/);
  });
});

describe('JSON lines input', () => {
  const p = parser({ format: 'jsonl' });

  it('reads time (epoch s, ms or ISO), address, X-Forwarded-For, key and cost fields', () => {
    expect(p('{"time":"2026-11-23T09:00:01Z","remote_addr":"203.0.113.7"}', 1)).toEqual({ at: T, key: 'ip:203.0.113.7', cost: 1 });
    expect(p(`{"ts":${T / 1000},"ip":"2001:db8::1","cost":2.5}`, 1)).toEqual({ at: T, key: 'ip:2001:db8::/64', cost: 2.5 });
    expect(p(`{"timestamp":${T},"key":"user:42"}`, 1)).toEqual({ at: T, key: 'user:42', cost: 1 });
    // A numeric id, as application loggers write one (it was 'no key', the line malformed).
    expect(p(`{"timestamp":${T},"key":42}`, 1)).toEqual({ at: T, key: '42', cost: 1 });
    const trusted = parser({ format: 'jsonl' }, ['loopback']);
    expect(trusted(`{"time":${T},"remote_addr":"127.0.0.1","headers":{"x-forwarded-for":"198.51.100.1"}}`, 1)).toMatchObject({
      key: 'ip:198.51.100.1',
    });
    // Header names are case-insensitive however they were logged.
    expect(trusted(`{"time":${T},"remote_addr":"127.0.0.1","headers":{"X-Forwarded-For":"198.51.100.2"}}`, 1)).toMatchObject({
      key: 'ip:198.51.100.2',
    });
    const byHeader = parser({ format: 'jsonl', key: parseKeySpec('header:X-Api-Key') });
    const upper = byHeader(`{"time":${T},"headers":{"X-API-KEY":"k1"}}`, 1);
    const lower = byHeader(`{"time":${T},"headers":{"x-api-key":"k1"}}`, 1);
    expect(upper).toMatchObject({ at: T, cost: 1 });
    expect(upper).toEqual(lower);
    expect(byHeader(`{"time":${T},"headers":{"x-api-key":"k2"}}`, 1)).not.toEqual(lower);
    const byField = parser({ format: 'jsonl', key: parseKeySpec('field:user'), costField: 'weight', timeField: 'when' });
    expect(byField(`{"when":${T},"user":"u1","weight":3}`, 1)).toEqual({ at: T, key: 'u1', cost: 3 });
    // A line without the named field costs 1, as without --cost; naming the default field changes nothing.
    expect(byField(`{"when":${T},"user":"u1"}`, 1)).toEqual({ at: T, key: 'u1', cost: 1 });
    expect(byField(`{"when":${T},"user":"u1","weight":null}`, 1)).toEqual({ at: T, key: 'u1', cost: 1 });
    const named = parser({ format: 'jsonl', costField: 'cost' });
    const plain = parser({ format: 'jsonl' });
    for (const line of [`{"time":${T},"key":"k","cost":2}`, `{"time":${T},"key":"k"}`]) expect(named(line, 1)).toEqual(plain(line, 1));
  });

  it.each([
    ['{"time":1', 'not JSON'],
    ['[1,2]', 'not a JSON object'],
    ['{"remote_addr":"1.2.3.4"}', 'no time field'],
    ['{"time":"soon","remote_addr":"1.2.3.4"}', 'bad time "soon"'],
    [`{"time":${T}}`, 'no key'],
    [`{"time":${T},"key":"k","cost":-1}`, 'bad cost -1 (must be a positive multiple of 1/1000)'],
  ])('refuses %j', (line, reason) => {
    expect(p(line, 1)).toBe(reason);
  });

  it('skips blank lines', () => {
    expect(p('   ', 1)).toBeUndefined();
  });
});

describe('CSV input', () => {
  const p = parser({ format: 'csv' });

  it('reads time,key[,cost], skipping a header on line 1', () => {
    expect(p('time,key,cost', 1)).toBeUndefined();
    expect(p(`${T},tenant-7`, 2)).toEqual({ at: T, key: 'tenant-7', cost: 1 });
    expect(p('2026-11-23T09:00:01Z, tenant-7 ,4', 3)).toEqual({ at: T, key: 'tenant-7', cost: 4 });
    expect(parser({ format: 'csv', key: parseKeySpec('ip') })(`${T},2001:db8::5`, 1)).toMatchObject({ key: 'ip:2001:db8::/64' });
  });

  it('takes an empty cost column for no cost: 1, as without the column (before: "bad cost \'\'")', () => {
    expect(p(`${T},alice,`, 2)).toEqual({ at: T, key: 'alice', cost: 1 });
    expect(p(`${T},alice, `, 2)).toEqual({ at: T, key: 'alice', cost: 1 });
    expect(p(`"${T}","alice",""`, 2)).toEqual({ at: T, key: 'alice', cost: 1 });
  });

  it.each([
    ['just-one-cell', 'expected time,key[,cost]'],
    ['x,k', "bad time 'x'"],
    [`${T},`, 'empty key'],
    [`${T},k,zero`, "bad cost 'zero' (must be a positive multiple of 1/1000)"],
    [`${T},k,0.0001`, "bad cost '0.0001' (must be a positive multiple of 1/1000)"],
    [`${T},k,1,extra`, 'expected time,key[,cost]'],
  ])('refuses %j', (line, reason) => {
    expect(p(line, 2)).toBe(reason);
  });
});

describe('JSON access logs as loggers write them', () => {
  it('finds the client in nested fields (pino-http, Caddy, Google Cloud) and drops a port; --key, --time-field and --cost take dotted paths', () => {
    const p = parser({ format: 'jsonl' });
    const at = '2026-11-23T09:00:01Z';
    // Before: "no key" on every line of these shapes.
    expect(p(JSON.stringify({ time: T, req: { remoteAddress: '203.0.113.9', headers: {} } }), 1)).toMatchObject({ key: 'ip:203.0.113.9' });
    expect(p(JSON.stringify({ ts: T / 1000, request: { client_ip: '2001:db8:1:2::7' } }), 1)).toMatchObject({
      key: 'ip:2001:db8:1:2::/64',
    });
    expect(p(JSON.stringify({ timestamp: at, httpRequest: { remoteIp: '198.51.100.4' } }), 1)).toMatchObject({
      at: T,
      key: 'ip:198.51.100.4',
    });
    expect(p(JSON.stringify({ time: T, remote_addr: '203.0.113.9:443' }), 1)).toMatchObject({ key: 'ip:203.0.113.9' });
    expect(p(JSON.stringify({ time: T, remote_addr: '[2001:db8::1]:443' }), 1)).toMatchObject({ key: 'ip:2001:db8::/64' });
    const trusted = parser({ format: 'jsonl' }, ['10.0.0.0/8']);
    expect(
      trusted(JSON.stringify({ time: T, req: { remoteAddress: '10.0.0.5', headers: { 'x-forwarded-for': '198.51.100.9' } } }), 1),
    ).toMatchObject({
      key: 'ip:198.51.100.9',
    });
    const nested = parser({ format: 'jsonl', key: parseKeySpec('field:user.id'), timeField: 'http.start', costField: 'usage.units' });
    expect(nested(JSON.stringify({ http: { start: at }, user: { id: 'u-7' }, usage: { units: 3 } }), 1)).toEqual({
      at: T,
      key: 'u-7',
      cost: 3,
    });
    expect(nested(JSON.stringify({ http: { start: at }, user: 'u-7' }), 1)).toBe('no key');
  });
});

describe('logged headers where loggers put them, as the adapters read them', () => {
  const line = (fields: Record<string, unknown>) => JSON.stringify({ time: T, ...fields });

  it('reads --key header: from headers, pino-http req.headers, Caddy request.headers and nginx-style fields, arrays joined', () => {
    const byHeader = parser({ format: 'jsonl', key: parseKeySpec('header:x-api-key') });
    const flat = byHeader(line({ headers: { 'x-api-key': 'k-1' } }), 1);
    expect(flat).toMatchObject({ at: T, cost: 1 });
    // Before: 'no key' for every line of pino-http and Caddy, and for a value logged as an array.
    expect(byHeader(line({ req: { headers: { 'x-api-key': 'k-1' } } }), 1)).toEqual(flat);
    expect(byHeader(line({ request: { headers: { 'X-Api-Key': ['k-1'] } } }), 1)).toEqual(flat);
    expect(byHeader(line({ headers: { 'X-Api-Key': ['k-1'] } }), 1)).toEqual(flat);
    expect(byHeader(line({ http_x_api_key: 'k-1' }), 1)).toEqual(flat);
    // Repeated lines are one value, joined with ", " as HTTP (and the core's readHeader) joins them.
    expect(byHeader(line({ headers: { 'x-api-key': ['k-1', 'k-2'] } }), 1)).toEqual(
      byHeader(line({ headers: { 'x-api-key': 'k-1, k-2' } }), 1),
    );
    expect(byHeader(line({ headers: { 'x-api-key': [] } }), 1)).toBe('no key');
  });

  it('reads an X-Forwarded-For logged as an array as keys.ip() does: the client, not the proxy', () => {
    const trusted = parser({ format: 'jsonl' }, ['private']);
    const xff = ['203.0.113.9', '10.0.0.3'];
    const core = keys.ip({ trustedProxies: ['private'] })(undefined, {
      remoteAddress: '10.0.0.1',
      headers: { 'x-forwarded-for': xff },
      method: 'GET',
      url: '/',
      request: undefined,
      diagnostics: createDiagnostics(logger),
    });
    expect(core).toBe('ip:203.0.113.9');
    // Before: 'ip:10.0.0.1', the proxy, for every array below.
    expect(trusted(line({ remote_addr: '10.0.0.1', headers: { 'x-forwarded-for': xff } }), 1)).toMatchObject({ key: core });
    expect(trusted(line({ req: { remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': xff } } }), 1)).toMatchObject({ key: core });
    expect(trusted(line({ request: { remote_ip: '10.0.0.1', headers: { 'X-Forwarded-For': xff } } }), 1)).toMatchObject({ key: core });
    expect(trusted(line({ remote_addr: '10.0.0.1', x_forwarded_for: '203.0.113.9, 10.0.0.3' }), 1)).toMatchObject({ key: core });
    expect(trusted(line({ remote_addr: '10.0.0.1', http_x_forwarded_for: '203.0.113.9, 10.0.0.3' }), 1)).toMatchObject({ key: core });
  });
});

describe('CSV with quoted fields', () => {
  it('reads RFC 4180 quotes, so a time with a comma before its fraction (Python logging) fits a column', () => {
    const p = parser({ format: 'csv' });
    // Before: every such line malformed ("bad cost 'alice'" unquoted, and nothing read when quoted).
    expect(p('"2026-11-23 09:00:01,250","alice"', 2)).toEqual({ at: T + 250, key: 'alice', cost: 1 });
    expect(p('"2026-11-23T09:00:01Z", "a ""quoted"" key" , 2', 2)).toEqual({ at: T, key: 'a "quoted" key', cost: 2 });
    expect(p('"time","key"', 1)).toBeUndefined();
    expect(p('"2026-11-23T09:00:01Z","cut', 2)).toBe('unterminated quoted field');
    expect(p('"2026-11-23T09:00:01Z"x,k', 2)).toBe('text after a quoted field');
    expect(p('"2026-11-23T09:00:01Z",k,1,2', 2)).toBe('expected time,key[,cost]');
    // Unquoted, a comma before the fraction cannot be told from the next column.
    expect(p('2026-11-23 09:00:01,250,alice', 2)).toBe("bad cost 'alice' (must be a positive multiple of 1/1000)");
  });
});

describe('format detection', () => {
  it.each([
    ['a.csv.gz', '', 'csv'],
    ['a.ndjson', '', 'jsonl'],
    ['access.log.gz', '', 'nginx'],
    ['access.log', '1.2.3.4 - - [', 'nginx'],
    // pino writes app.log: before, read as nginx and every line malformed (exit 2).
    ['app.log', '{"level":30,"time":1700000000000,"key":"k"}', 'jsonl'],
    ['dump', '{"time":1}', 'jsonl'],
    ['dump', '1700000000,k', 'csv'],
    ['dump', '"2026-11-23 09:00:01,250","alice"', 'csv'],
    ['dump', '1.2.3.4 - - [', 'nginx'],
  ])('%s starting %j is %s', (path, first, format) => {
    expect(detectFormat(path, first)).toBe(format);
  });

  it('goes by most of the first lines, not the first alone: a stream cut mid-line, a blank first line', () => {
    const json = Array.from({ length: 24 }, (_, i) => `{"time":${1_700_000_000 + i},"key":"k"}`);
    // `tail -c` of JSON lines: the first line is the end of one, and looks like CSV.
    expect(detectFormat('-', ['607,"remote_addr":"2001:db8::1"}', ...json])).toBe('jsonl');
    expect(detectFormat('-', ['', '  ', ...json])).toBe('jsonl');
    expect(detectFormat('dump', ['1.2.3.4 - - [', '1700000000,k', '1700000001,k'])).toBe('csv');
    expect(detectFormat('dump', [])).toBe('nginx');
  });
});
