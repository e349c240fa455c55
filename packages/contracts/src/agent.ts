import { z } from 'zod';

/**
 * The decrypt agent protocol under /api/agent/ (bearer token). docs/agent-protocol.md fixes what the
 * operator's command sees; these payloads are what `sideport-agent` and the server exchange.
 */

export const JOB_KINDS = ['decrypt', 'versions'] as const;
export const jobKind = z.enum(JOB_KINDS);
export type JobKind = z.infer<typeof jobKind>;

/** Store ids travel as decimal strings: they pass 2^53 in JavaScript numbers' eyes one day. */
export const storeId = z.string().regex(/^[1-9]\d{0,18}$/, { error: 'Ids are positive whole numbers.' });

/** The statuses an agent may report while it works (its command's `status` lines). */
export const AGENT_WORK_STATUSES = ['Downloading', 'Downloaded', 'Process'] as const;
export const agentWorkStatus = z.enum(AGENT_WORK_STATUSES);

export const claimRequest = z.object({
  /** The kinds this agent works; both when omitted. */
  kinds: z.array(jobKind).min(1).max(2).optional(),
  /** Wait up to this long for a job before answering `{ "job": null }` (long poll). */
  wait_seconds: z.number().int().min(0).max(30).optional(),
});
export type ClaimRequest = z.infer<typeof claimRequest>;

export const agentJob = z.object({
  id: z.string(),
  kind: jobKind,
  /** Lowercase store country, as SIDEPORT_COUNTRY. */
  country: z.string(),
  app_id: z.string(),
  bundle_id: z.string(),
  /** null: the store's current version (an app-level request). */
  app_ver_id: z.string().nullable(),
  version: z.string().nullable(),
  /** 1 for the first try. */
  attempt: z.number().int().positive(),
  /** Heartbeat before this many seconds pass, or the job goes back to the queue. */
  lease_seconds: z.number().int().positive(),
});
export type AgentJob = z.infer<typeof agentJob>;

export const claimAnswer = z.object({ job: agentJob.nullable() });
export type ClaimAnswer = z.infer<typeof claimAnswer>;

export const heartbeatRequest = z.object({
  status: agentWorkStatus.optional(),
  progress: z.number().int().min(0).max(100).optional(),
  app_ver_id: storeId.optional(),
  version: z.string().min(1).max(64).optional(),
});
export type HeartbeatRequest = z.infer<typeof heartbeatRequest>;

export const heartbeatAnswer = z.object({ lease_seconds: z.number().int().positive() });
export type HeartbeatAnswer = z.infer<typeof heartbeatAnswer>;

/** Query of PUT /api/agent/jobs/{id}/ipa: what the agent learnt of an app-level job's version. */
export const uploadQuery = z.object({
  app_ver_id: storeId.optional(),
  version: z.string().min(1).max(64).optional(),
});
export type UploadQuery = z.infer<typeof uploadQuery>;

export const uploadAnswer = z.object({
  status: z.literal('Done'),
  app_ver_id: z.string(),
  version: z.string(),
  size_bytes: z.number().int().nonnegative(),
});
export type UploadAnswer = z.infer<typeof uploadAnswer>;

export const failRequest = z.object({
  reason: z.string().min(1).max(500),
  /** Exit code 3 of the operator's command: the entry becomes Not at once. */
  unsupported: z.boolean().optional(),
  /** The agent is stopping and hands the job back: a lost lease, not a failed attempt. */
  stopped: z.boolean().optional(),
});
export type FailRequest = z.infer<typeof failRequest>;

export const failAnswer = z.object({ status: z.enum(['Pending', 'Not']) });
export type FailAnswer = z.infer<typeof failAnswer>;

/** One line of the operator's --versions-command, and the list the agent sends for a versions job. */
export const storeVersion = z.object({
  app_ver_id: z.union([z.number().int().positive().max(Number.MAX_SAFE_INTEGER), storeId]).transform(String),
  version: z.string().min(1).max(64),
});
export type StoreVersion = z.infer<typeof storeVersion>;

export const versionsRequest = z.object({ versions: z.array(storeVersion).max(5000) });
export type VersionsRequest = z.infer<typeof versionsRequest>;
