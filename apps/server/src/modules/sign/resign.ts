import type { Database } from '../../db/client.js';
import type { EventBus } from '../../platform/events.js';
import * as q from './queries.js';
import { publishSign } from './sign-events.js';

export interface ResignDeps {
  db: Database;
  clock: () => Date;
  bus: Pick<EventBus, 'publish'>;
  log: { info(obj: object, msg: string): void };
}

/** What asks for a user's artifacts to be signed again, and why. */
export interface ResignRequest {
  userIds: readonly string[];
  /** Said in the log: what made the artifacts stale. */
  reason: string;
}

/**
 * Signs the users' artifacts again: every Done sign of theirs goes back to the queue (Pending),
 * its artifact still served until the new one commits, as a new sign request does. A sign under
 * way is left alone: it reads the signing material when it starts.
 */
export function createResigner({ db, clock, bus, log }: ResignDeps) {
  return {
    async resignArtifacts({ userIds, reason }: ResignRequest): Promise<number> {
      if (userIds.length === 0) return 0;
      const rows = await db.transaction(async (tx) => {
        const queued = await q.requeueDoneSignsOf(tx, userIds, clock());
        for (const row of queued) await publishSign(bus, row, tx);
        return queued;
      });
      log.info({ users: userIds.length, signs: rows.length, reason }, 'artifacts queued to be signed again');
      return rows.length;
    },
  };
}

export type Resigner = ReturnType<typeof createResigner>;
