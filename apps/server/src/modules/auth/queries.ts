import { and, eq, gt, lt, lte, sql } from 'drizzle-orm';
import type { Database } from '../../db/client.js';
import { navigationTokens, rateLimits, sessions, settings, users } from '../../db/schema/index.js';

export type UserRow = typeof users.$inferSelect;

export async function findUserById(db: Database, id: string): Promise<UserRow | undefined> {
  const [row] = await db
    .select()
    .from(users)
    .where(sql`lower(${users.id}) = lower(${id})`)
    .limit(1);
  return row;
}

/** Inserts the user; returns false when the id (case-insensitively) is taken. */
export async function insertUser(db: Database, user: { id: string; passwordHash: string; grade?: number }) {
  const inserted = await db.insert(users).values(user).onConflictDoNothing().returning({ id: users.id });
  return inserted.length === 1;
}

export async function updateUserGrade(db: Database, id: string, grade: number) {
  const updated = await db
    .update(users)
    .set({ grade })
    .where(sql`lower(${users.id}) = lower(${id})`)
    .returning({ id: users.id });
  return updated.length === 1;
}

/** Sets a new password and ends every session of the account, in one transaction. */
export async function replacePassword(db: Database, id: string, passwordHash: string) {
  await db.transaction(async (tx) => {
    await tx.update(users).set({ passwordHash }).where(eq(users.id, id));
    await tx.delete(sessions).where(eq(sessions.userId, id));
  });
}

export async function insertSession(db: Database, session: typeof sessions.$inferInsert) {
  await db.insert(sessions).values(session);
}

export async function findSessionUser(db: Database, tokenHash: string, now: Date) {
  const [row] = await db
    .select({ id: users.id, grade: users.grade, expiresAt: sessions.expiresAt })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(and(eq(sessions.tokenHash, tokenHash), gt(sessions.expiresAt, now)))
    .limit(1);
  return row;
}

export async function deleteSession(db: Database, tokenHash: string) {
  await db.delete(sessions).where(eq(sessions.tokenHash, tokenHash));
}

export async function deleteExpiredSessions(db: Database, now: Date) {
  await db.delete(sessions).where(lt(sessions.expiresAt, now));
}

/**
 * Counts one hit in a fixed window, atomically (one statement, so concurrent API processes agree).
 * Returns the count in the current window, this hit included.
 */
export async function hitRateLimit(db: Database, key: string, now: Date, windowMs: number): Promise<number> {
  const resetAt = new Date(now.getTime() + windowMs);
  const [row] = await db
    .insert(rateLimits)
    .values({ key, count: 1, resetAt })
    .onConflictDoUpdate({
      target: rateLimits.key,
      set: {
        count: sql`case when ${rateLimits.resetAt} <= ${now.toISOString()}::timestamptz then 1 else ${rateLimits.count} + 1 end`,
        resetAt: sql`case when ${rateLimits.resetAt} <= ${now.toISOString()}::timestamptz then ${resetAt.toISOString()}::timestamptz else ${rateLimits.resetAt} end`,
      },
    })
    .returning({ count: rateLimits.count });
  return row?.count ?? 1;
}

/** The count of `key` in its current window, without counting a hit (0 when none or ended). */
export async function readRateLimit(db: Database, key: string, now: Date): Promise<number> {
  const [row] = await db
    .select({ count: rateLimits.count })
    .from(rateLimits)
    .where(and(eq(rateLimits.key, key), gt(rateLimits.resetAt, now)));
  return row?.count ?? 0;
}

export async function clearRateLimit(db: Database, key: string) {
  await db.delete(rateLimits).where(eq(rateLimits.key, key));
}

/** Counters whose window has ended: the next hit starts them afresh anyway. */
export async function deleteEndedRateLimits(db: Database, now: Date) {
  await db.delete(rateLimits).where(lte(rateLimits.resetAt, now));
}

/** Whether any account has a grade above 0. */
export async function hasAdmin(db: Database): Promise<boolean> {
  const [row] = await db.select({ id: users.id }).from(users).where(gt(users.grade, 0)).limit(1);
  return row !== undefined;
}

export { readSetting, writeSetting } from '../../db/settings.js';

/** Deletes `key` only while it still holds `value`; true when this call deleted it (a use of a one-time value). */
export async function takeSetting(db: Database, key: string, value: string): Promise<boolean> {
  const deleted = await db
    .delete(settings)
    .where(and(eq(settings.key, key), eq(settings.value, value)))
    .returning({ key: settings.key });
  return deleted.length === 1;
}

export async function deleteSetting(db: Database, key: string) {
  await db.delete(settings).where(eq(settings.key, key));
}

export async function insertNavigationToken(db: Database, token: typeof navigationTokens.$inferInsert) {
  await db.insert(navigationTokens).values(token);
}

/** Deletes the token if it is this user's, for this path and unexpired: true when it was (so it works once). */
export async function takeNavigationToken(
  db: Database,
  token: { tokenHash: string; userId: string; path: string; now: Date },
) {
  const taken = await db
    .delete(navigationTokens)
    .where(
      and(
        eq(navigationTokens.tokenHash, token.tokenHash),
        eq(navigationTokens.userId, token.userId),
        eq(navigationTokens.path, token.path),
        gt(navigationTokens.expiresAt, token.now),
      ),
    )
    .returning({ tokenHash: navigationTokens.tokenHash });
  return taken.length === 1;
}

export async function deleteExpiredNavigationTokens(db: Database, now: Date) {
  await db.delete(navigationTokens).where(lt(navigationTokens.expiresAt, now));
}
