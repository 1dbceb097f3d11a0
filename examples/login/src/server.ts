/**
 * @module Starts the login example on PORT (default 3000): `pnpm --filter @tollgate/example-login start`.
 */
import { createApp } from './app.js';

const port = Number(process.env.PORT ?? 3000);
createApp().listen(port, '127.0.0.1', () => {
  console.log(`Login example on http://127.0.0.1:${port} (POST /login {"username":"alice","password":"..."})`);
});
