/**
 * Re-signing in the background (docs/sign-service.md, Revocation and expiry recovery): artifacts
 * that will not install much longer (their certificate revoked or replaced, their profile about to
 * expire, their owner's devices moved) are queued for a new sign, marked `resigning` so their
 * owners see 'Re-signing', and the sign workers take them after the signs people asked for, the
 * most recently installed or downloaded first. Each artifact is queued once however many
 * processes ask: only artifacts at rest are queued, in one statement.
 */
import type { Database } from '../../db/client.js';
import type { EventBus } from '../../platform/events.js';
import * as q from './queries.js';
import { signEvents } from './sign-events.js';

/** Who the audit log names for what recovery does. */
export const RECOVERY_ACTOR = 'system (recovery)';

export interface ResignRequest {
  /** Only these users' artifacts. */
  userIds?: string[];
  /** Only artifacts signed with these certificates (SHA-256 fingerprints). */
  certificateFingerprints?: string[];
  /** With certificateFingerprints: also artifacts signed before certificates were recorded. */
  includeUntracked?: boolean;
  /** Only artifacts whose profile expires before this. */
  profileExpiringBefore?: Date;
  /** Why, for the audit log. */
  reason: string;
}

export interface ResignServiceDeps {
  db: Database;
  clock: () => Date;
  bus: Pick<EventBus, 'publishMany'>;
  audit: (actor: string, action: string, subject: object) => Promise<void>;
}

export function createResignService({ db, clock, bus, audit }: ResignServiceDeps) {
  return {
    /**
     * Queues a re-sign of every Done artifact the request names (each condition given narrows it;
     * userIds or certificateFingerprints must be given) and tells their owners live. Returns how
     * many were queued; an artifact already queued or signing counts once, where it was queued.
     */
    async resignArtifacts(request: ResignRequest): Promise<{ queued: number }> {
      if (request.userIds === undefined && request.certificateFingerprints === undefined) {
        throw new Error(
          'resignArtifacts needs userIds or certificateFingerprints: it never re-signs everything by accident.',
        );
      }
      if (request.userIds?.length === 0) return { queued: 0 };
      if (request.certificateFingerprints?.length === 0 && !request.includeUntracked) return { queued: 0 };
      const rows = await db.transaction(async (tx) => {
        const queued = await q.queueResigns(tx, request, clock());
        // One wake-up for the workers, then each owner's event.
        const events = queued.flatMap((row) => signEvents(row).filter((e) => e.kind === 'live'));
        if (queued.length) await bus.publishMany([...events, { kind: 'sign-queued' }], tx);
        return queued;
      });
      if (rows.length > 0) {
        await audit(RECOVERY_ACTOR, 'resign-queued', {
          reason: request.reason,
          artifacts: rows.length,
          users: new Set(rows.map((r) => r.userId)).size,
          ...(request.certificateFingerprints ? { certificates: request.certificateFingerprints } : {}),
        });
      }
      return { queued: rows.length };
    },
  };
}

export type ResignService = ReturnType<typeof createResignService>;
