/**
 * The pool's start in each process: the configured accounts written to the database (a team's
 * new key keeps its account), and the devices registered on the one account of earlier versions
 * given their slots on the first account. Everything else the pool does waits for it.
 */
import { isUniqueViolation, type Database } from '../../../db/client.js';
import { familyOf } from '../../devices/family.js';
import type { DeviceService } from '../../devices/service.js';
import type { ConfiguredAccount } from './accounts.js';
import * as pq from './queries.js';
import * as sq from './slot-queries.js';

export interface PoolStartDeps {
  db: Database;
  clock: () => Date;
  devices: Pick<DeviceService, 'adoptRegisteredDevices'>;
  /** ASC_KEY_ID's account first, then ASC_ACCOUNTS_FILE's. */
  configured: readonly ConfiguredAccount[];
}

/** `ready()`: the start, run once; a failed start is run again by the next caller. */
export function createPoolStart({ db, clock, devices, configured }: PoolStartDeps): () => Promise<void> {
  const primaryKeyId = configured[0]!.keyId;

  async function start() {
    const now = clock();
    for (const account of configured) {
      // Twice: a process starting beside this one may insert the account first.
      for (let attempt = 1; ; attempt++) {
        const rows = await pq.listAccounts(db);
        // A new key of a team already in the pool (a rotated key) keeps its account: slots, devices, certificate.
        const same =
          rows.find((r) => r.keyId === account.keyId) ??
          rows.find((r) => r.issuerId.toLowerCase() === account.issuerId.toLowerCase());
        const fields = {
          keyId: account.keyId,
          issuerId: account.issuerId,
          name: account.name ?? same?.name ?? `Key ${account.keyId}`,
          membershipRenewsAt: account.membershipRenewsAt ?? null,
        };
        try {
          await (same
            ? pq.updateConfiguredAccount(db, same.id, fields)
            : pq.insertConfiguredAccount(db, fields));
          break;
        } catch (err) {
          if (!isUniqueViolation(err)) throw err;
          if (attempt === 2) {
            throw new Error(
              `Key ${account.keyId} (issuer ${account.issuerId}) belongs to another account of the pool than its team's. One key per team: remove one of them.`,
              { cause: err },
            );
          }
        }
      }
    }
    // Devices registered on the one account of earlier versions: on the first account, each a slot.
    const first = (await pq.listAccounts(db)).find((a) => a.keyId === primaryKeyId)!;
    await db.transaction(async (tx) => {
      await pq.lockPlacement(tx);
      for (const device of await devices.adoptRegisteredDevices(first.id, tx)) {
        await sq.takeSlot(tx, {
          accountId: first.id,
          udid: device.udid,
          family: familyOf(device),
          userId: device.userId,
          registeredAt: now,
        });
      }
    });
  }

  let started: Promise<void> | undefined;
  return () => {
    if (!started) {
      started = start();
      started.catch(() => (started = undefined));
    }
    return started;
  };
}
