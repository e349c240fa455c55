import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { versions } from './catalog.js';

/**
 * A decrypt worker agent (docs/agent-protocol.md). The token is shown once when the agent is made;
 * only its sha256 is kept, so a copy of this table lets nobody act as an agent.
 */
export const agents = pgTable('agents', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  name: text('name').notNull(),
  tokenHash: text('token_hash').notNull().unique(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  lastSeenAt: timestamp('last_seen_at', { withTimezone: true }),
  doneCount: integer('done_count').notNull().default(0),
  failedCount: integer('failed_count').notNull().default(0),
});

export type JobState = 'queued' | 'leased' | 'done' | 'failed';

/**
 * Work for agents. A `decrypt` job belongs to one decrypt entry (`versions`) for its whole life; a
 * `versions` job asks for an app's version history. Agents claim the next queued job (highest
 * priority, then oldest) under a lease that heartbeats renew; an expired lease puts the job back,
 * and after the last failed attempt (or the last lost lease) the entry becomes Not with the reason.
 */
export const jobs = pgTable(
  'jobs',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    kind: text('kind').$type<'decrypt' | 'versions'>().notNull(),
    versionSeq: bigint('version_seq', { mode: 'number' }).references(() => versions.seq, {
      onDelete: 'cascade',
    }),
    country: text('country').notNull(),
    appId: bigint('app_id', { mode: 'number' }).notNull(),
    /** 2 versions (a person waits), 1 premium decrypt, 0 free decrypt. */
    priority: integer('priority').notNull().default(0),
    state: text('state').$type<JobState>().notNull().default('queued'),
    /** Leases handed out: the attempt number in the lease id (`{job}-{attempt}`). */
    attempts: integer('attempts').notNull().default(0),
    /** Attempts that ended in a failure (the command's, or the IPA refused): Not after DECRYPT_MAX_ATTEMPTS. */
    failures: integer('failures').notNull().default(0),
    /**
     * Leases lost without a result (the agent stopped answering, was stopped or revoked): counted
     * apart from failures, Not only after DECRYPT_MAX_LOST_LEASES, so kills alone do not end a job.
     */
    lostLeases: integer('lost_leases').notNull().default(0),
    agentId: bigint('agent_id', { mode: 'number' }).references(() => agents.id, { onDelete: 'set null' }),
    leaseExpiresAt: timestamp('lease_expires_at', { withTimezone: true }),
    /** What the agent learnt of an app-level job's version, applied when its upload is accepted. */
    reportedAppVerId: bigint('reported_app_ver_id', { mode: 'number' }),
    /** The version string the agent reported (its command's `version` line): the IPA must be that version. */
    reportedVersion: text('reported_version'),
    lastReason: text('last_reason'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    index('jobs_claim_idx')
      .on(t.priority.desc(), t.id)
      .where(sql`${t.state} = 'queued'`),
    index('jobs_lease_idx')
      .on(t.leaseExpiresAt)
      .where(sql`${t.state} = 'leased'`),
    uniqueIndex('jobs_version_key').on(t.versionSeq),
    // One open versions job per app: concurrent downgrades wait for the same answer.
    uniqueIndex('jobs_versions_open_key')
      .on(t.country, t.appId)
      .where(sql`${t.kind} = 'versions' and ${t.state} in ('queued', 'leased')`),
  ],
);

/** An app's version history as an agent's --versions-command last told it, newest first. */
export const storeVersionLists = pgTable(
  'store_version_lists',
  {
    country: text('country').notNull(),
    appId: bigint('app_id', { mode: 'number' }).notNull(),
    versions: jsonb('versions').$type<Array<{ appVerId: number; version: string }>>().notNull(),
    fetchedAt: timestamp('fetched_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.country, t.appId] })],
);

/** Values Sideport makes once and keeps (the download URL key when none is configured). */
export const settings = pgTable('settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
});
