import { z } from 'zod';

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

export const signStatus = z.enum(['No', 'Pending', 'Process', 'Done']);
export type SignStatus = z.infer<typeof signStatus>;

/** Sign types (docs/product.md, Entities and fields): 0 normal, 1 IAP, 2 IGG, 3 IAP+IGG, 4 DUP. */
export const SIGN_TYPES = [0, 1, 2, 3, 4] as const;
export const signType = z.union([z.literal(0), z.literal(1), z.literal(2), z.literal(3), z.literal(4)]);
export type SignType = z.infer<typeof signType>;

/** App / version entry of docs/product.md, Entities and fields; field names are the contract (raiting is spelled so). */
export const appEntry = z.object({
  app_id: z.string(),
  app_ver_id: z.string().nullable(),
  country: z.string(),
  name: z.string(),
  developer: z.string(),
  version: z.string(),
  icon: z.string(),
  itunes: z.string(),
  raiting: z.number().nullable(),
  raiting_count: z.number().int().nullable(),
  bundle_id: z.string(),
  require: z.string(),
  /** MB */
  size: z.number().nullable(),
  premium: z.boolean(),
  status: decryptStatus,
  normal_sign: signStatus,
  iap_sign: signStatus,
  igg_sign: signStatus,
  both_sign: signStatus,
  dup_sign: signStatus,
});
export type AppEntry = z.infer<typeof appEntry>;
export const appList = z.array(appEntry);
