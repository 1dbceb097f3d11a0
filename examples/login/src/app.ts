/**
 * @module Login protection that counts failed attempts only, per account and per IP, in one decision.
 * One middleware on `POST /login` with two policies, each on its own key, decided all-or-nothing:
 * - `login-ip` (sliding log, 30 failed attempts in any 15 minutes, keyed by IP): one address trying
 *   many accounts gets 429s. The exact algorithm: a sliding window's estimate errs both ways near the
 *   limit, which a login limit cannot afford (docs/algorithms.md); 30 entries per address is cheap;
 * - `login-account` (leaky bucket as a shaper, keyed by account): the first 4 failed attempts pass at
 *   once, each further one is held 6 s longer than the last (6, 12, 18 s), and one that would be held
 *   more than 20 s (`maxDelayMs`) gets a 429 at once with the exact Retry-After. Guessing slows to 10 a minute.
 *   No hard lockout, but the account's queue is shared: an attacker spreading guesses over many addresses
 *   can keep it full, and the owner's attempts are then held up to 20 s or refused (see the README).
 * `skipSuccessfulRequests`: every attempt is charged when it arrives (so parallel guesses cannot slip
 * through) and a successful login is given back when its response finishes: only failures count.
 * Wrong password and unknown account get the same answer in about the same time.
 */
import { randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import { type Clock, keys } from '@tollgate/core';
import { rateLimit } from '@tollgate/express';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';

interface Credentials {
  readonly username: string;
  readonly password: string;
}

function hash(password: string, salt: Buffer): Buffer {
  return scryptSync(password, salt, 32);
}

const SALT = randomBytes(16);
/** The demo's only user: alice / correct horse battery staple. */
const USERS = new Map<string, Buffer>([['alice', hash('correct horse battery staple', SALT)]]);
const NOBODY = hash(randomBytes(16).toString('hex'), SALT);

function credentials(body: unknown): Credentials | undefined {
  const b = body as Partial<Credentials> | undefined;
  if (typeof b?.username !== 'string' || typeof b.password !== 'string' || b.username.length > 200) return undefined;
  return { username: b.username.trim().toLowerCase(), password: b.password };
}

export function createApp(options: { clock?: Clock } = {}): Express {
  const app = express();
  const login = rateLimit({
    policies: [
      { name: 'login-ip', algorithm: 'sliding-log', limit: 30, windowMs: 15 * 60_000, key: keys.ip() },
      {
        name: 'login-account',
        algorithm: 'leaky-bucket',
        limit: 10,
        windowMs: 60_000,
        burst: 8,
        delayAfter: 3,
        maxDelayMs: 20_000,
        key: (req: Request) => `account:${credentials(req.body)?.username}`,
      },
    ],
    skipSuccessfulRequests: true,
    clock: options.clock,
  });
  app.locals.limiter = login.limiter;
  const requireCredentials = (req: Request, res: Response, next: NextFunction) => {
    if (credentials(req.body) === undefined) res.status(400).json({ error: 'username and password are required' });
    else next();
  };

  app.post('/login', express.json(), requireCredentials, login, async (req, res) => {
    const { username, password } = credentials(req.body) as Credentials;
    const expected = USERS.get(username) ?? NOBODY;
    const ok = timingSafeEqual(hash(password, SALT), expected) && USERS.has(username);
    if (!ok) {
      res.status(401).json({ error: 'invalid username or password' });
      return;
    }
    // A 2xx: the middleware gives this attempt's charge back when the response finishes.
    res.json({ welcome: username });
  });
  return app;
}
