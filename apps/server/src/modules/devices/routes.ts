import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { adminDevice } from '@sideport/contracts';
import { idParam } from '../../platform/params.js';
import { publicOrigin } from '../../platform/public-origin.js';
import { contentDisposition } from '../../platform/storage.js';
import type { RecordAudit } from '../audit/service.js';
import { currentUser, type Guards } from '../auth/guard.js';
import { ENROLLMENT_ANSWER_MAX_BYTES, MOBILECONFIG_CONTENT_TYPE } from './enrollment.js';
import { ENROLLMENT_PATH, ENROLLMENT_TOKEN_PATTERN, type EnrollmentService } from './enrollment-service.js';
import type { RegistrationService } from './registration.js';

export interface DeviceRoutesDeps {
  guards: Guards;
  enrollment: EnrollmentService;
  registration: Pick<RegistrationService, 'waiting' | 'confirm' | 'retry'>;
  audit: RecordAudit;
  /** PUBLIC_URL; the request's own origin when unset. */
  publicUrl?: string | undefined;
}

const PROFILE_FILE_NAME = 'sideport-device.mobileconfig';
const tokenParams = z.object({
  token: z.string().regex(ENROLLMENT_TOKEN_PATTERN, {
    error: 'This enrollment link is not valid; download the device profile again from My page.',
  }),
});
const idParams = z.object({ id: idParam('id') });

/**
 * Enrollment (docs/sign-service.md) and the admin console's devices: those waiting for
 * registration with Apple's reasons, a Mac's confirmation, a retry. The identity in use is
 * modules/identity/routes.ts.
 */
export async function deviceRoutes(
  app: FastifyInstance,
  { guards, enrollment, registration, audit, publicUrl }: DeviceRoutesDeps,
) {
  const baseUrl = (request: FastifyRequest) => publicOrigin(request, publicUrl);
  const r = app.withTypeProvider<ZodTypeProvider>();
  const admin = { onRequest: guards.requireAdmin };

  // A GET that makes a one-time token (docs/product.md, Screens: navigating to /udid downloads the profile).
  // The web app navigates here (a download) with a one-time token (docs/security.md, Cross-site requests).
  r.get(
    '/api/udid/profile',
    { onRequest: guards.requireUser, config: { changesState: true } },
    async (request, reply) => {
      const profile = await enrollment.issueProfile(currentUser(request).id, baseUrl(request));
      return reply
        .type(MOBILECONFIG_CONTENT_TYPE)
        .header('content-disposition', contentDisposition(PROFILE_FILE_NAME))
        .header('cache-control', 'no-store')
        .send(profile);
    },
  );

  // The device's answer: its own scope takes any body as bytes (devices send
  // application/pkcs7-signature), capped before it is read. Authenticated by the token and the
  // device's signature; a session cookie counts for nothing here.
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      '*',
      { parseAs: 'buffer', bodyLimit: ENROLLMENT_ANSWER_MAX_BYTES },
      (_request, body, done) => done(null, body),
    );
    scope
      .withTypeProvider<ZodTypeProvider>()
      .post(
        `${ENROLLMENT_PATH}:token`,
        { bodyLimit: ENROLLMENT_ANSWER_MAX_BYTES, schema: { params: tokenParams } },
        async (request, reply) => {
          const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
          // Where the device goes next, made before the device is added: a request no link can be
          // made for is refused with nothing changed.
          const accountPage = `${baseUrl(request)}/my`;
          const { userId, added } = await enrollment.enroll(request.params.token, body);
          request.log.info(
            { userId, added },
            added ? 'device enrolled' : 'device enrolled again (already listed)',
          );
          // 301 to the account page: iOS opens it in Safari once the profile is installed.
          return reply.redirect(accountPage, 301);
        },
      );
  });

  r.get('/api/admin/devices', { ...admin, schema: { response: { 200: z.array(adminDevice) } } }, async () =>
    registration.waiting(),
  );

  r.post(
    '/api/admin/devices/:id/confirm',
    { ...admin, schema: { params: idParams, response: { 200: adminDevice } } },
    async (request) => {
      const device = await registration.confirm(request.params.id);
      await audit(currentUser(request).id, 'confirm-device', {
        id: device.id,
        user: device.user,
        product: device.product,
      });
      return device;
    },
  );

  r.post(
    '/api/admin/devices/:id/retry',
    { ...admin, schema: { params: idParams, response: { 200: adminDevice } } },
    async (request) => {
      const device = await registration.retry(request.params.id);
      await audit(currentUser(request).id, 'retry-device', {
        id: device.id,
        user: device.user,
        product: device.product,
      });
      return device;
    },
  );
}
