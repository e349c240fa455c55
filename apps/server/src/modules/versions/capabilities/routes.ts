import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { adminCapabilities } from '@sideport/contracts';
import type { Database } from '../../../db/client.js';
import type { Guards } from '../../auth/guard.js';
import { capabilityOverview } from './overview.js';

/** The admin console's Capabilities tab: what signing loses of the newest Done versions (overview.ts). */
export async function capabilityRoutes(
  app: FastifyInstance,
  { guards, db }: { guards: Guards; db: Database },
) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get(
    '/api/admin/capabilities',
    { onRequest: guards.requireAdmin, schema: { response: { 200: adminCapabilities } } },
    async () => capabilityOverview(db),
  );
}
