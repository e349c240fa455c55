import { z } from 'zod';
import { decryptStatus } from './catalog.js';

/** POST /api/admin/agents: the token is shown once, in this answer only. */
export const createAgentRequest = z.object({
  name: z
    .string({ error: 'Send a JSON object with a name.' })
    // eslint-disable-next-line no-control-regex
    .refine((name) => !/[\u0000-\u001f\u007f-\u009f]/.test(name), { error: 'Agent names may not contain control characters.' })
    .transform((name) => name.trim())
    .pipe(z.string().min(1, { error: 'Give the agent a name.' }).max(64, { error: 'Agent names are at most 64 characters.' })),
});
export const createdAgent = z.object({ id: z.string(), name: z.string(), token: z.string() });
export type CreatedAgent = z.infer<typeof createdAgent>;

export const agentSummary = z.object({
  id: z.string(),
  name: z.string(),
  created_at: z.string(),
  last_seen_at: z.string().nullable(),
  /** What it works on now: `{country}/{app_id}[/{app_ver_id}]` of the leased job, or null. */
  current_job: z.string().nullable(),
  done_count: z.number().int(),
  failed_count: z.number().int(),
});
export type AgentSummary = z.infer<typeof agentSummary>;

/** A queue entry as the admin console shows it. */
export const adminQueueEntry = z.object({
  seq: z.string(),
  country: z.string(),
  app_id: z.string(),
  app_ver_id: z.string().nullable(),
  name: z.string(),
  version: z.string().nullable(),
  status: decryptStatus,
  premium: z.boolean(),
  attempts: z.number().int(),
  reason: z.string().nullable(),
  agent: z.string().nullable(),
  requested_at: z.string(),
  updated_at: z.string(),
});
export type AdminQueueEntry = z.infer<typeof adminQueueEntry>;

export const auditEntry = z.object({
  id: z.string(),
  actor: z.string(),
  action: z.string(),
  subject: z.record(z.string(), z.unknown()),
  at: z.string(),
});
export type AuditEntry = z.infer<typeof auditEntry>;
