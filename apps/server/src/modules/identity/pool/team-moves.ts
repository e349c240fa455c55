/**
 * Each move of a user's devices to another developer account, kept per user (team_moves): the
 * apps signed after it belong to another team, whose keychain and app group containers are not the
 * old team's, so an app installed over its old copy starts signed out. The user is told before the
 * first install of an app signed by the new team (the sign service asks `pending`), and says they
 * read it (`acknowledge`).
 */
import { and, desc, eq, isNull } from 'drizzle-orm';
import type { Database } from '../../../db/client.js';
import { teamMoves } from '../../../db/schema/index.js';

export type TeamMove = typeof teamMoves.$inferSelect;

export function createTeamMoves({ db, clock }: { db: Database; clock: () => Date }) {
  return {
    async record(move: Omit<TeamMove, 'id' | 'movedAt' | 'acknowledgedAt'>): Promise<void> {
      await db.insert(teamMoves).values({ ...move, movedAt: clock() });
    },

    /** The user's latest move they have not been told of; undefined when there is none. */
    async pending(userId: string): Promise<TeamMove | undefined> {
      const [row] = await db
        .select()
        .from(teamMoves)
        .where(and(eq(teamMoves.userId, userId), isNull(teamMoves.acknowledgedAt)))
        .orderBy(desc(teamMoves.movedAt), desc(teamMoves.id))
        .limit(1);
      return row;
    },

    /** The user read what the moves mean for their apps. */
    async acknowledge(userId: string): Promise<void> {
      await db
        .update(teamMoves)
        .set({ acknowledgedAt: clock() })
        .where(and(eq(teamMoves.userId, userId), isNull(teamMoves.acknowledgedAt)));
    },

    /** Every move of the user, newest first (the admin console). */
    async of(userId: string): Promise<TeamMove[]> {
      return db.select().from(teamMoves).where(eq(teamMoves.userId, userId)).orderBy(desc(teamMoves.movedAt));
    },
  };
}

export type TeamMoves = ReturnType<typeof createTeamMoves>;
