import { and, eq, isNull, lt, ne, notInArray, or, sql } from 'drizzle-orm';
import type { Database } from '../../db/client.js';
import { copyProfiles, settings, signingCertificates, userProfiles } from '../../db/schema/index.js';

// ---- each user's provisioning profile ----

export type UserProfileRow = typeof userProfiles.$inferSelect;

export async function findUserProfile(db: Database, userId: string): Promise<UserProfileRow | undefined> {
  const [row] = await db.select().from(userProfiles).where(eq(userProfiles.userId, userId));
  return row;
}

export async function saveUserProfile(db: Database, row: UserProfileRow) {
  const { userId: _key, ...set } = row;
  await db.insert(userProfiles).values(row).onConflictDoUpdate({ target: userProfiles.userId, set });
}

export type CopyProfileRow = typeof copyProfiles.$inferSelect;

/** The profile of a DUP copy's explicit App ID for this user (modules/identity/signing.ts). */
export async function findCopyProfile(
  db: Database,
  userId: string,
  bundleId: string,
): Promise<CopyProfileRow | undefined> {
  const [row] = await db
    .select()
    .from(copyProfiles)
    .where(and(eq(copyProfiles.userId, userId), eq(copyProfiles.bundleId, bundleId)));
  return row;
}

export async function saveCopyProfile(db: Database, row: CopyProfileRow) {
  const { userId: _user, bundleId: _bundle, ...set } = row;
  await db
    .insert(copyProfiles)
    .values(row)
    .onConflictDoUpdate({ target: [copyProfiles.userId, copyProfiles.bundleId], set });
}

/** Users whose profile names none of the certificates `fingerprints`, or expires before `before`. */
export async function usersWithStaleProfiles(
  db: Database,
  fingerprints: string[],
  before: Date,
): Promise<string[]> {
  const rows = await db
    .select({ userId: userProfiles.userId })
    .from(userProfiles)
    .where(
      or(
        isNull(userProfiles.certificateFingerprint),
        fingerprints.length ? notInArray(userProfiles.certificateFingerprint, fingerprints) : sql`true`,
        lt(userProfiles.expiresAt, before),
      ),
    )
    .orderBy(userProfiles.userId);
  return rows.map((r) => r.userId);
}

// ---- the certificates signed with, and their OCSP answers ----

export type SigningCertificateRow = typeof signingCertificates.$inferSelect;

/** Once per certificate: a second insert of the same fingerprint changes nothing. */
export async function insertSigningCertificate(db: Database, row: typeof signingCertificates.$inferInsert) {
  await db.insert(signingCertificates).values(row).onConflictDoNothing();
}

export async function findSigningCertificate(
  db: Database,
  fingerprint: string,
): Promise<SigningCertificateRow | undefined> {
  const [row] = await db
    .select()
    .from(signingCertificates)
    .where(eq(signingCertificates.fingerprint, fingerprint));
  return row;
}

export async function setCertificateIssuer(db: Database, fingerprint: string, issuerPem: string) {
  await db
    .update(signingCertificates)
    .set({ issuerPem })
    .where(eq(signingCertificates.fingerprint, fingerprint));
}

/** A responder's answer (or why none came); a revoked certificate stays revoked whatever comes later. */
export async function saveOcspAnswer(
  db: Database,
  fingerprint: string,
  answer: Partial<
    Pick<SigningCertificateRow, 'ocspStatus' | 'revokedAt' | 'checkedAt' | 'nextCheckAt' | 'ocspError'>
  >,
): Promise<SigningCertificateRow | undefined> {
  const [row] = await db
    .update(signingCertificates)
    .set(answer)
    .where(
      and(
        eq(signingCertificates.fingerprint, fingerprint),
        or(isNull(signingCertificates.ocspStatus), ne(signingCertificates.ocspStatus, 'revoked')),
      ),
    )
    .returning();
  return row ?? findSigningCertificate(db, fingerprint);
}

export async function markCertificateReplaced(db: Database, fingerprint: string, at: Date, reason: string) {
  await db
    .update(signingCertificates)
    .set({ replacedAt: at, replacedReason: reason })
    .where(and(eq(signingCertificates.fingerprint, fingerprint), isNull(signingCertificates.replacedAt)));
}

// ---- the settings the identities keep (sealed) ----

export { readSetting, writeSetting } from '../../db/settings.js';

// ---- the distribution certificate Sideport had Apple issue ----

const CREATED_IDENTITY_SETTING = 'apple_signing_identity';
// pg_advisory_xact_lock key: one process at a time makes the certificate (Apple allows only a few).
const CREATE_LOCK_KEY = 0x5349_4750; // 'SIGP'

/**
 * The setting that keeps the certificate of a developer account of the pool (its row's id, which a
 * new key of the same team keeps); the first account's is the one it always was.
 */
export const createdIdentitySetting = (accountId?: number) =>
  accountId === undefined ? CREATED_IDENTITY_SETTING : `${CREATED_IDENTITY_SETTING}:account-${accountId}`;

/** The certificate and key as stored (sealed with SECRET_KEY); undefined until one was made. */
export async function findCreatedIdentity(
  db: Database,
  key = CREATED_IDENTITY_SETTING,
): Promise<string | undefined> {
  const [row] = await db.select().from(settings).where(eq(settings.key, key));
  return row?.value;
}

export async function saveCreatedIdentity(
  db: Database,
  sealed: string,
  key = CREATED_IDENTITY_SETTING,
): Promise<void> {
  await db
    .insert(settings)
    .values({ key, value: sealed })
    .onConflictDoUpdate({ target: settings.key, set: { value: sealed } });
}

/** Held until the caller's transaction ends: several processes make one certificate, not one each. */
export async function lockCertificateMaking(tx: Database): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(${CREATE_LOCK_KEY})`);
}
