/**
 * What each account of the pool holds this membership year: the slots its devices took, the
 * users and devices on it now, and when its membership renews. Placement decides with it; the
 * admin console shows it.
 */
import type { DeviceFamily } from '@sideport/contracts';
import type { Database } from '../../../db/client.js';
import { familyOf } from '../../devices/family.js';
import type { DeviceService } from '../../devices/service.js';
import { membershipYear, noDevices, type Candidate } from './placement-rules.js';
import type * as pq from './queries.js';
import * as sq from './slot-queries.js';

export interface Usage extends Candidate {
  users: Set<string>;
  devices: number;
  nextRenewal: Date | null;
}

export async function usageOf(
  tx: Database,
  rows: readonly pq.AccountRow[],
  devices: Pick<DeviceService, 'registeredOnAccounts'>,
  now: Date,
): Promise<Map<number, Usage>> {
  const onAccounts = await devices.registeredOnAccounts(tx);
  const usage = new Map<number, Usage>();
  for (const row of rows) {
    const year = membershipYear(row.membershipRenewsAt, now);
    // A slot counts when taken this membership year, or while its device is still on the account.
    const slots = new Map<string, DeviceFamily>();
    for (const slot of await sq.slotsSince(tx, row.id, year.start)) slots.set(slot.udid, slot.family);
    const here = onAccounts.filter((d) => d.accountId === row.id);
    for (const device of here) slots.set(device.udid, familyOf(device));
    const used = noDevices();
    for (const family of slots.values()) used[family]++;
    usage.set(row.id, {
      id: row.id,
      used,
      held: new Set(slots.keys()),
      users: new Set(here.map((d) => d.userId)),
      devices: here.length,
      nextRenewal: year.nextRenewal,
    });
  }
  return usage;
}
