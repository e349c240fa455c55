import type { SignType } from '@sideport/contracts';
import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  boolean,
  index,
  integer,
  jsonb,
  pgSequence,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { users } from './accounts.js';

export type SignSource = 'version' | 'feather';

/**
 * Hands out claim turns: each claim of a sign takes the next, so a user's latest turn says when a
 * worker last took one of their signs (the claim serves the user served longest ago first).
 */
export const signClaimTurns = pgSequence('sign_claim_turns');
export type SignJobState = 'idle' | 'queued' | 'leased';

/**
 * A user's sign of one Done version in one mode (docs/product.md, Entities and fields; docs/architecture.md, Data and state machines), or of the
 * operator's Feather IPA (source 'feather', app ids 0): the job that makes it and the artifact it
 * made. `status` is what the version list shows (No -> Pending -> Process -> Done); `state` is the
 * job's: queued for a worker, leased by one (renewed while it signs; a lease that runs out puts
 * the job back), or idle. A new sign replaces the artifact only when it commits, under a new key.
 */
export const signRequests = pgTable(
  'sign_requests',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade', onUpdate: 'cascade' }),
    source: text('source').$type<SignSource>().notNull(),
    appId: bigint('app_id', { mode: 'number' }).notNull(),
    appVerId: bigint('app_ver_id', { mode: 'number' }).notNull(),
    /** The mode (packages/contracts, sign-modes.ts); PUT /api/sign takes no other. */
    signType: integer('sign_type').$type<SignType>().notNull(),
    status: text('status').$type<'No' | 'Pending' | 'Process' | 'Done'>().notNull(),
    state: text('state').$type<SignJobState>().notNull().default('idle'),
    /** The stored IPA to sign (a version's file); null for Feather, which each worker reads from FEATHER_IPA. */
    sourceKey: text('source_key'),
    /** What the artifact is called on the device (the manifest's title). */
    title: text('title').notNull(),
    /** Leases handed out: the attempt number a worker's lease names. */
    attempts: integer('attempts').notNull().default(0),
    /** Signs that failed: given up after SIGN_MAX_ATTEMPTS. */
    failures: integer('failures').notNull().default(0),
    /** Leases that ran out without a result (the worker died): given up only after SIGN_MAX_LOST_LEASES. */
    lostLeases: integer('lost_leases').notNull().default(0),
    /** The worker holding the lease: host, process and slot. */
    worker: text('worker'),
    leaseExpiresAt: timestamp('lease_expires_at', { withTimezone: true }),
    lastReason: text('last_reason'),
    requestedAt: timestamp('requested_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
    // The artifact: present once a sign committed, replaced by the next one that commits.
    /** Names the artifact in its signed URLs; a new artifact gets a new one. */
    artifactId: text('artifact_id'),
    fileKey: text('file_key'),
    /** When the signing material was read: a device registered after it is not in the artifact. */
    signedAt: timestamp('signed_at', { withTimezone: true }),
    /** The UDIDs its profile lists, sorted. */
    udids: jsonb('udids').$type<string[]>(),
    bundleId: text('bundle_id'),
    bundleVersion: text('bundle_version'),
    sizeBytes: bigint('size_bytes', { mode: 'number' }),
    /** Feather: the source file it was made from (size and modification time), to sign again when it changes. */
    sourceTag: text('source_tag'),
    // What an install preflight checks, recorded when the artifact commits so no IPA is read then
    // (docs/sign-service.md, Install preflight). Null on artifacts made before they were recorded.
    /** SHA-256 (hex) of the signing certificate's DER; signing_certificates holds it and its status. */
    certFingerprint: text('cert_fingerprint'),
    certNotBefore: timestamp('cert_not_before', { withTimezone: true }),
    certNotAfter: timestamp('cert_not_after', { withTimezone: true }),
    /** The embedded profile's UUID, expiry and DeveloperCertificates (their SHA-256 fingerprints). */
    profileUuid: text('profile_uuid'),
    profileExpiresAt: timestamp('profile_expires_at', { withTimezone: true }),
    profileCertificates: jsonb('profile_certificates').$type<string[]>(),
    /** A sign queued by recovery (a revoked or expiring certificate or profile), not by its owner: 'Re-signing'. */
    resigning: boolean('resigning').notNull().default(false),
    /** The artifact's last install or download: recovery re-signs the most recently used first. */
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    /** The claim turn (signClaimTurns) of this sign's last claim; null until a worker took it. */
    claimTurn: bigint('claim_turn', { mode: 'number' }),
  },
  (t) => [
    uniqueIndex('sign_requests_key').on(t.userId, t.source, t.appId, t.appVerId, t.signType),
    uniqueIndex('sign_requests_artifact_key').on(t.artifactId),
    index('sign_requests_version_idx').on(t.appId, t.appVerId),
    index('sign_requests_claim_idx')
      .on(t.requestedAt, t.id)
      .where(sql`${t.state} = 'queued'`),
    index('sign_requests_lease_idx')
      .on(t.leaseExpiresAt)
      .where(sql`${t.state} = 'leased'`),
    index('sign_requests_cert_idx').on(t.certFingerprint),
    index('sign_requests_turn_idx').on(t.userId, t.claimTurn),
  ],
);
