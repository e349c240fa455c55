/**
 * The App Store Connect settings, which the identity module owns and platform/config.ts combines
 * with the others (config.ts stays the one place the environment is read): the variables' schema,
 * the problems of the ones that only make sense together, and ASC_ACCOUNTS_FILE, the JSON list of
 * more developer accounts for the pool. A key is never shown in a problem's line.
 */
import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

/**
 * An App Store Connect key as the PKCS#8 PEM Apple issues (the AuthKey .p8), or undefined when
 * `pem` is not an unencrypted EC key on P-256. The same key in SEC1 ('-----BEGIN EC PRIVATE
 * KEY-----', as `openssl ec` writes it) is converted, so what is kept and signed with is PKCS#8.
 * The key itself is never shown.
 */
export function ascPrivateKeyPem(pem: string): string | undefined {
  try {
    const key = createPrivateKey(pem);
    if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
      return undefined;
    return key.export({ type: 'pkcs8', format: 'pem' }).toString().trim();
  } catch {
    return undefined;
  }
}

/** Whether `pem` is an App Store Connect key (ascPrivateKeyPem): P-256, PKCS#8 or SEC1. */
export function isAscPrivateKey(pem: string): boolean {
  return ascPrivateKeyPem(pem) !== undefined;
}

/** One more developer account, from ASC_ACCOUNTS_FILE. */
export interface AscAccountSetting {
  keyId: string;
  issuerId: string;
  privateKeyPem: string;
  name?: string;
  /** The membership renewal date (midnight UTC) the file gives. */
  membershipRenewsAt?: Date;
}

const ascAccountEntry = z.strictObject(
  {
    keyId: z
      .string({ error: 'keyId is the key id shown beside the key in App Store Connect' })
      .regex(
        /^[A-Za-z0-9]{6,20}$/,
        'keyId must be the key id shown beside the key in App Store Connect (letters and digits)',
      ),
    issuerId: z
      .string({ error: 'issuerId is the issuer id shown above the keys' })
      .regex(
        /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
        'issuerId must be the issuer id (a UUID) shown above the keys in App Store Connect',
      ),
    privateKey: z.string({ error: 'privateKey is the text of the AuthKey .p8 file' }).optional(),
    privateKeyFile: z.string({ error: 'privateKeyFile is the path of the AuthKey .p8 file' }).optional(),
    name: z.string({ error: 'name is text' }).max(64, 'name is at most 64 characters').optional(),
    membershipRenewsAt: z.iso.date({ error: 'membershipRenewsAt must be a date, YYYY-MM-DD' }).optional(),
  },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `unknown field ${issue.keys.join(', ')} (keyId, issuerId, privateKey or privateKeyFile, name, membershipRenewsAt)`
        : 'must be an object with keyId, issuerId and privateKey or privateKeyFile',
  },
);

/**
 * ASC_ACCOUNTS_FILE: a JSON list of `{keyId, issuerId, privateKey | privateKeyFile, name?,
 * membershipRenewsAt?}`; a privateKeyFile is taken from the list's own folder. One line per
 * problem, naming the account by its place in the list; a key is never shown.
 */
export function readAscAccounts(
  file: string,
  first: { keyId?: string | undefined; issuerId?: string | undefined },
): { accounts: AscAccountSetting[]; problems: string[] } {
  const where = (n: number) => `  ASC_ACCOUNTS_FILE: account ${n} of ${file}`;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return {
      accounts: [],
      problems: [`  ASC_ACCOUNTS_FILE: ${code ? `cannot read ${file} (${code})` : `${file} is not JSON`}`],
    };
  }
  if (!Array.isArray(raw))
    return { accounts: [], problems: [`  ASC_ACCOUNTS_FILE: ${file} must hold a JSON list of accounts`] };
  const accounts: AscAccountSetting[] = [];
  const problems: string[] = [];
  const keyIds = new Set([first.keyId]);
  const issuers = new Set([first.issuerId?.toLowerCase()]);
  raw.forEach((item: unknown, i) => {
    const n = i + 1;
    const parsed = ascAccountEntry.safeParse(item);
    if (!parsed.success) {
      problems.push(...parsed.error.issues.map((issue) => `${where(n)}: ${issue.message}`));
      return;
    }
    const entry = parsed.data;
    let pem = entry.privateKey;
    if (entry.privateKeyFile !== undefined) {
      const keyFile = path.resolve(path.dirname(file), entry.privateKeyFile);
      try {
        pem = readFileSync(keyFile, 'utf8');
      } catch (err) {
        problems.push(
          `${where(n)}: cannot read privateKeyFile ${keyFile} (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`,
        );
        return;
      }
    }
    pem = pem?.replace(/\\n/g, '\n').trim();
    if ((entry.privateKey === undefined) === (entry.privateKeyFile === undefined) || pem === undefined) {
      problems.push(`${where(n)}: give privateKey (the .p8 text) or privateKeyFile (its path), one of them`);
      return;
    }
    if (!isAscPrivateKey(pem))
      problems.push(
        `${where(n)}: the private key must be an AuthKey .p8 file (a PEM PRIVATE KEY on the P-256 curve)`,
      );
    if (keyIds.has(entry.keyId))
      problems.push(`${where(n)}: key ${entry.keyId} is listed twice (ASC_KEY_ID included)`);
    if (issuers.has(entry.issuerId.toLowerCase())) {
      problems.push(
        `${where(n)}: the team of issuer ${entry.issuerId} is listed twice (ASC_ISSUER_ID included): one key per team`,
      );
    }
    keyIds.add(entry.keyId);
    issuers.add(entry.issuerId.toLowerCase());
    accounts.push({
      keyId: entry.keyId,
      issuerId: entry.issuerId,
      privateKeyPem: ascPrivateKeyPem(pem) ?? pem,
      ...(entry.name === undefined ? {} : { name: entry.name }),
      ...(entry.membershipRenewsAt === undefined
        ? {}
        : { membershipRenewsAt: new Date(`${entry.membershipRenewsAt}T00:00:00Z`) }),
    });
  });
  return { accounts, problems };
}

/**
 * The App Store Connect variables of the configuration's schema: all three of the key's or none,
 * and none means the dev identity (docs/architecture.md, Topology).
 */
export const ascSettings = {
  ASC_KEY_ID: z
    .string()
    .regex(
      /^[A-Za-z0-9]{6,20}$/,
      'must be the key id shown beside the key in App Store Connect (letters and digits)',
    )
    .optional(),
  ASC_ISSUER_ID: z
    .string()
    .regex(
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
      'must be the issuer id (a UUID) shown above the keys in App Store Connect',
    )
    .optional(),
  /** The AuthKey_<id>.p8 text; literal \n for line breaks is accepted (one-line environment files). */
  ASC_PRIVATE_KEY: z
    .string()
    .transform((pem) => pem.replace(/\\n/g, '\n').trim())
    .refine(
      isAscPrivateKey,
      'must be the text of the AuthKey_<key id>.p8 file (a PEM PRIVATE KEY on the P-256 curve; \\n for line breaks is accepted)',
    )
    .transform((pem) => ascPrivateKeyPem(pem)!)
    .optional(),
  /**
   * More developer accounts for the pool (docs/sign-service.md, A pool of developer accounts): a
   * JSON file listing keys; the ASC_KEY_ID account stays the first one.
   */
  ASC_ACCOUNTS_FILE: z.string().optional(),
  /** Slots of each device family the pool fills on an account per membership year: Apple's 100, or fewer to keep some free. */
  ASC_DEVICES_PER_FAMILY: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .positive('must be above 0')
    .default(100)
    .pipe(z.number().max(100, "must be at most 100 (Apple's limit per family)")),
  /** A server speaking App Store Connect's API; Apple's when unset. */
  ASC_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
};

/** The App Store Connect settings as parsed. */
export interface AscSettings {
  ASC_KEY_ID?: string | undefined;
  ASC_ISSUER_ID?: string | undefined;
  ASC_PRIVATE_KEY?: string | undefined;
  ASC_ACCOUNTS_FILE?: string | undefined;
}

/** App Store Connect settings that only make sense together; one line per problem. */
export function ascProblems(c: AscSettings): string[] {
  const problems: string[] = [];
  const asc = [c.ASC_KEY_ID, c.ASC_ISSUER_ID, c.ASC_PRIVATE_KEY];
  if (asc.some((v) => v !== undefined) && asc.some((v) => v === undefined)) {
    for (const name of ['ASC_KEY_ID', 'ASC_ISSUER_ID', 'ASC_PRIVATE_KEY'] as const) {
      if (c[name] === undefined)
        problems.push(
          `  ${name}: required with the other App Store Connect settings (ASC_KEY_ID, ASC_ISSUER_ID, ASC_PRIVATE_KEY)`,
        );
    }
  }
  if (c.ASC_ACCOUNTS_FILE !== undefined && c.ASC_KEY_ID === undefined) {
    problems.push(
      '  ASC_ACCOUNTS_FILE: adds accounts to the one of ASC_KEY_ID: set ASC_KEY_ID, ASC_ISSUER_ID and ASC_PRIVATE_KEY too',
    );
  }
  return problems;
}
