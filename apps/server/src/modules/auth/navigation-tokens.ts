import { createHash, randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Database } from '../../db/client.js';
import { decodedPath, NAVIGATION_TOKEN_PARAM } from '../../platform/cross-site.js';
import { SESSION_COOKIE } from './guard.js';
import * as q from './queries.js';
import type { AuthService } from './service.js';

/** Long enough to navigate right after asking, short enough that a leaked one is worth nothing. */
export const NAVIGATION_TOKEN_TTL_MS = 60_000;

const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * One-time tokens for the navigations that change state (docs/security.md, Cross-site requests):
 * the page asks for one with an API call (which carries the client header), then navigates with it
 * as `?nav_token=`. A token is 32 random bytes; only its hash is kept, bound to the user who asked
 * and the one path it opens; it works once, within a minute.
 */
export function createNavigationTokens(deps: {
  db: Database;
  clock: () => Date;
  auth: Pick<AuthService, 'authenticate'>;
  random?: () => string;
}) {
  const { db, clock } = deps;
  const random = deps.random ?? (() => randomBytes(32).toString('base64url'));
  return {
    async issue(userId: string, path: string): Promise<{ token: string; expiresAt: Date }> {
      const now = clock();
      await q.deleteExpiredNavigationTokens(db, now);
      const token = random();
      const expiresAt = new Date(now.getTime() + NAVIGATION_TOKEN_TTL_MS);
      await q.insertNavigationToken(db, { tokenHash: hashOf(token), userId, path, expiresAt });
      return { token, expiresAt };
    },

    /** Consumes the request's token when it is its session user's, for its path; false otherwise. */
    async redeem(request: FastifyRequest): Promise<boolean> {
      const token = (request.query as Record<string, unknown> | undefined)?.[NAVIGATION_TOKEN_PARAM];
      if (typeof token !== 'string' || token.length === 0 || token.length > 100) return false;
      const user = await deps.auth.authenticate(request.cookies[SESSION_COOKIE]);
      if (!user) return false;
      return q.takeNavigationToken(db, {
        tokenHash: hashOf(token),
        userId: user.id,
        path: decodedPath(request),
        now: clock(),
      });
    },
  };
}

export type NavigationTokens = ReturnType<typeof createNavigationTokens>;
