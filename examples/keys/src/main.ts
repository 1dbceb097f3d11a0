/**
 * @module Prints the rate-limit key of sample requests behind a load balancer in 10.0.0.0/8, or of your
 * own: `pnpm start -- --remote 10.0.0.1 --xff '203.0.113.7, 10.0.0.2' --trust private`.
 */
import { parseArgs } from 'node:util';
import { keys } from '@tollgate/core';
import { explainKey, type RequestDescription } from './explain-key.js';

// `pnpm start -- --remote ...` passes the `--` through; drop it.
const argv = process.argv.slice(2);
if (argv[0] === '--') argv.shift();
const { values } = parseArgs({
  args: argv,
  options: {
    remote: { type: 'string' },
    xff: { type: 'string' },
    forwarded: { type: 'string' },
    trust: { type: 'string', multiple: true },
  },
});

const samples: [string, RequestDescription][] = [
  ['direct client', { remoteAddress: '198.51.100.20' }],
  ['direct client spoofing X-Forwarded-For', { remoteAddress: '198.51.100.20', headers: { 'x-forwarded-for': '1.2.3.4' } }],
  ['through the load balancer', { remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': '203.0.113.7' } }],
  ['through it, with a client-written entry', { remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': '1.2.3.4, 203.0.113.7' } }],
  ['IPv6 client (grouped per /64)', { remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': '2001:db8:1:2:aaaa::99' } }],
  ['dual-stack socket, IPv4 client', { remoteAddress: '::ffff:198.51.100.20' }],
  ['garbage next to the balancer', { remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': '203.0.113.7, not-an-ip' } }],
  ['API client', { remoteAddress: '10.0.0.1', headers: { 'x-api-key': 'sk_live_123', 'x-forwarded-for': '203.0.113.7' } }],
  ['signed-in user', { remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': '203.0.113.7' }, user: { id: 42 } }],
];

const custom = values.remote !== undefined || values.xff !== undefined || values.forwarded !== undefined;
const ip = keys.ip({
  trustedProxies: values.trust ?? ['loopback', '10.0.0.0/8'],
  header: values.forwarded !== undefined ? 'forwarded' : 'x-forwarded-for',
});
const key = keys.first<RequestDescription>(
  keys.user((request: RequestDescription) => request.user?.id),
  keys.header('x-api-key'),
  ip,
);

const requests: [string, RequestDescription][] = custom
  ? [
      [
        'your request',
        {
          remoteAddress: values.remote,
          headers: {
            ...(values.xff === undefined ? {} : { 'x-forwarded-for': values.xff }),
            ...(values.forwarded === undefined ? {} : { forwarded: values.forwarded }),
          },
        },
      ],
    ]
  : samples;

for (const [label, request] of requests) {
  const { key: result, warnings } = await explainKey(key, request);
  console.log(`${label.padEnd(42)} ${result ?? '(no key)'}`);
  for (const warning of warnings) console.log(`${''.padEnd(42)} ! ${warning.slice(0, warning.indexOf(':'))}`);
}
