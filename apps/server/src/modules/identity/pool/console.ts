/**
 * The pool as the admin console sees and changes it (pool/routes.ts): each account's slots per
 * family, users and membership renewal; a key added (checked with Apple, then kept sealed), an
 * account disabled or enabled, a renewal date set. Every change is in the audit log.
 */
import { DEVICE_FAMILIES, type AddDeveloperAccountRequest, type DeveloperAccount } from '@sideport/contracts';
import { isUniqueViolation, type Database } from '../../../db/client.js';
import { badRequest, conflict, notFound } from '../../../platform/errors.js';
import type { SecretBox } from '../../../platform/secrets.js';
import type { DeviceService } from '../../devices/service.js';
import { isAscError } from '../asc-errors.js';
import type { AscClient } from '../asc-client.js';
import { ascPrivateKeyPem } from '../asc-settings.js';
import type { AscKey } from '../asc-transport.js';
import { SEALED_KEY_PURPOSE, type PoolAccounts } from './accounts.js';
import { isoDate, membershipYear } from './placement-rules.js';
import * as pq from './queries.js';
import { usageOf, type Usage } from './usage.js';

/**
 * A configured account whose key this process's configuration lacks: the process places no device
 * there and signs for nobody there, but leaves its devices be (another process may have the key,
 * and an admin decides: disabling it moves them).
 */
const NOT_CONFIGURED =
  "This server's configuration (ASC_KEY_ID or ASC_ACCOUNTS_FILE) has no key for it, so no device goes to it; disable it to move its devices.";

export interface PoolConsoleDeps {
  db: Database;
  secrets: SecretBox;
  clock: () => Date;
  devices: Pick<DeviceService, 'registeredOnAccounts'>;
  audit: (actor: string, action: string, subject: object) => Promise<void>;
  /** The App Store Connect client of a key: a key added is checked with Apple first. */
  client: (key: AscKey) => AscClient;
  accounts: Pick<PoolAccounts, 'primaryKeyId' | 'memberOf' | 'wakeUsersOf' | 'answered'>;
  /** ASC_DEVICES_PER_FAMILY: slots of each family the pool uses on an account. */
  limit: number;
  /** The pool's start (start.ts), which every answer waits for. */
  ready: () => Promise<void>;
}

export function createPoolConsole(deps: PoolConsoleDeps) {
  const { db, secrets, clock, devices, audit, accounts, limit, ready } = deps;

  async function view(row: pq.AccountRow, usage: Usage): Promise<DeveloperAccount> {
    const member = accounts.memberOf(row);
    const details = member?.provider.details
      ? await member.provider.details().catch(() => undefined)
      : undefined;
    return {
      id: String(row.id),
      name: row.name,
      key_id: row.keyId,
      issuer_id: row.issuerId,
      team_id: details?.teamId ?? null,
      source: row.source,
      primary: row.keyId === accounts.primaryKeyId,
      state: row.state,
      reason: row.state === 'enabled' ? (member ? null : NOT_CONFIGURED) : row.stateReason,
      membership_renews_at: usage.nextRenewal ? isoDate(usage.nextRenewal) : null,
      users: usage.users.size,
      devices: usage.devices,
      slots: DEVICE_FAMILIES.map((family) => ({
        family,
        used: usage.used[family],
        free: Math.max(0, limit - usage.used[family]),
        limit,
      })),
    };
  }

  async function viewOf(id: number): Promise<DeveloperAccount> {
    const row = await pq.findAccount(db, id);
    if (!row) throw notFound('This account');
    return view(row, (await usageOf(db, [row], devices, clock())).get(row.id)!);
  }

  /**
   * A renewal date as given (YYYY-MM-DD): a real date, and the next renewal at most a year away.
   * Kept as that next renewal (a past date rolls forward by years), so what is stored, shown and
   * audited is one date.
   */
  function renewalDate(text: string | null | undefined): Date | null {
    if (text === null || text === undefined) return null;
    const date = new Date(`${text}T00:00:00Z`);
    if (Number.isNaN(date.getTime()) || isoDate(date) !== text) {
      throw badRequest('Give the membership renewal date as YYYY-MM-DD, or null.');
    }
    const { nextRenewal } = membershipYear(date, clock());
    if (nextRenewal === null) {
      throw badRequest(
        'The membership renewal date is at most a year away: give the next renewal, as Apple shows it on the membership page.',
      );
    }
    return nextRenewal;
  }

  /** Apple's answer to a key: it works, or a sentence saying why not. */
  async function keyWorks(raw: AscClient): Promise<string | undefined> {
    try {
      await raw.listCertificates();
      return undefined;
    } catch (err) {
      if (isAscError(err) && err.kind === 'KEY_REJECTED') {
        // Apple's words only when Apple answered; a refusal of ours is ours.
        const why = err.apple
          ? `App Store Connect refused this key (${err.apple.detail ? `Apple said: "${err.apple.detail}"` : `status ${err.apple.status}, no explanation`}).`
          : err.message;
        return `${why} Check the key id, the issuer id and the .p8 text, and that the key has the Admin role.`;
      }
      throw err;
    }
  }

  return {
    /** GET /api/admin/accounts: the first account first, then in the order they joined. */
    async list(): Promise<DeveloperAccount[]> {
      await ready();
      const rows = await pq.listAccounts(db);
      const usage = await usageOf(db, rows, devices, clock());
      const views = await Promise.all(rows.map((row) => view(row, usage.get(row.id)!)));
      return views.sort((a, b) => Number(b.primary) - Number(a.primary));
    },

    /** POST /api/admin/accounts: a key checked with Apple, then kept sealed with SECRET_KEY. */
    async add(request: AddDeveloperAccountRequest, actor: string): Promise<DeveloperAccount> {
      await ready();
      const privateKeyPem = ascPrivateKeyPem(request.private_key.replace(/\\n/g, '\n').trim());
      if (!privateKeyPem) {
        throw badRequest(
          'The private key must be the text of the AuthKey .p8 file (a PEM PRIVATE KEY on the P-256 curve).',
        );
      }
      const renewsAt = renewalDate(request.membership_renews_at);
      const rows = await pq.listAccounts(db);
      const sameKey = rows.find((r) => r.keyId === request.key_id);
      if (sameKey) throw conflict(`Key ${request.key_id} is already in the pool (${sameKey.name}).`);
      const sameTeam = rows.find((r) => r.issuerId.toLowerCase() === request.issuer_id.toLowerCase());
      if (sameTeam) {
        throw conflict(
          `This team is already in the pool with key ${sameTeam.keyId} (${sameTeam.name}): one key per team, since its devices count once.`,
        );
      }
      const key = { keyId: request.key_id, issuerId: request.issuer_id, privateKeyPem };
      const refusal = await keyWorks(deps.client(key));
      if (refusal) throw badRequest(refusal);
      let row: pq.AccountRow;
      try {
        row = await pq.insertConsoleAccount(db, {
          keyId: key.keyId,
          issuerId: key.issuerId,
          name: request.name?.trim() || `Key ${key.keyId}`,
          sealedPrivateKey: secrets.seal(privateKeyPem, SEALED_KEY_PURPOSE),
          membershipRenewsAt: renewsAt,
        });
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict(`Key ${key.keyId} or its team is already in the pool.`);
        throw err;
      }
      await audit(actor, 'add-account', { id: String(row.id), key_id: row.keyId, name: row.name });
      return viewOf(row.id);
    },

    /** An admin takes an account out of the pool: its users' devices move to the others. */
    async disable(id: number, actor: string): Promise<DeveloperAccount> {
      await ready();
      const row = await pq.findAccount(db, id);
      if (!row) throw notFound('This account');
      if (row.state !== 'enabled') throw conflict('This account is already out of the pool.');
      const reason = `Disabled by ${actor} on ${isoDate(clock())}.`;
      await pq.setAccountState(db, id, { state: 'disabled', reason, at: clock() });
      await audit(actor, 'disable-account', { id: String(id), key_id: row.keyId });
      await accounts.wakeUsersOf(id);
      return viewOf(id);
    },

    /** An admin puts an account back in the pool, once Apple takes its key again. */
    async enable(id: number, actor: string): Promise<DeveloperAccount> {
      await ready();
      const row = await pq.findAccount(db, id);
      if (!row) throw notFound('This account');
      if (row.state === 'enabled') throw conflict('This account is already in the pool.');
      const member = accounts.memberOf(row);
      if (!member) {
        throw conflict(
          "This server's configuration (ASC_KEY_ID or ASC_ACCOUNTS_FILE) has no key for this account: put it back there first.",
        );
      }
      const refusal = await keyWorks(member.raw);
      if (refusal) throw conflict(refusal);
      accounts.answered(row.keyId);
      await pq.setAccountState(db, id, { state: 'enabled', reason: null, at: clock() });
      await audit(actor, 'enable-account', { id: String(id), key_id: row.keyId });
      return viewOf(id);
    },

    /** PATCH /api/admin/accounts/{id}: when the account's membership renews. */
    async setRenewal(id: number, renewsAt: string | null, actor: string): Promise<DeveloperAccount> {
      await ready();
      const date = renewalDate(renewsAt);
      const row = await pq.setMembershipRenewal(db, id, date);
      if (!row) throw notFound('This account');
      // What was stored: a past date is kept as the next renewal it rolls forward to.
      await audit(actor, 'set-account-renewal', {
        id: String(id),
        key_id: row.keyId,
        renews_at: row.membershipRenewsAt ? isoDate(row.membershipRenewsAt) : null,
      });
      return viewOf(id);
    },
  };
}
