import type { SignEvent } from '@sideport/contracts';
import type { Database } from '../../db/client.js';
import type { EventBus } from '../../platform/events.js';
import type { SignRow } from './queries.js';

/**
 * Tells the owner's open pages that a sign changed (version signs only: Feather has no place in
 * the version list), and, when it ended, any request waiting on it. At commit when `tx` is given.
 */
export async function publishSign(bus: Pick<EventBus, 'publish'>, row: SignRow, tx?: Database) {
  if (row.source === 'version') {
    const event: SignEvent = {
      type: 'sign',
      app_id: String(row.appId),
      app_ver_id: String(row.appVerId),
      sign_type: row.signType,
      status: row.status,
    };
    await bus.publish({ kind: 'live', event, userId: row.userId }, tx);
  }
  if (row.state === 'idle') await bus.publish({ kind: 'sign-settled', id: row.id }, tx);
  if (row.state === 'queued') await bus.publish({ kind: 'sign-queued' }, tx);
}
