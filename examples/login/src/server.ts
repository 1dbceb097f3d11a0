/**
 * @module Starts the login example on PORT (default 3000): `pnpm --filter @tollgate/example-login start`.
 */
import { createApp } from './app.js';

const port = Number(process.env.PORT ?? 3000);
createApp().listen(port, () => {
  console.log(`Login example on http://localhost:${port} (POST /login {"username":"alice","password":"..."})`);
});
