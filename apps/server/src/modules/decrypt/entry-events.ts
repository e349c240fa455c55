import type { DecryptStatus, VersionEvent } from '@sideport/contracts';
import type { Database } from '../../db/client.js';
import type { EventBus } from '../../platform/events.js';

interface EntryLike {
  country: string;
  appId: number;
  appVerId: number | null;
  version: string | null;
  status: string;
  premium: boolean;
  progress?: number | null;
}

/** The live event of a decrypt entry as it now stands (or 'Deleted'). */
export function entryEvent(
  entry: EntryLike,
  extra: { deleted?: boolean; previousAppVerId?: number | null } = {},
): VersionEvent {
  return {
    type: 'version',
    country: entry.country,
    app_id: String(entry.appId),
    app_ver_id: entry.appVerId === null ? null : String(entry.appVerId),
    ...(extra.previousAppVerId !== undefined
      ? { previous_app_ver_id: extra.previousAppVerId === null ? null : String(extra.previousAppVerId) }
      : {}),
    version: entry.version,
    status: extra.deleted ? 'Deleted' : (entry.status as DecryptStatus),
    premium: entry.premium,
    progress: entry.progress ?? null,
  };
}

/** Tells every process (at commit, when `tx` is a transaction) that an entry changed. */
export function publishEntry(
  bus: Pick<EventBus, 'publish'>,
  entry: EntryLike,
  tx?: Database,
  extra?: { deleted?: boolean; previousAppVerId?: number | null },
) {
  return bus.publish({ kind: 'live', event: entryEvent(entry, extra) }, tx);
}
