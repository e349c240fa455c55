import { bigint, bigserial, index, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { users } from './accounts.js';

/**
 * Each time a user's devices moved to another developer account (modules/identity/pool/), and so
 * to another team: the apps signed after it keep none of the keychain items and app group data the
 * old team's signature kept. The user is told once (`acknowledgedAt`) before installing from it.
 */
export const teamMoves = pgTable(
  'team_moves',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade', onUpdate: 'cascade' }),
    fromAccountId: bigint('from_account_id', { mode: 'number' }),
    toAccountId: bigint('to_account_id', { mode: 'number' }).notNull(),
    /** The teams, as their certificates name them; null when not known at the move. */
    fromTeam: text('from_team'),
    toTeam: text('to_team'),
    reason: text('reason').notNull(),
    movedAt: timestamp('moved_at', { withTimezone: true }).notNull(),
    acknowledgedAt: timestamp('acknowledged_at', { withTimezone: true }),
  },
  (t) => [index('team_moves_user_idx').on(t.userId, t.movedAt)],
);
