/**
 * @module Child entry of one section C server: starts the app, tells the parent its port (or why it is
 * not available), and serves until the parent disconnects or sends SIGTERM. A wire server first copies
 * a real tollgate response (its own tollgate app, started and stopped before the wire app listens).
 */
import { captureWire, type Framework, type Mode, startApp, type Variant } from './http-apps.js';
import type { WireResponse } from './wire-response.js';

export interface HttpServerInput {
  readonly framework: Framework;
  readonly variant: Variant;
  readonly mode: Mode;
}

export type HttpServerMessage =
  | { readonly type: 'listening'; readonly port: number }
  | { readonly type: 'unavailable'; readonly reason: string }
  | { readonly type: 'error'; readonly message: string };

function send(m: HttpServerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (process.send === undefined) {
      process.stdout.write(`${JSON.stringify(m)}\n`);
      resolve();
    } else {
      process.send(m, () => resolve());
    }
  });
}

async function main(): Promise<void> {
  const input = JSON.parse(process.argv[2] ?? '{}') as HttpServerInput;
  let wire: WireResponse | undefined;
  if (input.variant === 'wire') {
    const captured = await captureWire(input.framework, input.mode);
    if (!captured.ok) {
      await send({ type: 'unavailable', reason: captured.reason });
      process.exit(0);
    }
    wire = captured.value;
  }
  const app = await startApp(input.framework, input.variant, input.mode, wire);
  if (!app.ok) {
    await send({ type: 'unavailable', reason: app.reason });
    process.exit(0);
  }
  const stop = (): void => {
    app.value.close().finally(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('disconnect', stop);
  await send({ type: 'listening', port: app.value.port });
}

main().catch(async (error: unknown) => {
  await send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
});
