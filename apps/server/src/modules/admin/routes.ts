import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { idParam, pageParam } from '../../platform/params.js';
import {
  adminQueueEntry,
  agentSummary,
  auditEntry,
  createAgentRequest,
  createdAgent,
  setupChecklist,
} from '@sideport/contracts';
import { currentUser, type Guards } from '../auth/guard.js';
import type { AgentService } from '../agents/service.js';
import type { AuditLog } from '../audit/service.js';
import type { JobService } from '../decrypt/jobs.js';
import type { SetupChecklist } from './setup-checklist.js';

export interface AdminRoutesDeps {
  guards: Guards;
  agents: AgentService;
  jobs: Pick<JobService, 'retry' | 'queuePage'>;
  audit: AuditLog;
  checklist: SetupChecklist;
}

const ADMIN_PAGE_SIZE = 50;
const pageParams = z.object({ page: pageParam });
const idParams = z.object({ id: idParam('id') });

/**
 * The admin console's API (grade above 0, checked here for every call): agents and their tokens,
 * the queue with attempts and reasons, and the audit log.
 */
export async function adminRoutes(
  app: FastifyInstance,
  { guards, agents, jobs, audit, checklist }: AdminRoutesDeps,
) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const admin = { onRequest: guards.requireAdmin };

  // What the console opens on: each setup step, done or with the setting that completes it.
  r.get('/api/admin/setup', { ...admin, schema: { response: { 200: setupChecklist } } }, async () =>
    checklist.items(),
  );

  r.post(
    '/api/admin/agents',
    { ...admin, schema: { body: createAgentRequest, response: { 200: createdAgent } } },
    async (request) => {
      const made = await agents.create(request.body.name);
      await audit.record(currentUser(request).id, 'create-agent', { id: made.id, name: made.name });
      return made;
    },
  );

  r.get('/api/admin/agents', { ...admin, schema: { response: { 200: z.array(agentSummary) } } }, async () =>
    agents.list(),
  );

  r.delete('/api/admin/agents/:id', { ...admin, schema: { params: idParams } }, async (request, reply) => {
    const revoked = await agents.revoke(request.params.id);
    await audit.record(currentUser(request).id, 'revoke-agent', {
      id: String(revoked.id),
      name: revoked.name,
    });
    return reply.code(204).send();
  });

  r.get(
    '/api/admin/queue/:page',
    { ...admin, schema: { params: pageParams, response: { 200: z.array(adminQueueEntry) } } },
    async (request) => {
      const rows = await jobs.queuePage(request.params.page, ADMIN_PAGE_SIZE);
      return rows.map(({ entry, app: store, job, agentName }) => ({
        seq: String(entry.seq),
        country: entry.country,
        app_id: String(entry.appId),
        app_ver_id: entry.appVerId === null ? null : String(entry.appVerId),
        name: store?.name ?? String(entry.appId),
        version: entry.version,
        status: entry.status as 'Pending',
        premium: entry.premium,
        attempts: job?.failures ?? 0,
        lost_leases: job?.lostLeases ?? 0,
        reason: entry.reason ?? job?.lastReason ?? null,
        agent: agentName,
        requested_at: entry.requestedAt.toISOString(),
        updated_at: entry.updatedAt.toISOString(),
      }));
    },
  );

  r.post('/api/admin/queue/:id/retry', { ...admin, schema: { params: idParams } }, async (request, reply) => {
    const entry = await jobs.retry(request.params.id);
    await audit.record(currentUser(request).id, 'retry', {
      seq: String(entry.seq),
      appId: String(entry.appId),
    });
    return reply.code(204).send();
  });

  r.get(
    '/api/admin/audit/:page',
    { ...admin, schema: { params: pageParams, response: { 200: z.array(auditEntry) } } },
    async (request) => {
      const rows = await audit.page(request.params.page, ADMIN_PAGE_SIZE);
      return rows.map((row) => ({
        id: String(row.id),
        actor: row.actor,
        action: row.action,
        subject: row.subject as Record<string, unknown>,
        at: row.at.toISOString(),
      }));
    },
  );
}
