// zod/mini, like account.ts: the admin console parses these in the web app.
import * as z from 'zod/mini';

/** One step of the admin console's setup checklist. */
export const setupItem = z.object({
  /** `parts`: whether the outside parts (database, file store, disk, Apple, Stripe) answer now. */
  key: z.enum(['parts', 'store', 'agent', 'identity', 'billing', 'storage', 'public_url', 'feather']),
  label: z.string(),
  /** done: nothing to do; todo: needed before real use; optional: fine as it is for one machine or no Feather. */
  state: z.enum(['done', 'todo', 'optional']),
  /** What is in place now, in a sentence. */
  detail: z.string(),
  /** The one command or setting that completes the step; null when done. */
  action: z.nullable(z.string()),
});
export type SetupItem = z.infer<typeof setupItem>;

/** GET /api/admin/setup. */
export const setupChecklist = z.array(setupItem);
export type SetupChecklist = z.infer<typeof setupChecklist>;
