/**
 * @module Starts the Express example on PORT (default 3000): `pnpm --filter @tollgate/example-express start`.
 */
import { createApp } from './app.js';

const port = Number(process.env.PORT ?? 3000);
createApp().listen(port, () => {
  console.log(`Express example on http://localhost:${port} (try: curl -i http://localhost:${port}/api/hello)`);
});
