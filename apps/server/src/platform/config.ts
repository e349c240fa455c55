import { statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { parseStorageUrl } from './storage.js';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const optionalUrl = z.url({ error: 'must be an absolute URL' }).optional();
const positiveInt = (fallback: number) =>
  z.coerce.number({ error: 'must be a number' }).int('must be a whole number').positive('must be above 0').default(fallback);

/** Comma-separated file paths (empty items ignored); checked to exist once resolved. */
const pathList = z
  .string()
  .transform((v) => v.split(',').map((p) => p.trim()).filter((p) => p.length > 0))
  .optional();

/** Every variable Sideport reads. README's configuration reference lists the same names. */
const schema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number({ error: 'must be a number' }).int().min(0).max(65535, 'must be a port number').default(8080),
  HOST: z.string().min(1).default('0.0.0.0'),
  /** Public origin of the site (https://sideport.example). Used for cross-site checks and absolute links. */
  PUBLIC_URL: optionalUrl,
  TRUST_PROXY: bool.default(false),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  WEB_DIST_DIR: z.string().min(1).optional(),
  CHAT_URL: optionalUrl,
  CHANNEL_URL: optionalUrl,
  ADMIN_ID: z.string().optional(),
  ADMIN_PASSWORD: z.string().optional(),
  SESSION_TTL_DAYS: positiveInt(30),
  /** How long one process trusts a session lookup (sign-out on that process is immediate). */
  SESSION_CACHE_MS: z.coerce.number({ error: 'must be a number' }).int().min(0, 'must be 0 or more').default(2000),
  FREE_DAILY_LIMIT: positiveInt(3),
  BODY_LIMIT_BYTES: positiveInt(64 * 1024),
  SIGN_IN_LIMIT_PER_ID: positiveInt(10),
  SIGN_IN_LIMIT_PER_ADDRESS: positiveInt(30),
  SIGN_IN_WINDOW_MINUTES: positiveInt(15),
  // Catalogue: Apple's iTunes Search/Lookup APIs, or a local server speaking their wire format.
  ITUNES_BASE_URL: z.url({ error: 'must be an absolute URL' }).default('https://itunes.apple.com'),
  ITUNES_TIMEOUT_MS: positiveInt(4000),
  ITUNES_SEARCH_LIMIT: positiveInt(50).pipe(z.number().max(200, 'must be at most 200 (the store caps it)')),
  CATALOG_CACHE_MINUTES: positiveInt(60),
  /** How long one process reuses a list page or search answer; bounds how stale a list can be. */
  LIST_CACHE_MS: z.coerce.number({ error: 'must be a number' }).int().min(0, 'must be 0 or more').default(1000),
  // Billing: Stripe when STRIPE_SECRET_KEY is set (then the webhook secret and every price id are
  // required); otherwise the dev provider, a local test-mode checkout, refused in production
  // unless BILLING_DEV_ALLOWED=true.
  STRIPE_SECRET_KEY: z.string().optional(),
  STRIPE_WEBHOOK_SECRET: z.string().optional(),
  /** A server speaking Stripe's API (http://127.0.0.1:12111); Stripe itself when unset. */
  STRIPE_API_URL: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
  STRIPE_PRICE_MONTHLY_20: z.string().optional(),
  STRIPE_PRICE_YEARLY_20: z.string().optional(),
  STRIPE_PRICE_MONTHLY_50: z.string().optional(),
  STRIPE_PRICE_YEARLY_50: z.string().optional(),
  STRIPE_PRICE_RESET: z.string().optional(),
  STRIPE_PRICE_DEVICE: z.string().optional(),
  BILLING_DEV_ALLOWED: bool.default(false),
  // Decrypt pipeline (DESIGN.md sections 3, 7 and 9).
  /** s3://bucket[/prefix]?endpoint=...&region=...&forcePathStyle=true; files under DATA_DIR/files when unset. */
  STORAGE_URL: z
    .string()
    .refine((v) => {
      try {
        parseStorageUrl(v);
        return true;
      } catch {
        return false;
      }
    }, 'must look like s3://bucket?endpoint=https://...&region=...')
    .optional(),
  /** Key of the server's signed download URLs (32+ characters); made once and kept in the database when unset. */
  DOWNLOAD_URL_KEY: z.string().min(32, 'must be at least 32 characters').optional(),
  DOWNLOAD_URL_TTL_SECONDS: positiveInt(600),
  DECRYPT_ALLOW_PAID: bool.default(false),
  /** An agent that does not heartbeat within this many seconds loses its job back to the queue. */
  DECRYPT_LEASE_SECONDS: positiveInt(60),
  /** Attempts before an entry becomes Not with the last reason. */
  DECRYPT_MAX_ATTEMPTS: positiveInt(3),
  /** Largest IPA an agent may upload. */
  DECRYPT_MAX_IPA_MB: positiveInt(4096),
  // Sign service (DESIGN.md section 10).
  /**
   * Seals the keys and certificates kept in the database (32+ characters). Made and kept in
   * DATA_DIR/secret-key when unset; required in production and wherever several processes share
   * one database.
   */
  SECRET_KEY: z.string().min(32, 'must be at least 32 characters').optional(),
  /** Sign workers in each API process (0: none; `sideport worker` processes sign instead). */
  SIGN_WORKERS: z.coerce.number({ error: 'must be a number' }).int('must be a whole number').min(0, 'must be 0 or more').max(64, 'must be at most 64').default(1),
  /** A sign worker that does not renew its lease within this many seconds loses the job to another. */
  SIGN_LEASE_SECONDS: positiveInt(60),
  /** Attempts of a sign before it is given up with the last reason. */
  SIGN_MAX_ATTEMPTS: positiveInt(3),
  /** Dylibs injected in modes 1 and 3 (IAP), comma-separated paths; mode 1 and 3 are refused when unset. */
  SIGN_DYLIBS_IAP: pathList,
  /** Dylibs injected in modes 2 and 3 (IGG), comma-separated paths; mode 2 and 3 are refused when unset. */
  SIGN_DYLIBS_IGG: pathList,
  /** The operator's Feather IPA, signed for each user's devices (GET /api/feather/install); Feather is not offered when unset. */
  FEATHER_IPA: z.string().optional(),
  VERSIONS_WAIT_SECONDS: z.coerce.number({ error: 'must be a number' }).int().min(0).max(120, 'must be at most 120').default(20),
});

const STRIPE_REQUIRED = [
  'STRIPE_WEBHOOK_SECRET',
  'STRIPE_PRICE_MONTHLY_20',
  'STRIPE_PRICE_YEARLY_20',
  'STRIPE_PRICE_MONTHLY_50',
  'STRIPE_PRICE_YEARLY_50',
  'STRIPE_PRICE_RESET',
  'STRIPE_PRICE_DEVICE',
] as const;

/** Billing settings that only make sense together; one line per problem. */
function billingProblems(c: z.infer<typeof schema>): string[] {
  if (c.STRIPE_SECRET_KEY === undefined) {
    return c.NODE_ENV === 'production' && !c.BILLING_DEV_ALLOWED
      ? ['  STRIPE_SECRET_KEY: must be set in production (or set BILLING_DEV_ALLOWED=true for the test-mode checkout)']
      : [];
  }
  return STRIPE_REQUIRED.filter((name) => c[name] === undefined).map((name) => `  ${name}: required when STRIPE_SECRET_KEY is set`);
}

export type Config = Readonly<
  Omit<z.infer<typeof schema>, 'DATA_DIR' | 'WEB_DIST_DIR' | 'SIGN_DYLIBS_IAP' | 'SIGN_DYLIBS_IGG'> & {
    DATA_DIR: string;
    WEB_DIST_DIR: string;
    /** Absolute paths; empty when unset. */
    SIGN_DYLIBS_IAP: readonly string[];
    SIGN_DYLIBS_IGG: readonly string[];
  }
>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

// src/platform and dist/platform are both four levels below the repository root.
const repositoryRoot = path.resolve(import.meta.dirname, '../../../..');
const defaultWebDist = path.join(repositoryRoot, 'apps/web/dist');

/** Parses the environment once; a wrong value stops start-up with a message naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  // Empty strings mean "unset", as in most .env files.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const c = parsed.data;
  if ((c.ADMIN_ID === undefined) !== (c.ADMIN_PASSWORD === undefined)) {
    throw new ConfigError('Invalid configuration:\n  ADMIN_PASSWORD: ADMIN_ID and ADMIN_PASSWORD must be set together');
  }
  if (c.ADMIN_PASSWORD !== undefined && c.ADMIN_PASSWORD.length < 8) {
    throw new ConfigError('Invalid configuration:\n  ADMIN_PASSWORD: must be at least 8 characters');
  }
  if (c.NODE_ENV === 'production' && c.SECRET_KEY === undefined) {
    throw new ConfigError('Invalid configuration:\n  SECRET_KEY: must be set in production (32+ random characters)');
  }
  const billing = billingProblems(c);
  if (billing.length) throw new ConfigError(`Invalid configuration:\n${billing.join('\n')}`);
  // Files the sign service reads, from the repository root as DATA_DIR is: one line per missing file.
  const resolve = (p: string) => path.resolve(repositoryRoot, p);
  const files = {
    SIGN_DYLIBS_IAP: (c.SIGN_DYLIBS_IAP ?? []).map(resolve),
    SIGN_DYLIBS_IGG: (c.SIGN_DYLIBS_IGG ?? []).map(resolve),
    FEATHER_IPA: c.FEATHER_IPA === undefined ? undefined : resolve(c.FEATHER_IPA),
  };
  const missing = Object.entries(files).flatMap(([name, value]) =>
    [value ?? []].flat().filter((p) => !statSync(p, { throwIfNoEntry: false })?.isFile()).map((p) => `  ${name}: there is no file at ${p}`),
  );
  if (missing.length) throw new ConfigError(`Invalid configuration:\n${missing.join('\n')}`);
  return Object.freeze({
    ...c,
    ...files,
    // Relative paths are taken from the repository root, whichever folder the process starts in:
    // `npm start` runs in apps/server, `npx sideport` wherever the operator is, and both must meet
    // the same ./data.
    DATA_DIR: path.resolve(repositoryRoot, c.DATA_DIR),
    WEB_DIST_DIR: path.resolve(repositoryRoot, c.WEB_DIST_DIR ?? defaultWebDist),
  });
}
