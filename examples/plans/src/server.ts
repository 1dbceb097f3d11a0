/**
 * @module Starts the plans example on PORT (default 3000): `npx -y pnpm@12.4.2 --filter @tollgate/example-plans start`.
 */
import { createApp } from './app.js';

const port = Number(process.env.PORT ?? 3000);
createApp().app.listen(port, '127.0.0.1', () => {
  console.log(`Plans example on http://127.0.0.1:${port}: GET /api/widgets and /quota with x-api-key: free-key-1 | pro-key-1 | acme-key-1`);
});
