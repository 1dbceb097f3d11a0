/**
 * @module Starts the Fastify example on PORT (default 3000): `pnpm --filter @tollgate/example-fastify start`.
 */
import { createApp } from './app.js';

const port = Number(process.env.PORT ?? 3000);
const app = await createApp({ logger: true });
await app.listen({ port, host: '127.0.0.1' });
