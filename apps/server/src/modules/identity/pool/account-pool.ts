/**
 * A pool of Apple developer accounts (docs/sign-service.md, A pool of developer accounts). Apple
 * registers at most 100 devices of each family per account per membership year, and a removed
 * device frees no slot until the membership renews; the pool spreads devices over several
 * accounts, each its own signing identity (apple-identity.ts: its certificate, its profiles).
 *
 * - A paid device goes to an account with a free slot in its family, on its user's account while
 *   that has one; otherwise the user moves, every device, to an account with room for all of them
 *   (never split: a profile lists one team's devices, and each artifact is signed once per user).
 * - An account an admin disabled, or whose key Apple stopped taking, is left: each registration
 *   pass re-registers its users' devices on the others and has their apps signed again.
 * - A payment for a device no account can take is refused before the checkout.
 *
 * Decisions are made one at a time (an advisory lock) and recorded with the slots they take before
 * Apple is asked; no transaction is held while Apple answers.
 */
import type { Database } from '../../../db/client.js';
import type { EventBus } from '../../../platform/events.js';
import type { SecretBox } from '../../../platform/secrets.js';
import type { DeviceService } from '../../devices/service.js';
import type { AscClient } from '../asc-client.js';
import type { AscKey } from '../asc-transport.js';
import { createPoolAccounts, type ConfiguredAccount } from './accounts.js';
import { createPoolConsole } from './console.js';
import { createPlacement } from './placement.js';
import { createPoolRegistrar } from './registrar.js';
import { createPoolStart } from './start.js';
import { createTeamMoves } from './team-moves.js';

export interface AccountPoolDeps {
  db: Database;
  secrets: SecretBox;
  clock: () => Date;
  bus: Pick<EventBus, 'publish'>;
  devices: Pick<
    DeviceService,
    | 'registeredDevices'
    | 'setAppleDeviceId'
    | 'placementOf'
    | 'registeredOnAccounts'
    | 'usersWithDevicesOn'
    | 'setDeviceAccount'
    | 'moveDevicesTo'
    | 'adoptRegisteredDevices'
  >;
  /** Queues the users' Done signs again (modules/sign/resign.ts). */
  resign: { resignArtifacts(request: { userIds: string[]; reason: string }): Promise<unknown> };
  audit: (actor: string, action: string, subject: object) => Promise<void>;
  /** ASC_KEY_ID's account first (it stays the first one), then ASC_ACCOUNTS_FILE's; at least one. */
  configured: readonly ConfiguredAccount[];
  /** The App Store Connect client of a key (ASC_BASE_URL and the clock applied). */
  client: (key: AscKey) => AscClient;
  /** SIGN_P12: the first account's own certificate. */
  p12?: { bytes: Buffer; password: string } | undefined;
  /** ASC_DEVICES_PER_FAMILY: slots of each family the pool uses on an account (Apple's 100, or fewer). */
  slotsPerFamily: number;
  /** A key that answered within this long is trusted; past it a pass asks Apple whether it still works. */
  keyCheckMs?: number;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

/**
 * The pool, made of its parts: the accounts and their keys (accounts.ts), the start (start.ts),
 * where devices go (placement.ts), the registrar (registrar.ts) and the admin console
 * (console.ts). Each answer waits for the start.
 */
export function createAccountPool(deps: AccountPoolDeps) {
  const limit = deps.slotsPerFamily;
  const ready = createPoolStart(deps);
  const accounts = createPoolAccounts(deps);
  const teamMoves = createTeamMoves(deps);
  const placement = createPlacement({ ...deps, accounts, limit, ready, teamMoves });
  const registrar = createPoolRegistrar({ ...deps, accounts, placement, ready });
  const adminConsole = createPoolConsole({ ...deps, accounts, limit, ready });

  return {
    ready,
    /** The ASC_KEY_ID account's identity: what the console's identity card shows. */
    primary: accounts.primary.provider,
    registrar,
    identityOf: placement.identityOf,
    /** Each user's moves to another team, and whether they were told (team-moves.ts). */
    teamMoves,

    /** Every account's identity this process has a key for, the first account first. */
    async providers() {
      await ready();
      return accounts.providers();
    },

    /** The identity of an account by its id (a profile made there is deleted there). */
    providerOf: accounts.providerOf,

    paymentRefusal: placement.paymentRefusal,
    list: adminConsole.list,
    add: adminConsole.add,
    disable: adminConsole.disable,
    enable: adminConsole.enable,
    setRenewal: adminConsole.setRenewal,
  };
}

export type AccountPool = ReturnType<typeof createAccountPool>;
