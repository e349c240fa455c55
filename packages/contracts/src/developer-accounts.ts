// zod/mini: see admin.ts.
import * as z from 'zod/mini';

/**
 * The device families Apple counts its device limit in, each apart: 100 of each per developer
 * account per membership year (docs/sign-service.md, A pool of developer accounts).
 */
export const DEVICE_FAMILIES = ['iPhone', 'iPad', 'Apple TV', 'Apple Watch', 'Mac'] as const;
export const deviceFamily = z.enum(DEVICE_FAMILIES);
export type DeviceFamily = z.infer<typeof deviceFamily>;

/**
 * enabled: devices are placed on it; disabled: an admin took it out of the pool; rejected: Apple
 * stopped taking its key (revoked, or the membership ended). Devices on a disabled or rejected
 * account move to the others.
 */
export const developerAccountState = z.enum(['enabled', 'disabled', 'rejected']);
export type DeveloperAccountState = z.infer<typeof developerAccountState>;

/** GET /api/admin/accounts: one account of the pool as the admin console shows it. */
export const developerAccount = z.object({
  id: z.string(),
  name: z.string(),
  key_id: z.string(),
  issuer_id: z.string(),
  /** From the signing certificate once there is one. */
  team_id: z.nullable(z.string()),
  /** config: ASC_KEY_ID or ASC_ACCOUNTS_FILE; console: a key an admin added. */
  source: z.enum(['config', 'console']),
  /** The ASC_KEY_ID account: the first one, and the identity the console's identity card shows. */
  primary: z.boolean(),
  state: developerAccountState,
  /** Why it is disabled or rejected, with when; null while enabled. */
  reason: z.nullable(z.string()),
  /** The next membership renewal (ISO date, YYYY-MM-DD): slots of removed devices come back then; null: not set. */
  membership_renews_at: z.nullable(z.string()),
  /** People whose devices are on it, and their Registered devices. */
  users: z.int(),
  devices: z.int(),
  slots: z.array(
    z.object({
      family: deviceFamily,
      /** Taken this membership year: every device registered on it since the year began, and those still on it. */
      used: z.int(),
      free: z.int(),
      limit: z.int(),
    }),
  ),
});
export type DeveloperAccount = z.infer<typeof developerAccount>;
export const developerAccounts = z.array(developerAccount);

const renewalDate = z.nullable(
  z
    .string({ error: 'Give the membership renewal date as YYYY-MM-DD, or null.' })
    .check(
      z.regex(/^\d{4}-\d{2}-\d{2}$/, { error: 'Give the membership renewal date as YYYY-MM-DD, or null.' }),
    ),
);

/** POST /api/admin/accounts: a key added in the console (its private key is kept sealed with SECRET_KEY). */
export const addDeveloperAccountRequest = z.object({
  name: z.optional(
    z.string({ error: 'The name is text.' }).check(
      z.maxLength(64, { error: 'Account names are at most 64 characters.' }),
      // eslint-disable-next-line no-control-regex
      z.refine((name) => !/[\u0000-\u001f\u007f-\u009f]/.test(name), {
        error: 'Account names may not contain control characters.',
      }),
    ),
  ),
  key_id: z.string({ error: 'Give the key id shown beside the key in App Store Connect.' }).check(
    z.regex(/^[A-Za-z0-9]{6,20}$/, {
      error: 'The key id is the letters and digits shown beside the key in App Store Connect.',
    }),
  ),
  issuer_id: z.string({ error: 'Give the issuer id shown above the keys in App Store Connect.' }).check(
    z.regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, {
      error: 'The issuer id is the UUID shown above the keys in App Store Connect.',
    }),
  ),
  private_key: z.string({ error: 'Give the text of the AuthKey .p8 file.' }).check(
    z.maxLength(4096, {
      error: 'The private key is the text of the AuthKey .p8 file, a few hundred characters.',
    }),
  ),
  membership_renews_at: z.optional(renewalDate),
});
export type AddDeveloperAccountRequest = z.infer<typeof addDeveloperAccountRequest>;

/** PATCH /api/admin/accounts/{id}: the membership renewal date. */
export const updateDeveloperAccountRequest = z.object({
  membership_renews_at: renewalDate,
});
