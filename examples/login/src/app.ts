/**
 * @module Login protection without lockouts. Two limiters on `POST /login`:
 * - per IP (sliding window, 30 attempts per 15 minutes): one address trying many accounts gets 429s;
 * - per account (leaky bucket as a shaper): the first 4 attempts pass at once, then each further one is
 *   held 6 s longer than the last (6, 12, 18, 24 s), so guessing slows to 10 per minute; more than 8
 *   queued attempts get a 429 with a short Retry-After. An attacker can slow a victim's logins but never
 *   lock the account, and a successful login clears the account's budget.
 * Wrong password and unknown account get the same answer in about the same time.
 */
import { randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import type { Clock } from '@tollgate/core';
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
  const perIp = rateLimit({
    policies: { name: 'login-ip', algorithm: 'sliding-window', limit: 30, windowMs: 15 * 60_000 },
    clock: options.clock,
  });
  const perAccount = rateLimit({
    policies: { name: 'login-account', algorithm: 'leaky-bucket', limit: 10, windowMs: 60_000, burst: 8, delayAfter: 3 },
    key: (req: Request) => `account:${credentials(req.body)?.username}`,
    clock: options.clock,
  });
  const requireCredentials = (req: Request, res: Response, next: NextFunction) => {
    if (credentials(req.body) === undefined) res.status(400).json({ error: 'username and password are required' });
    else next();
  };

  app.post('/login', express.json(), requireCredentials, perIp, perAccount, async (req, res) => {
    const { username, password } = credentials(req.body) as Credentials;
    const expected = USERS.get(username) ?? NOBODY;
    const ok = timingSafeEqual(hash(password, SALT), expected) && USERS.has(username);
    if (!ok) {
      res.status(401).json({ error: 'invalid username or password' });
      return;
    }
    if (req.rateLimit !== undefined) await perAccount.limiter.reset(req.rateLimit.key);
    res.json({ welcome: username });
  });
  return app;
}
