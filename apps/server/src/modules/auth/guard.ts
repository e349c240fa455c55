import type { FastifyReply, FastifyRequest } from 'fastify';
import { fail } from '../../platform/errors.js';
import type { AuthService, Session, SessionUser } from './service.js';

export const SESSION_COOKIE = 'sideport_session';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by requireUser / requireAdmin; undefined on public routes. */
    user?: SessionUser;
    /** The session `user` came with (its key and end), set with it. */
    session?: Session;
  }
}

/**
 * Use as `onRequest` hooks, so a request without a session gets 401 before its input is validated.
 */
export function createGuards(auth: Pick<AuthService, 'findSession'>) {
  async function requireUser(request: FastifyRequest, _reply: FastifyReply) {
    const session = await auth.findSession(request.cookies[SESSION_COOKIE]);
    if (!session) throw fail('NOT_SIGNED_IN');
    request.user = session.user;
    request.session = session;
  }
  /** Checked on the server for every admin call. */
  async function requireAdmin(request: FastifyRequest, reply: FastifyReply) {
    await requireUser(request, reply);
    if (!isAdmin(currentUser(request))) throw fail('NOT_ADMIN');
  }
  return { requireUser, requireAdmin };
}

export type Guards = ReturnType<typeof createGuards>;

/** A grade above 0 is admin (docs/product.md, Roles). */
export const isAdmin = (user: SessionUser): boolean => user.grade > 0;

/** The signed-in user of a request that passed requireUser. */
export function currentUser(request: FastifyRequest): SessionUser {
  if (!request.user) throw fail('NOT_SIGNED_IN');
  return request.user;
}

/** The session of a request that passed requireUser. */
export function currentSession(request: FastifyRequest): Session {
  if (!request.session) throw fail('NOT_SIGNED_IN');
  return request.session;
}
