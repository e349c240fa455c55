// zod/mini, like catalog.ts: the web app's admin console parses these, and one full-zod module in
// the web app would bring all of zod into the chunks every page shares.
import * as z from 'zod/mini';
import { decryptStatus } from './catalog.js';

/** POST /api/admin/agents: the token is shown once, in this answer only. */
export const createAgentRequest = z.object({
  name: z.pipe(
    z.pipe(
      z.string({ error: 'Send a JSON object with a name.' }).check(
        // eslint-disable-next-line no-control-regex
        z.refine((name) => !/[\u0000-\u001f\u007f-\u009f]/.test(name), {
          error: 'Agent names may not contain control characters.',
        }),
      ),
      z.transform((name: string) => name.trim()),
    ),
    z
      .string()
      .check(
        z.minLength(1, { error: 'Give the agent a name.' }),
        z.maxLength(64, { error: 'Agent names are at most 64 characters.' }),
      ),
  ),
});
export const createdAgent = z.object({ id: z.string(), name: z.string(), token: z.string() });
export type CreatedAgent = z.infer<typeof createdAgent>;

export const agentSummary = z.object({
  id: z.string(),
  name: z.string(),
  created_at: z.string(),
  last_seen_at: z.nullable(z.string()),
  /** What it works on now: `{country}/{app_id}[/{app_ver_id}]` of the leased job, or null. */
  current_job: z.nullable(z.string()),
  done_count: z.int(),
  failed_count: z.int(),
});
export type AgentSummary = z.infer<typeof agentSummary>;
export const agentSummaries = z.array(agentSummary);

/** A queue entry as the admin console shows it. */
export const adminQueueEntry = z.object({
  seq: z.string(),
  country: z.string(),
  app_id: z.string(),
  app_ver_id: z.nullable(z.string()),
  name: z.string(),
  version: z.nullable(z.string()),
  status: decryptStatus,
  premium: z.boolean(),
  /** Failed attempts (counted toward DECRYPT_MAX_ATTEMPTS). */
  attempts: z.int(),
  /** Leases lost without a result (counted apart, toward DECRYPT_MAX_LOST_LEASES). */
  lost_leases: z.int(),
  reason: z.nullable(z.string()),
  agent: z.nullable(z.string()),
  requested_at: z.string(),
  updated_at: z.string(),
});
export type AdminQueueEntry = z.infer<typeof adminQueueEntry>;
export const adminQueuePage = z.array(adminQueueEntry);

export const auditEntry = z.object({
  id: z.string(),
  actor: z.string(),
  action: z.string(),
  subject: z.record(z.string(), z.unknown()),
  at: z.string(),
});
export type AuditEntry = z.infer<typeof auditEntry>;
export const auditPage = z.array(auditEntry);
