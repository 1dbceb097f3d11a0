/**
 * @module Starts the Koa example on PORT (default 3000): `pnpm --filter @tollgate/example-koa start`.
 */
import { createApp } from './app.js';

const port = Number(process.env.PORT ?? 3000);
createApp().listen(port, '127.0.0.1', () => {
  console.log(`Koa example on http://127.0.0.1:${port} (try: curl -i http://127.0.0.1:${port}/api/hello)`);
});
