// zod/mini: the web app's first screen parses these, and mini is tree-shaken to what is used
// (zod's full API weighs ~20 kB compressed there). The schemas are the same to zod's core, so the
// server validates and documents them as it does every other contract.
import * as z from 'zod/mini';
import { versionCapabilities } from './capabilities.js';
import { signStatusFields, signType } from './sign-modes.js';

/** docs/product.md, Constants: supported store countries, KR by default. */
export const COUNTRIES = ['US', 'KR', 'AU', 'RU', 'DE', 'IN', 'SE', 'IL', 'IT'] as const;
export const DEFAULT_COUNTRY = 'KR';
export const country = z.enum(COUNTRIES);
export type Country = z.infer<typeof country>;

/** docs/architecture.md, API conventions: a page of a list holds 24 entries, pages start at 0. */
export const PAGE_SIZE = 24;

export const decryptStatus = z.enum([
  'Available',
  'Pending',
  'Downloading',
  'Downloaded',
  'Process',
  'Done',
  'Not',
]);
export type DecryptStatus = z.infer<typeof decryptStatus>;

/**
 * App / version entry of docs/product.md, Entities and fields; field names are the contract (raiting is spelled so).
 * The fields after the spec's say what the spec's leave out; each is null where it does not apply.
 */
export const appEntry = z.object({
  app_id: z.string(),
  app_ver_id: z.nullable(z.string()),
  country: z.string(),
  name: z.string(),
  developer: z.string(),
  version: z.string(),
  /** https: the store's http:// icon addresses are answered as https:// (its hosts serve both). */
  icon: z.string(),
  itunes: z.string(),
  raiting: z.nullable(z.number()),
  raiting_count: z.nullable(z.int()),
  bundle_id: z.string(),
  /** Minimum iOS: the decrypted IPA's once Done, the store listing's before. */
  require: z.string(),
  /** MB, to 0.01 (a few kB is 0.01, never 0): the decrypted IPA's once Done, the store listing's before. */
  size: z.nullable(z.number()),
  premium: z.boolean(),
  status: decryptStatus,
  /** The viewer's status of each sign mode: normal_sign, iap_sign, igg_sign, both_sign, dup_sign (sign-modes.ts). */
  ...signStatusFields,
  /** The viewer's modes of this version that recovery is signing again (shown 'Re-signing'); absent when none. */
  resigning: z.optional(z.array(signType)),
  /** The store listing's size in MB, beside `size` when that is the IPA's (they often differ). */
  store_size: z.nullable(z.number()),
  /** The store listing's minimum iOS, beside `require` when that is the IPA's. */
  store_require: z.nullable(z.string()),
  /** ISO time the version became Done. */
  decrypted_at: z.nullable(z.string()),
  /**
   * Why the entry is Not, as a sentence: the agent's last reason for its requester and admins, a
   * policy (paid apps refused) for everyone; null otherwise.
   */
  reason: z.nullable(z.string()),
  /** On the queue: the place of a waiting (Pending) entry in the agents' order, 1 first; its lane is `premium`. */
  position: z.nullable(z.int()),
  /**
   * Of a Done version: what signing keeps of its capabilities for the viewer (capabilities.ts);
   * null while its components are being read, absent where it does not apply.
   */
  capabilities: z.optional(z.nullable(versionCapabilities)),
});
export type AppEntry = z.infer<typeof appEntry>;
export const appList = z.array(appEntry);
