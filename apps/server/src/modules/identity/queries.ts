import { eq, sql } from 'drizzle-orm';
import type { Database } from '../../db/client.js';
import { settings, userProfiles } from '../../db/schema/index.js';

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
