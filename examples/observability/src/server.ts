/**
 * @module `pnpm --filter @tollgate/example-observability start`: serves the app on 127.0.0.1:PORT
 * (default 9464), prints where to scrape, and drives synthetic load at it for DURATION seconds
 * (default 300, at most 600) at RATE requests per second (default 200), then keeps serving until Ctrl-C.
 */
import type { AddressInfo } from 'node:net';
import { createObservedApp } from './app.js';
import { boundedLoad, runLoad } from './load.js';

const port = Number(process.env.PORT ?? 9464);
// Within the load's bounds (1,000 req/s, 10 minutes), as it runs, so the line below says what it does.
const { rate, durationMs } = boundedLoad(Number(process.env.RATE ?? 200), Number(process.env.DURATION ?? 300) * 1000);

const observed = createObservedApp();
const server = observed.app.listen(port, '127.0.0.1', () => {
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  console.log(`tollgate observability example on ${base}`);
  console.log(`  scrape:    ${base}/metrics   (Prometheus job target 127.0.0.1:${(server.address() as AddressInfo).port})`);
  console.log(`  hot keys:  ${base}/admin/hot-keys?n=5`);
  console.log(`  shadow:    ${base}/admin/shadow`);
  console.log('  dashboard: import examples/observability/dashboard/tollgate.json into Grafana');
  console.log(`synthetic load: ${rate} req/s for ${durationMs / 1000} s on loopback`);
  runLoad({ url: base, durationMs, rate }).then(
    (summary) =>
      console.log(`load done: ${summary.sent} requests, by status ${JSON.stringify(summary.byStatus)}; still serving, Ctrl-C to stop`),
    (error: unknown) => console.error('load failed', error),
  );
});

process.on('SIGINT', () => {
  server.close();
  void observed.close().then(() => process.exit(0));
});
