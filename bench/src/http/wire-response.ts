/**
 * @module What section C's "wire" variant repeats: the status, rate-limit header fields and body of a
 * real tollgate response, read once from a running adapter, and the check that a wire server sends the
 * same thing as tollgate's. A wire server answers every request with these statically, so the ratio of
 * tollgate to wire is the limiter's own cost, apart from the cost of the bytes it puts on the wire.
 */
import { request } from 'node:http';

/** The header fields tollgate's adapter may send (lower case). */
export const WIRE_FIELDS: readonly string[] = ['ratelimit-policy', 'ratelimit', 'retry-after', 'cache-control', 'content-type'];

/** One response as it arrived: status, raw header lines (names as sent) and the body. */
export interface RawResponse {
  readonly status: number;
  /** [name as sent, value] in the order sent. */
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string;
}

/** What the wire variant sends, captured from tollgate's response in one mode. */
export interface WireResponse {
  readonly status: number;
  /** The fields of `WIRE_FIELDS` the limiter set, [name as sent, value], in the order sent. */
  readonly headers: readonly (readonly [string, string])[];
  /**
   * The limiter's own body when it answered (a 429); undefined when it let the request through, and the
   * route answered as the bare server does (its own body and Content-Type).
   */
  readonly body: string | undefined;
}

/** One GET of `http://127.0.0.1:<port>/` on a new connection. */
export function getOnce(port: number): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', method: 'GET', agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const headers: [string, string][] = [];
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.push([res.rawHeaders[i] as string, res.rawHeaders[i + 1] as string]);
        resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** Two requests, the second's response: in block mode the first one spends the limit of 1. */
export async function secondResponse(port: number): Promise<RawResponse> {
  await getOnce(port);
  return getOnce(port);
}

/** The wire variant's response, from a response of tollgate's adapter. */
export function wireResponseOf(r: RawResponse): WireResponse {
  const answeredByLimiter = r.status < 200 || r.status > 299;
  const headers = r.headers.filter(([name]) => {
    const lower = name.toLowerCase();
    return WIRE_FIELDS.includes(lower) && (answeredByLimiter || lower !== 'content-type');
  });
  return { status: r.status, headers, body: answeredByLimiter ? r.body : undefined };
}

/**
 * The fields a wire server must send as tollgate does: status, the header lines of `WIRE_FIELDS` and
 * Content-Length (names as sent, in order; digits masked, since `RateLimit` and `Retry-After` count
 * down), and the body.
 */
function signature(r: RawResponse): string {
  const fields = r.headers
    .filter(([name]) => WIRE_FIELDS.includes(name.toLowerCase()) || name.toLowerCase() === 'content-length')
    .map(([name, value]) => `${name}: ${value.replace(/\d+/g, '#')}`);
  return [String(r.status), ...fields, r.body].join('\n');
}

/** undefined when `wire` sends what `tollgate` sends (see `signature`), else what differs. */
export function wireMismatch(tollgate: RawResponse, wire: RawResponse): string | undefined {
  const t = signature(tollgate).split('\n');
  const w = signature(wire).split('\n');
  const differing: string[] = [];
  for (let i = 0; i < Math.max(t.length, w.length); i++) {
    if (t[i] !== w[i]) differing.push(`tollgate '${t[i] ?? '(none)'}' vs wire '${w[i] ?? '(none)'}'`);
  }
  return differing.length === 0 ? undefined : `the wire server does not send what tollgate sends: ${differing.slice(0, 3).join('; ')}`;
}
