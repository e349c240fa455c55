import type { FastifyReply, FastifyRequest } from 'fastify';
import { fail } from '../../platform/errors.js';
import type { AuthService, SessionUser } from './service.js';

export const SESSION_COOKIE = 'sideport_session';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by requireUser / requireAdmin; undefined on public routes. */
    user?: SessionUser;
  }
}

/**
 * Use as `onRequest` hooks, so a request without a session gets 401 before its input is validated.
 */
export function createGuards(auth: Pick<AuthService, 'authenticate'>) {
  async function requireUser(request: FastifyRequest, _reply: FastifyReply) {
    const user = await auth.authenticate(request.cookies[SESSION_COOKIE]);
    if (!user) throw fail('NOT_SIGNED_IN');
    request.user = user;
  }
  /** Checked on the server for every admin call. */
  async function requireAdmin(request: FastifyRequest, reply: FastifyReply) {
    await requireUser(request, reply);
    if (!isAdmin(currentUser(request))) throw fail('NOT_ADMIN');
  }
  return { requireUser, requireAdmin };
}

export type Guards = ReturnType<typeof createGuards>;

/** The signed-in user of a request that passed requireUser. */
/** A grade above 0 is admin (docs/product.md, Roles). */
export const isAdmin = (user: SessionUser): boolean => user.grade > 0;

export function currentUser(request: FastifyRequest): SessionUser {
  if (!request.user) throw fail('NOT_SIGNED_IN');
  return request.user;
}
