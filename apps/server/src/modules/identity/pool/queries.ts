import { and, asc, eq, sql } from 'drizzle-orm';
import type { Database } from '../../../db/client.js';
import { developerAccounts } from '../../../db/schema/index.js';

// The pool of developer accounts (account-pool.ts): its accounts, and the lock its placement
// decisions take (the slots are slot-queries.ts).

export type AccountRow = typeof developerAccounts.$inferSelect;

// pg_advisory_xact_lock key: one placement decision at a time, in every process, so two devices
// never take the last slot of a family, and one user's devices never go two ways.
const PLACEMENT_LOCK_KEY = 0x5350_4c43; // 'SPLC'

/** Held until the caller's transaction ends. */
export async function lockPlacement(tx: Database): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(${PLACEMENT_LOCK_KEY})`);
}

export async function listAccounts(db: Database): Promise<AccountRow[]> {
  return db.select().from(developerAccounts).orderBy(asc(developerAccounts.id));
}

export async function findAccount(db: Database, id: number): Promise<AccountRow | undefined> {
  const [row] = await db.select().from(developerAccounts).where(eq(developerAccounts.id, id));
  return row;
}

/** What the configuration or the console says of an account. */
type AccountFields = { keyId: string; issuerId: string; name: string; membershipRenewsAt: Date | null };

/** A configured account seen for the first time. */
export async function insertConfiguredAccount(db: Database, account: AccountFields): Promise<AccountRow> {
  const [row] = await db
    .insert(developerAccounts)
    .values({ ...account, source: 'config' })
    .returning();
  return row!;
}

/**
 * An account as the configuration gives it at each start: its key (a team's new key replaces the
 * old), its name, and its renewal date when the configuration gives one. Its state stays the
 * database's (an admin may have disabled it).
 */
export async function updateConfiguredAccount(
  db: Database,
  id: number,
  account: AccountFields,
): Promise<void> {
  await db
    .update(developerAccounts)
    .set({
      keyId: account.keyId,
      issuerId: account.issuerId,
      name: account.name,
      source: 'config',
      sealedPrivateKey: null,
      ...(account.membershipRenewsAt === null ? {} : { membershipRenewsAt: account.membershipRenewsAt }),
    })
    .where(eq(developerAccounts.id, id));
}

export async function insertConsoleAccount(
  db: Database,
  account: AccountFields & { sealedPrivateKey: string },
): Promise<AccountRow> {
  const [row] = await db
    .insert(developerAccounts)
    .values({ ...account, source: 'console' })
    .returning();
  return row!;
}

export async function setAccountState(
  db: Database,
  id: number,
  change: { state: AccountRow['state']; reason: string | null; at: Date; onlyFrom?: AccountRow['state'] },
): Promise<AccountRow | undefined> {
  const [row] = await db
    .update(developerAccounts)
    .set({ state: change.state, stateReason: change.reason, stateChangedAt: change.at })
    .where(
      and(
        eq(developerAccounts.id, id),
        change.onlyFrom ? eq(developerAccounts.state, change.onlyFrom) : undefined,
      ),
    )
    .returning();
  return row;
}

export async function setMembershipRenewal(
  db: Database,
  id: number,
  renewsAt: Date | null,
): Promise<AccountRow | undefined> {
  const [row] = await db
    .update(developerAccounts)
    .set({ membershipRenewsAt: renewsAt })
    .where(eq(developerAccounts.id, id))
    .returning();
  return row;
}
