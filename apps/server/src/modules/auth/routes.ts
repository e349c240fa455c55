import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { credentials, gradeAnswer, navigationTokenAnswer, navigationTokenRequest } from '@sideport/contracts';
import { addressKey } from './client-address.js';
import { currentUser, SESSION_COOKIE, type Guards } from './guard.js';
import type { NavigationTokens } from './navigation-tokens.js';
import type { AuthService } from './service.js';
import { SETUP_TOKEN_PATTERN, type SetupLinkService } from './setup-link.js';

export interface AuthRoutesDeps {
  auth: AuthService;
  setup: SetupLinkService;
  navigation: Pick<NavigationTokens, 'issue'>;
  guards: Guards;
  secureCookies: boolean;
}

const setupParams = z.object({
  token: z.string().regex(SETUP_TOKEN_PATTERN, {
    error: 'This setup link is not valid. Use the link the server printed last at start.',
  }),
});

export async function authRoutes(
  app: FastifyInstance,
  { auth, setup, navigation, guards, secureCookies }: AuthRoutesDeps,
) {
  const r = app.withTypeProvider<ZodTypeProvider>();

  function setSession(
    request: FastifyRequest,
    reply: FastifyReply,
    session: { token: string; expiresAt: Date },
  ) {
    reply.setCookie(SESSION_COOKIE, session.token, {
      path: '/',
      httpOnly: true,
      sameSite: 'lax',
      secure: secureCookies || request.protocol === 'https',
      expires: session.expiresAt,
    });
  }

  r.post('/api/sign-up', { schema: { body: credentials } }, async (request, reply) => {
    const result = await auth.signUp(request.body, addressKey(request.ip));
    setSession(request, reply, result);
    return { grade: result.grade };
  });

  r.post('/api/sign-in', { schema: { body: credentials } }, async (request, reply) => {
    const result = await auth.signIn(request.body, addressKey(request.ip));
    setSession(request, reply, result);
    return { grade: result.grade };
  });

  // The first admin (docs/security.md, "The setup link"): the page asks whether its link still
  // works, then creates the account with it and is signed in.
  r.get('/api/setup/:token', { schema: { params: setupParams } }, async (request, reply) => {
    await setup.check(request.params.token);
    return reply.code(204).send();
  });

  r.post(
    '/api/setup/:token',
    { schema: { params: setupParams, body: credentials, response: { 200: gradeAnswer } } },
    async (request, reply) => {
      const result = await setup.createAdmin(request.params.token, request.body, addressKey(request.ip));
      request.log.info({ admin: request.body.id }, 'admin account created with the setup link');
      setSession(request, reply, result);
      return { grade: result.grade };
    },
  );

  r.post('/api/sign-out', async (request, reply) => {
    await auth.signOut(request.cookies[SESSION_COOKIE]);
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.code(204).send();
  });

  // A one-time token for a navigation that changes state (docs/security.md, Cross-site requests).
  r.post(
    '/api/navigation-tokens',
    {
      onRequest: guards.requireUser,
      schema: { body: navigationTokenRequest, response: { 200: navigationTokenAnswer } },
    },
    async (request, reply) => {
      const { token, expiresAt } = await navigation.issue(currentUser(request).id, request.body.path);
      reply.header('cache-control', 'no-store');
      return { token, expires_at: expiresAt.toISOString() };
    },
  );
}
