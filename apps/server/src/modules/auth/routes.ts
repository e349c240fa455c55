import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { credentials } from '@sideport/contracts';
import { SESSION_COOKIE } from './guard.js';
import type { AuthService } from './service.js';

export interface AuthRoutesDeps {
  auth: AuthService;
  secureCookies: boolean;
}

export async function authRoutes(app: FastifyInstance, { auth, secureCookies }: AuthRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();

  function setSession(request: FastifyRequest, reply: FastifyReply, session: { token: string; expiresAt: Date }) {
    reply.setCookie(SESSION_COOKIE, session.token, {
      path: '/',
      httpOnly: true,
      sameSite: 'lax',
      secure: secureCookies || request.protocol === 'https',
      expires: session.expiresAt,
    });
  }

  r.post('/api/sign-up', { schema: { body: credentials } }, async (request, reply) => {
    const result = await auth.signUp(request.body, request.ip);
    setSession(request, reply, result);
    return { grade: result.grade };
  });

  r.post('/api/sign-in', { schema: { body: credentials } }, async (request, reply) => {
    const result = await auth.signIn(request.body, request.ip);
    setSession(request, reply, result);
    return { grade: result.grade };
  });

  r.post('/api/sign-out', async (request, reply) => {
    await auth.signOut(request.cookies[SESSION_COOKIE]);
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.code(204).send();
  });
}
