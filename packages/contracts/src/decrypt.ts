import * as z from 'zod/mini';
import { appEntry, decryptStatus } from './catalog.js';
import { signType } from './sign-modes.js';
import { notificationEvent } from './notifications.js';
import { updateEvent } from './updates.js';

/**
 * Answer of GET /api/decrypt/{country}/{app_id}[/{app_ver_id}] and its PATCH: where the request
 * stands. `joined` is true when the entry already existed (the request cost nothing).
 */
export const decryptAnswer = z.object({
  status: decryptStatus,
  app_id: z.string(),
  app_ver_id: z.nullable(z.string()),
  version: z.nullable(z.string()),
  premium: z.boolean(),
  joined: z.boolean(),
  /** A sentence the client may show ('This version is already decrypted.'). */
  message: z.string(),
});
export type DecryptAnswer = z.infer<typeof decryptAnswer>;

/** POST /api/version/{country}/{app_id} (downgrade): docs/product.md, Calls, `{name, version_list}`. */
export const versionHistoryAnswer = z.object({
  name: z.string(),
  version_list: z.array(appEntry),
});
export type VersionHistoryAnswer = z.infer<typeof versionHistoryAnswer>;

/** GET /api/download/{app_id}/{app_ver_id}: a signed URL that expires. */
export const urlAnswer = z.object({ url: z.string() });
export type UrlAnswer = z.infer<typeof urlAnswer>;

/**
 * One Server-Sent Event of GET /api/events (`data:` is this JSON). A decrypt entry changed:
 * the lists, the queue and the version modal update the entry it names.
 */
export const versionEvent = z.object({
  type: z.literal('version'),
  country: z.string(),
  app_id: z.string(),
  /** null: an app-level entry whose version is not known yet. */
  app_ver_id: z.nullable(z.string()),
  /** The entry's app_ver_id before this change (an app-level entry that learnt its version). */
  previous_app_ver_id: z.optional(z.nullable(z.string())),
  version: z.nullable(z.string()),
  status: z.union([decryptStatus, z.literal('Deleted')]),
  premium: z.boolean(),
  progress: z.nullable(z.int().check(z.minimum(0), z.maximum(100))),
});
export type VersionEvent = z.infer<typeof versionEvent>;

/** A sign job of the caller changed (sign service). */
export const signEvent = z.object({
  type: z.literal('sign'),
  app_id: z.string(),
  app_ver_id: z.string(),
  sign_type: signType,
  status: z.enum(['No', 'Pending', 'Process', 'Done']),
  /** True while recovery signs it again (a revoked or expiring certificate or profile): 'Re-signing'. */
  resigning: z.optional(z.boolean()),
});
export type SignEvent = z.infer<typeof signEvent>;

/** The caller's device list changed (enrollment, payment, registration). */
export const deviceEvent = z.object({ type: z.literal('device') });
export type DeviceEvent = z.infer<typeof deviceEvent>;

export const liveEvent = z.discriminatedUnion('type', [
  versionEvent,
  signEvent,
  deviceEvent,
  updateEvent,
  notificationEvent,
]);
export type LiveEvent = z.infer<typeof liveEvent>;
