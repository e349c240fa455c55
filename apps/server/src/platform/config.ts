import { X509Certificate } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import {
  ID_MAX_LENGTH,
  ID_MIN_LENGTH,
  ID_PATTERN,
  isReservedId,
  PASSWORD_MIN_LENGTH,
} from '@sideport/contracts';
import { isIpaError, loadIdentity } from '@sideport/ipa';
import { z } from 'zod';
import {
  ascProblems,
  ascSettings,
  readAscAccounts,
  type AscAccountSetting,
} from '../modules/identity/asc-settings.js';
import { parseStorageUrl } from './storage.js';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const optionalUrl = z.url({ error: 'must be an absolute URL' }).optional();
const positiveInt = (fallback: number) =>
  z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .positive('must be above 0')
    .default(fallback);

/**
 * A setting that is a path may be relative: it is taken from the working directory, as every tool
 * does (`npm start` works in the folder npm was run from: src/npm-start.ts).
 */
const fromWorkingDirectory = (p: string) => path.resolve(p);

/** proxy-addr's names for ranges (loopback: 127.0.0.0/8 and ::1; link-local; unique local and private). */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An address, an address/prefix (CIDR), or one of PROXY_RANGE_NAMES. */
function isProxyRange(item: string): boolean {
  if (PROXY_RANGE_NAMES.has(item)) return true;
  const [address = '', prefix, extra] = item.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/**
 * TRUST_PROXY: which proxies' forwarding headers are believed (docs/security.md, Behind a reverse
 * proxy). `false` (the default): none, the client is the connection's peer. A number: that many
 * proxies in front, the client is the address the farthest of them saw (X-Forwarded-For read from
 * the right). `true`: one proxy, the usual nginx or Caddy in front; it used to believe every entry,
 * the leftmost one included, which the client writes itself. A list of addresses and ranges
 * (`127.0.0.1,10.0.0.0/8`, `loopback`): the client is the nearest address outside them.
 */
const trustProxy = z.string().transform((value, ctx): false | number | readonly string[] => {
  const v = value.trim().toLowerCase();
  if (['false', 'no', '0'].includes(v)) return false;
  if (['true', 'yes'].includes(v)) return 1;
  if (/^\d+$/.test(v)) {
    if (Number(v) <= 16) return Number(v);
    ctx.addIssue({ code: 'custom', message: 'must be at most 16 proxies' });
    return z.NEVER;
  }
  const ranges = v
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
  if (ranges.length > 0 && ranges.every(isProxyRange)) return Object.freeze(ranges);
  ctx.addIssue({
    code: 'custom',
    message:
      'must be false, true (one proxy), the number of proxies in front, or their addresses and ranges (127.0.0.1,10.0.0.0/8, loopback)',
  });
  return z.NEVER;
});

/** Comma-separated file paths (empty items ignored); checked to exist once resolved. */
const pathList = z
  .string()
  .transform((v) =>
    v
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p.length > 0),
  )
  .optional();

/** Every variable Sideport reads. README's configuration reference lists the same names. */
const schema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce
    .number({ error: 'must be a number' })
    .int()
    .min(0)
    .max(65535, 'must be a port number')
    .default(8080),
  HOST: z.string().min(1).default('0.0.0.0'),
  /** Public origin of the site (https://sideport.example). Used for cross-site checks and absolute links. */
  PUBLIC_URL: optionalUrl,
  TRUST_PROXY: trustProxy.default(false),
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
  SESSION_CACHE_MS: z.coerce
    .number({ error: 'must be a number' })
    .int()
    .min(0, 'must be 0 or more')
    .default(2000),
  FREE_DAILY_LIMIT: positiveInt(3),
  BODY_LIMIT_BYTES: positiveInt(64 * 1024),
  /** A request body from which no byte arrives for this long is answered 408 (docs/security.md, Limits). */
  BODY_IDLE_TIMEOUT_MS: positiveInt(30_000),
  /** A request body (an agent's upload aside) that has not come whole this long after its headers is answered 408. */
  BODY_TIMEOUT_MS: positiveInt(60_000),
  /** A request whose headers have not come whole this long after its first byte is answered 408 (Node's headersTimeout). */
  HEADERS_TIMEOUT_MS: positiveInt(20_000),
  /** The same bound for an agent's IPA upload, which may pause longer (a busy disk on the agent's side). */
  AGENT_UPLOAD_IDLE_TIMEOUT_MS: positiveInt(120_000),
  /** Event streams (/api/events) one session may hold open on one process; 429 past it. */
  EVENT_STREAMS_PER_SESSION: positiveInt(10),
  /** Event streams one user, over all their sessions, may hold open on one process; 429 past it. */
  EVENT_STREAMS_PER_USER: positiveInt(20),
  /** Event streams one process holds at most; unset or higher: half its open-file limit, read at start. */
  EVENT_STREAMS_MAX: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .positive('must be above 0')
    .optional(),
  SIGN_IN_LIMIT_PER_ID: positiveInt(10),
  SIGN_IN_LIMIT_PER_ADDRESS: positiveInt(30),
  SIGN_IN_WINDOW_MINUTES: positiveInt(15),
  // Catalogue: Apple's iTunes Search/Lookup APIs, or a local server speaking their wire format.
  ITUNES_BASE_URL: z.url({ error: 'must be an absolute URL' }).default('https://itunes.apple.com'),
  ITUNES_TIMEOUT_MS: positiveInt(4000),
  ITUNES_SEARCH_LIMIT: positiveInt(50).pipe(z.number().max(200, 'must be at most 200 (the store caps it)')),
  CATALOG_CACHE_MINUTES: positiveInt(60),
  /** How long one process reuses a list page or search answer; bounds how stale a list can be. */
  LIST_CACHE_MS: z.coerce
    .number({ error: 'must be a number' })
    .int()
    .min(0, 'must be 0 or more')
    .default(1000),
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
  /** Longest wait for one answer of Stripe's API; a call is tried 3 times before the user reads a 503. */
  STRIPE_TIMEOUT_MS: positiveInt(20_000),
  BILLING_DEV_ALLOWED: bool.default(false),
  // Decrypt pipeline (docs/architecture.md, Data and state machines and Operator policy; docs/agent-protocol.md).
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
  /** Failed attempts before an entry becomes Not with the last reason. */
  DECRYPT_MAX_ATTEMPTS: positiveInt(3),
  /** Lost leases (agents that stopped answering, were stopped or revoked) before an entry becomes Not. */
  DECRYPT_MAX_LOST_LEASES: positiveInt(10),
  /** Largest IPA an agent may upload. */
  DECRYPT_MAX_IPA_MB: positiveInt(4096),
  // Sign service (docs/sign-service.md).
  /**
   * Seals the keys and certificates kept in the database (32+ characters). Made and kept in
   * DATA_DIR/secret-key when unset; required in production and wherever several processes share
   * one database.
   */
  SECRET_KEY: z.string().min(32, 'must be at least 32 characters').optional(),
  // Apple developer account (App Store Connect API): registers devices and makes ad-hoc profiles;
  // checked by the identity module (modules/identity/asc-settings.ts).
  ...ascSettings,
  /** The operator's distribution identity (.p12 file); made through the API when unset. */
  SIGN_P12: z.string().optional(),
  SIGN_P12_PASSWORD: z.string().optional(),
  /** Signs the enrollment .mobileconfig (.p12 file), so iOS shows it as verified. */
  PROFILE_SIGNING_P12: z.string().optional(),
  PROFILE_SIGNING_P12_PASSWORD: z.string().optional(),
  /** Apple's device CA (PEM text, or a path to a PEM file): enrollment answers must chain to it. */
  DEVICE_CA_PEM: z.string().optional(),
  /**
   * How often this process looks for paid devices to register (and at once when any process tells
   * of a payment); 0: this process registers none, another must.
   */
  REGISTRATION_INTERVAL_SECONDS: z.coerce
    .number({ error: 'must be a number' })
    .int()
    .min(0, 'must be 0 or more')
    .max(3600, 'must be at most 3600')
    .default(10),
  // Install preflight and recovery (docs/sign-service.md).
  /** Asked about every signing certificate instead of the responder it names (tests, air-gapped operators). */
  OCSP_URL: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
  /** How long an OCSP answer is used at most (less when its nextUpdate is sooner); 0: ask at every check. */
  OCSP_CACHE_MINUTES: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(0, 'must be 0 or more')
    .max(1440, 'must be at most 1440')
    .default(60),
  /** A certificate or profile that expires within this many days is renewed, and what it signed signed again. */
  RENEW_BEFORE_DAYS: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(180, 'must be at most 180')
    .default(14),
  /** How often this process checks the signing certificate and profiles for recovery (and once at start); 0: never (another process must). */
  RECOVERY_CHECK_MINUTES: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(0, 'must be 0 or more')
    .max(1440, 'must be at most 1440')
    .default(5),
  /**
   * How often this process looks for new store versions of installed apps (an app is asked of the
   * store at most once in this long, for all its users); 0: never (another process must).
   */
  UPDATE_CHECK_MINUTES: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(0, 'must be 0 or more')
    .max(10080, 'must be at most 10080')
    .default(360),
  /**
   * VAPID's contact (RFC 8292 `sub`), a mailto: or https: URL push services may write to about
   * this server's pushes; unset: PUBLIC_URL when it is https, else mailto:operator@sideport.invalid.
   */
  VAPID_SUBJECT: z
    .string()
    .regex(/^(mailto:\S+@\S+|https:\/\/\S+)$/, 'must be a mailto: or https: URL')
    .optional(),
  /** Accept Web Push subscriptions whose push service is plain http (a local push service, as the tests run one). */
  PUSH_ALLOW_HTTP: bool.default(false),
  /** Automatic updates started per UTC day, for all users together; 0: none. */
  AUTO_UPDATE_DAILY_CAP: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(0, 'must be 0 or more')
    .default(200),
  /**
   * Days before a certificate or profile that installed apps depend on expires, with nothing to
   * renew it, that their owner is told (and an app recovery will not sign again needs a new sign).
   */
  EXPIRY_NOTICE_DAYS: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(90, 'must be at most 90')
    .default(7),
  /** Days before a premium plan that will not renew ends that its owner is told. */
  PLAN_ENDING_NOTICE_DAYS: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(30, 'must be at most 30')
    .default(3),
  /** Sign workers in each API process (0: none; `sideport worker` processes sign instead). */
  SIGN_WORKERS: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(0, 'must be 0 or more')
    .max(64, 'must be at most 64')
    .default(1),
  /** A sign worker that does not renew its lease within this many seconds loses the job to another. */
  SIGN_LEASE_SECONDS: positiveInt(60),
  /** Failed attempts of a sign before it is given up with the last reason. */
  SIGN_MAX_ATTEMPTS: positiveInt(3),
  /** Lost leases of a sign (its worker died) before it is given up. */
  SIGN_MAX_LOST_LEASES: positiveInt(10),
  /** Dylibs injected in modes 1 and 3 (IAP), comma-separated paths; mode 1 and 3 are refused when unset. */
  SIGN_DYLIBS_IAP: pathList,
  /** Dylibs injected in modes 2 and 3 (IGG), comma-separated paths; mode 2 and 3 are refused when unset. */
  SIGN_DYLIBS_IGG: pathList,
  /** The operator's Feather IPA, signed for each user's devices (GET /api/feather/install); Feather is not offered when unset. */
  FEATHER_IPA: z.string().optional(),
  /**
   * How often this process removes stored files no row names and stale temporary files (and once
   * at start); 0: never (another process must). Only files older than ORPHAN_MIN_AGE_MINUTES go.
   */
  ORPHAN_SWEEP_MINUTES: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(0, 'must be 0 or more')
    .max(1440, 'must be at most 1440')
    .default(60),
  /** Longer than any upload, stored file's commit or sign step takes: younger files are work under way. */
  ORPHAN_MIN_AGE_MINUTES: positiveInt(60),
  VERSIONS_WAIT_SECONDS: z.coerce
    .number({ error: 'must be a number' })
    .int()
    .min(0)
    .max(120, 'must be at most 120')
    .default(20),
  // Operations.
  /**
   * Asked to stop (SIGTERM), the process answers /readyz 503 this long while still serving, so a
   * load balancer or Kubernetes stops sending it requests, then drains (docs/architecture.md,
   * Upgrades without downtime). 0 for one process with nothing in front (the default).
   */
  SHUTDOWN_DRAIN_DELAY_MS: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(0, 'must be 0 or more')
    .max(120_000, 'must be at most 120000')
    .default(0),
  /** The longest a stop may take, the drain delay included: requests still running then are cut. */
  SHUTDOWN_TIMEOUT_MS: positiveInt(30_000),
  /** Free space the data disk keeps: uploads, signs and backups that would leave less are refused before writing. */
  DISK_MIN_FREE_MB: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(0, 'must be 0 or more')
    .default(512),
  /** Bearer token that GET /metrics requires of every caller; unset, only this machine (loopback) may read it. */
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Port of `sideport worker`'s own GET /metrics (0: any free one, named in its start-up line); unset, the worker serves none. */
  METRICS_PORT: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(0, 'must be a port number')
    .max(65535, 'must be a port number')
    .optional(),
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
      ? [
          '  STRIPE_SECRET_KEY: must be set in production (or set BILLING_DEV_ALLOWED=true for the test-mode checkout)',
        ]
      : [];
  }
  return STRIPE_REQUIRED.filter((name) => c[name] === undefined).map(
    (name) => `  ${name}: required when STRIPE_SECRET_KEY is set`,
  );
}

/**
 * ADMIN_ID and ADMIN_PASSWORD: both or neither, an id the sign-up form would take, and a password
 * of 8 characters or more that is not the id. One line per problem, read from the raw values so
 * they are listed beside variables that do not parse.
 */
function adminProblems(env: Record<string, string | undefined>): string[] {
  const { ADMIN_ID: id, ADMIN_PASSWORD: password } = env;
  if (id === undefined && password === undefined) return [];
  if (id === undefined || password === undefined) {
    return [
      `  ${id === undefined ? 'ADMIN_ID' : 'ADMIN_PASSWORD'}: ADMIN_ID and ADMIN_PASSWORD must be set together`,
    ];
  }
  const problems: string[] = [];
  if (id.length < ID_MIN_LENGTH || id.length > ID_MAX_LENGTH || !ID_PATTERN.test(id)) {
    problems.push(
      `  ADMIN_ID: must be ${ID_MIN_LENGTH} to ${ID_MAX_LENGTH} letters, digits and . _ @ - (an id the sign-up form takes)`,
    );
  } else if (isReservedId(id)) {
    problems.push(
      `  ADMIN_ID: ${id} is reserved (it names JavaScript's object machinery); choose another id`,
    );
  }
  if (password.length < PASSWORD_MIN_LENGTH) {
    problems.push(`  ADMIN_PASSWORD: must be at least ${PASSWORD_MIN_LENGTH} characters`);
  } else if (password.toLowerCase() === id.toLowerCase()) {
    problems.push('  ADMIN_PASSWORD: must not be the admin id');
  }
  return problems;
}

/** A PKCS#12 file that opens with its password; the line names the variables, never the password. */
function p12Problem(name: string, file: string, password: string | undefined): string | undefined {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    return `  ${name}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`;
  }
  try {
    loadIdentity({ p12: bytes, password: password ?? '' });
    return undefined;
  } catch (err) {
    const why = isIpaError(err) ? err.message : 'it does not parse';
    return `  ${name}: ${file} could not be opened with ${name}_PASSWORD: ${why}`;
  }
}

/** PEM text as given, or the text of the PEM file it names; undefined when neither holds a certificate. */
function readDeviceCa(value: string): string | undefined {
  let text = value.replace(/\\n/g, '\n');
  if (!text.includes('-----BEGIN')) {
    try {
      text = readFileSync(fromWorkingDirectory(value), 'utf8');
    } catch {
      return undefined;
    }
  }
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  try {
    for (const block of blocks) new X509Certificate(block);
  } catch {
    return undefined;
  }
  return blocks.length > 0 ? text : undefined;
}

/** Sign-service settings that only make sense together; one line per problem. */
function signingProblems(c: z.infer<typeof schema>): string[] {
  const problems: string[] = ascProblems(c);
  if (c.SIGN_P12 !== undefined && c.ASC_KEY_ID === undefined) {
    problems.push(
      '  SIGN_P12: is used with an App Store Connect key: set ASC_KEY_ID, ASC_ISSUER_ID and ASC_PRIVATE_KEY too',
    );
  }
  for (const [name, file, password] of [
    ['SIGN_P12', c.SIGN_P12, c.SIGN_P12_PASSWORD],
    ['PROFILE_SIGNING_P12', c.PROFILE_SIGNING_P12, c.PROFILE_SIGNING_P12_PASSWORD],
  ] as const) {
    if (file === undefined) {
      if (password !== undefined) problems.push(`  ${name}_PASSWORD: set without ${name}`);
      continue;
    }
    const problem = p12Problem(name, fromWorkingDirectory(file), password);
    if (problem) problems.push(problem);
  }
  if (c.DEVICE_CA_PEM !== undefined && readDeviceCa(c.DEVICE_CA_PEM) === undefined) {
    problems.push(
      "  DEVICE_CA_PEM: must be PEM certificates (Apple's device CA) or the path of a file holding them",
    );
  }
  return problems;
}

export type Config = Readonly<
  Omit<z.infer<typeof schema>, 'DATA_DIR' | 'WEB_DIST_DIR' | 'SIGN_DYLIBS_IAP' | 'SIGN_DYLIBS_IGG'> & {
    DATA_DIR: string;
    WEB_DIST_DIR: string;
    /** The accounts of ASC_ACCOUNTS_FILE, read and checked; empty when unset. */
    ASC_ACCOUNTS: readonly AscAccountSetting[];
    /** Absolute paths; empty when unset. */
    SIGN_DYLIBS_IAP: readonly string[];
    SIGN_DYLIBS_IGG: readonly string[];
  }
>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

// The web app built beside this server: src/platform and dist/platform are both four levels below the repository root.
const defaultWebDist = path.resolve(import.meta.dirname, '../../../..', 'apps/web/dist');

/** Parses the environment once; a wrong value stops start-up with a message naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  // Empty strings mean "unset", as in most .env files.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(cleaned);
  const admin = adminProblems(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${[...lines, ...admin].join('\n')}`);
  }
  const c = parsed.data;
  // Files the sign service reads: one line per missing file.
  const files = {
    SIGN_DYLIBS_IAP: (c.SIGN_DYLIBS_IAP ?? []).map(fromWorkingDirectory),
    SIGN_DYLIBS_IGG: (c.SIGN_DYLIBS_IGG ?? []).map(fromWorkingDirectory),
    FEATHER_IPA: c.FEATHER_IPA === undefined ? undefined : fromWorkingDirectory(c.FEATHER_IPA),
  };
  const ascFile = c.ASC_ACCOUNTS_FILE === undefined ? undefined : fromWorkingDirectory(c.ASC_ACCOUNTS_FILE);
  const ascAccounts =
    ascFile === undefined
      ? { accounts: [], problems: [] }
      : readAscAccounts(ascFile, { keyId: c.ASC_KEY_ID, issuerId: c.ASC_ISSUER_ID });
  const missing = Object.entries(files).flatMap(([name, value]) =>
    [value ?? []]
      .flat()
      .filter((p) => !statSync(p, { throwIfNoEntry: false })?.isFile())
      .map((p) => `  ${name}: there is no file at ${p}`),
  );
  const problems = [
    ...admin,
    ...(c.NODE_ENV === 'production' && c.SECRET_KEY === undefined
      ? ['  SECRET_KEY: must be set in production (32 or more random characters)']
      : []),
    ...billingProblems(c),
    ...signingProblems(c),
    ...ascAccounts.problems,
    ...missing,
  ];
  if (problems.length) throw new ConfigError(`Invalid configuration:\n${problems.join('\n')}`);
  return Object.freeze({
    ...c,
    ...files,
    DATA_DIR: fromWorkingDirectory(c.DATA_DIR),
    ...(ascFile === undefined ? {} : { ASC_ACCOUNTS_FILE: ascFile }),
    ASC_ACCOUNTS: ascAccounts.accounts,
    WEB_DIST_DIR: c.WEB_DIST_DIR === undefined ? defaultWebDist : fromWorkingDirectory(c.WEB_DIST_DIR),
    ...(c.SIGN_P12 === undefined ? {} : { SIGN_P12: fromWorkingDirectory(c.SIGN_P12) }),
    ...(c.PROFILE_SIGNING_P12 === undefined
      ? {}
      : { PROFILE_SIGNING_P12: fromWorkingDirectory(c.PROFILE_SIGNING_P12) }),
    ...(c.DEVICE_CA_PEM === undefined ? {} : { DEVICE_CA_PEM: readDeviceCa(c.DEVICE_CA_PEM)! }),
  });
}
