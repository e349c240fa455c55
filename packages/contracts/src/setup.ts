import { z } from 'zod';

/**
 * GET /api/config: the public settings the web app reads, and whether a decrypt agent is online,
 * so a person who asks for a decrypt learns why nothing moves when none is.
 */
export const publicConfig = z.object({
  chatUrl: z.string().nullable(),
  channelUrl: z.string().nullable(),
  /** Decrypt agents seen within the last few minutes; 0: requests wait in the queue until one comes. */
  agentsOnline: z.number().int(),
  /** When any agent was last seen (ISO), or null when none ever was. */
  agentLastSeenAt: z.string().nullable(),
});
export type PublicConfig = z.infer<typeof publicConfig>;

/** One step of the admin console's setup checklist. */
export const setupItem = z.object({
  key: z.enum(['store', 'agent', 'identity', 'billing', 'storage', 'public_url', 'feather']),
  label: z.string(),
  /** done: nothing to do; todo: needed before real use; optional: fine as it is for one machine or no Feather. */
  state: z.enum(['done', 'todo', 'optional']),
  /** What is in place now, in a sentence. */
  detail: z.string(),
  /** The one command or setting that completes the step; null when done. */
  action: z.string().nullable(),
});
export type SetupItem = z.infer<typeof setupItem>;

/** GET /api/admin/setup. */
export const setupChecklist = z.array(setupItem);
export type SetupChecklist = z.infer<typeof setupChecklist>;
