import { bigserial, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * Who did what, and when (docs/architecture.md, Operator policy): an admin's or operator's change,
 * and what recovery and the account pool did by themselves.
 */
export const auditLog = pgTable('audit_log', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  actor: text('actor').notNull(),
  action: text('action').notNull(),
  subject: jsonb('subject').notNull(),
  at: timestamp('at', { withTimezone: true }).notNull().defaultNow(),
});
