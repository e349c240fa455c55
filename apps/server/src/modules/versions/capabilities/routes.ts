import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { adminCapabilities, adminCopyAppIds, adminCopyAppIdsRequest } from '@sideport/contracts';
import type { Database } from '../../../db/client.js';
import { currentUser, type Guards } from '../../auth/guard.js';
import type { AuditLog } from '../../audit/service.js';
import { CANNOT_CREATE, type CopyAppIds } from './copy-app-ids.js';
import { capabilityOverview } from './overview.js';

/**
 * The admin console's Capabilities tab: what signing loses of the newest Done versions
 * (overview.ts), and the setting that has App Store Connect make explicit App IDs for DUP copies
 * (copy-app-ids.ts), whose changes the audit log keeps.
 */
export async function capabilityRoutes(
  app: FastifyInstance,
  {
    guards,
    db,
    copyAppIds,
    audit,
  }: { guards: Guards; db: Database; copyAppIds: CopyAppIds; audit: Pick<AuditLog, 'record'> },
) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get(
    '/api/admin/capabilities',
    { onRequest: guards.requireAdmin, schema: { response: { 200: adminCapabilities } } },
    async () => capabilityOverview(db),
  );

  const setting = async () => ({
    enabled: await copyAppIds.chosen(),
    available: copyAppIds.available,
    cannot_create: [...CANNOT_CREATE],
  });
  r.get(
    '/api/admin/capabilities/copy-app-ids',
    { onRequest: guards.requireAdmin, schema: { response: { 200: adminCopyAppIds } } },
    setting,
  );
  r.put(
    '/api/admin/capabilities/copy-app-ids',
    {
      onRequest: guards.requireAdmin,
      schema: { body: adminCopyAppIdsRequest, response: { 200: adminCopyAppIds } },
    },
    async (request) => {
      await copyAppIds.choose(request.body.enabled);
      await audit.record(currentUser(request).id, 'set-copy-app-ids', { enabled: request.body.enabled });
      return setting();
    },
  );
}
