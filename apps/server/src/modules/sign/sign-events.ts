import type { SignEvent } from '@sideport/contracts';
import type { Database } from '../../db/client.js';
import type { BusEvent, EventBus } from '../../platform/events.js';
import type { SignRow } from './queries.js';

/**
 * What a change of a sign tells: the owner's open pages (version signs only: Feather has no place
 * in the version list; `resigning` while recovery signs it again), and, when it ended, any request
 * waiting on it, or, when it was queued, the idle workers.
 */
export function signEvents(row: SignRow): BusEvent[] {
  const events: BusEvent[] = [];
  if (row.source === 'version') {
    const event: SignEvent = {
      type: 'sign',
      app_id: String(row.appId),
      app_ver_id: String(row.appVerId),
      sign_type: row.signType,
      status: row.status,
      ...(row.resigning ? { resigning: true } : {}),
    };
    events.push({ kind: 'live', event, userId: row.userId });
  }
  if (row.state === 'idle') events.push({ kind: 'sign-settled', id: row.id });
  if (row.state === 'queued') events.push({ kind: 'sign-queued' });
  return events;
}

/** Tells of a changed sign (signEvents), at commit when `tx` is given. */
export async function publishSign(
  bus: Pick<EventBus, 'publish' | 'publishMany'>,
  row: SignRow,
  tx?: Database,
) {
  await bus.publishMany(signEvents(row), tx);
}
