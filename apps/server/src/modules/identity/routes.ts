import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { signingIdentityInfo, type SigningIdentityInfo } from '@sideport/contracts';
import { fail } from '../../platform/errors.js';
import { contentDisposition } from '../../platform/storage.js';
import { currentUser, type Guards } from '../auth/guard.js';
import type { SigningService } from './signing.js';

export interface IdentityRoutesDeps {
  guards: Guards;
  signing: Pick<
    SigningService,
    | 'identityInfo'
    | 'identityDetails'
    | 'identityCaPem'
    | 'certificateStatusNow'
    | 'featherDetails'
    | 'rotateFeatherCertificate'
  >;
  /** Writes the audit log (an admin's rotation of the Feather certificate). */
  audit(actor: string, action: string, subject: object): Promise<void>;
}

const DEV_CA_FILE_NAME = 'sideport-dev-ca.pem';

/** The admin console's view of the signing identity in use (docs/sign-service.md, Identities). */
export async function identityRoutes(app: FastifyInstance, { guards, signing, audit }: IdentityRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const admin = { onRequest: guards.requireAdmin };

  // The dev identity's CA, so anyone can check what it signed (openssl cms -verify -CAfile, codesign tools).
  r.get('/api/admin/identity/ca.pem', admin, async (_request, reply) => {
    const pem = await signing.identityCaPem();
    if (pem === undefined) {
      throw fail('NO_DEV_CA');
    }
    return reply
      .type('application/x-pem-file')
      .header('content-disposition', contentDisposition(DEV_CA_FILE_NAME))
      .send(pem);
  });

  async function identityInfo(): Promise<SigningIdentityInfo> {
    const { kind, description } = signing.identityInfo();
    const details = await signing.identityDetails();
    // As the last preflight or recovery pass learnt it: the console asks no responder itself.
    const status = await signing.certificateStatusNow();
    const feather = await signing.featherDetails();
    return {
      kind,
      description,
      installable: kind === 'apple',
      team_id: details.teamId,
      certificate_name: details.certificateName,
      certificate_expires_at: details.certificateExpiresAt?.toISOString() ?? null,
      certificate_serial: details.certificateSerial ?? null,
      certificate_status: status?.state ?? 'not checked',
      certificate_checked_at: status?.checkedAt?.toISOString() ?? null,
      certificate_revoked_at: status?.revokedAt?.toISOString() ?? null,
      certificate_chain: (details.certificateChain ?? []).map((c) => ({
        name: c.name,
        expires_at: c.expiresAt.toISOString(),
      })),
      feather_certificate_name: feather?.certificateName ?? null,
      feather_certificate_serial: feather?.certificateSerial ?? null,
      feather_certificate_expires_at: feather?.certificateExpiresAt?.toISOString() ?? null,
    };
  }

  r.get(
    '/api/admin/identity',
    { ...admin, schema: { response: { 200: signingIdentityInfo } } },
    identityInfo,
  );

  // After a leak: Feather is handed a new certificate from now on; the old one can be revoked
  // (on Apple's site) without touching any install of the service's signs.
  r.post(
    '/api/admin/identity/feather-cert/rotate',
    { ...admin, schema: { response: { 200: signingIdentityInfo } } },
    async (request) => {
      const made = await signing.rotateFeatherCertificate();
      await audit(currentUser(request).id, 'rotate-feather-cert', { serial: made.serial });
      return identityInfo();
    },
  );
}
