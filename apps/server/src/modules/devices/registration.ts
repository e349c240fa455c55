/**
 * Registration of paid devices (docs/architecture.md, Data and state machines): Pending -> Process -> Registered, with the
 * operator's Apple developer account or the dev identity, and Registered -> Expired at expiry.
 *
 * Every API process runs passes (periodically, and when any process tells of a device change); the
 * claim statement takes one device at a time with SKIP LOCKED and a lease, so processes never
 * register the same device twice at once and a process that dies mid-registration loses the
 * device to another after the lease. No transaction is held while Apple is asked.
 */
import type { AdminDevice } from '@sideport/contracts';
import type { Database } from '../../db/client.js';
import { AppError, notFound, conflict } from '../../platform/errors.js';
import type { EventBus } from '../../platform/events.js';
import { faultPartOf, isDependencyFault, retryAfterMsOf, type FaultTracker } from '../../platform/faults.js';
import { noMetrics, type ServiceMetrics } from '../metrics/registry.js';
import * as q from './queries.js';

export interface RegistrationSettings {
  /** How long a worker holds a device in Process before another may take it over. */
  leaseSeconds: number;
  /** Failed attempts that retry by themselves (with backoff); after them an admin retries. */
  maxAttempts: number;
  /** First retry delay; doubled per attempt, capped at maxRetryDelayMs. */
  retryDelayMs: number;
  maxRetryDelayMs: number;
  /** Devices one pass registers at most. */
  batch: number;
}

export const DEFAULT_REGISTRATION_SETTINGS: RegistrationSettings = {
  leaseSeconds: 300,
  maxAttempts: 5,
  retryDelayMs: 60_000,
  maxRetryDelayMs: 3_600_000,
  batch: 50,
};

export interface DeviceToRegister {
  /** The device's row. */
  id: number;
  userId: string;
  udid: string;
  /** Model identifier ('iPhone15,2', 'Mac14,2'). */
  product: string;
  platform: 'IOS' | 'MAC_OS';
  /** The name it gets on the developer account. */
  name: string;
}

/**
 * What registration asks of the signing identity in use (modules/identity), whichever it is: to
 * register a paid device, and whether a refusal of it holds until a person acts.
 */
export interface DeviceRegistrar {
  /**
   * Registers a paid device with the developer account (Apple's id of it); absent, registration
   * succeeds at once (the dev identity). Throws an AppError with the admin's sentence otherwise.
   */
  registerDevice?(device: DeviceToRegister): Promise<{ appleDeviceId: string }>;
  /**
   * Whether `err`, thrown by registerDevice, repeats until a person acts (a new key, a free slot, a
   * new enrollment): the device then waits for an admin's retry instead of retrying by itself.
   */
  needsAPerson?(err: unknown): boolean;
  /**
   * Work of the identity's own at the start of every pass: a pool of developer accounts moves the
   * devices of an account no longer in use (modules/identity/pool/account-pool.ts).
   */
  beforePass?(): Promise<void>;
}

export interface RegistrationDeps {
  db: Database;
  clock: () => Date;
  bus: Pick<EventBus, 'publish' | 'subscribe'>;
  registrar: DeviceRegistrar;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  settings?: Partial<RegistrationSettings>;
  metrics?: Pick<ServiceMetrics, 'registration'>;
  /** Told when App Store Connect (or the database) is down and when it answers again. */
  faults?: Pick<FaultTracker, 'fault' | 'ok'>;
}

export interface PassOutcome {
  registered: number;
  failed: number;
  /** Macs that went to Process to wait for an admin. */
  awaitingConfirmation: number;
  /** Devices put off because App Store Connect was unavailable (not counted as attempts). */
  waiting: number;
  expired: number;
}

const TOKENS_KEPT_MS = 86_400_000;
/** Apple's device names are short; the account owner reads them in a list. */
const APPLE_NAME_MAX = 50;

/** The name a device gets on the developer account: whose it is and what it is. */
export function appleDeviceName(device: {
  userId: string;
  deviceName: string | null;
  product: string;
}): string {
  const label = `Sideport ${device.userId} ${device.deviceName ?? device.product}`;
  return label.length > APPLE_NAME_MAX ? label.slice(0, APPLE_NAME_MAX) : label;
}

export function createRegistrationService({
  db,
  clock,
  bus,
  registrar,
  log,
  settings: overrides,
  metrics = noMetrics,
  faults,
}: RegistrationDeps) {
  const settings = { ...DEFAULT_REGISTRATION_SETTINGS, ...overrides };
  const publish = (userId: string) => bus.publish({ kind: 'live', event: { type: 'device' }, userId });

  /** Why an attempt failed, for the admin console, and when it is tried again (null: an admin decides). */
  function failure(err: unknown, attempts: number): { reason: string; retryAt: Date | null } {
    const retryIn = Math.min(settings.retryDelayMs * 2 ** attempts, settings.maxRetryDelayMs);
    const later = new Date(clock().getTime() + retryIn);
    const reason =
      err instanceof AppError
        ? err.message
        : 'Registration failed unexpectedly; the server log has the details.';
    const automatic = !(registrar.needsAPerson?.(err) ?? false) && attempts + 1 < settings.maxAttempts;
    return { reason, retryAt: automatic ? later : null };
  }

  /**
   * Registrations wait until then: App Store Connect asked to be left alone (429 or 5xx, its
   * Retry-After), so no pass sends it the next devices meanwhile.
   */
  let pausedUntil = 0;

  /**
   * A part the registration needs is down (App Store Connect unavailable or rate-limited): the
   * device waits, Pending with the reason, until Apple's Retry-After (or the first retry delay);
   * the attempt is not counted, so an outage of any length never holds it for an admin.
   */
  async function waitForPart(device: q.DeviceRow, lease: Date, err: unknown) {
    const part = faultPartOf(err) ?? 'app_store_connect';
    faults?.fault(part, err);
    const waitMs = retryAfterMsOf(err) ?? settings.retryDelayMs;
    const retryAt = new Date(clock().getTime() + waitMs);
    pausedUntil = Math.max(pausedUntil, retryAt.getTime());
    log.warn({ deviceId: device.id, err, retryAt, part }, `device registration waits: ${part} unavailable`);
    const reason = err instanceof AppError ? err.message : 'The database is not answering right now.';
    const waited = await q.failRegistration(db, { id: device.id, lease, reason, retryAt, isCounted: false });
    if (!waited) return 'lost' as const;
    metrics.registration('retrying');
    await publish(device.userId);
    return 'waiting' as const;
  }

  async function registerOne(
    device: q.DeviceRow,
    lease: Date,
  ): Promise<'registered' | 'failed' | 'lost' | 'waiting'> {
    let appleDeviceId: string | null = null;
    try {
      if (registrar.registerDevice) {
        ({ appleDeviceId } = await registrar.registerDevice({
          id: device.id,
          userId: device.userId,
          udid: device.udid,
          product: device.product,
          platform: device.platform,
          name: appleDeviceName(device),
        }));
      }
    } catch (err) {
      if (isDependencyFault(err)) return waitForPart(device, lease, err);
      const { reason, retryAt } = failure(err, device.attempts);
      log.warn({ deviceId: device.id, err, retryAt }, 'device registration failed');
      const failed = await q.failRegistration(db, { id: device.id, lease, reason, retryAt });
      if (!failed) return 'lost';
      metrics.registration(retryAt ? 'retrying' : 'held');
      await publish(device.userId);
      return 'failed';
    }
    if (registrar.registerDevice) faults?.ok('app_store_connect');
    const done = await q.finishRegistration(db, {
      id: device.id,
      lease,
      years: device.paidYears,
      now: clock(),
      appleDeviceId,
    });
    if (!done) {
      // Paid again meanwhile, or taken over after the lease: the next claim finishes it.
      log.info({ deviceId: device.id }, 'device changed during registration; left to the next pass');
      return 'lost';
    }
    log.info({ deviceId: device.id, userId: device.userId, expiresAt: done.expiresAt }, 'device registered');
    metrics.registration('registered');
    await publish(device.userId);
    return 'registered';
  }

  async function pass(): Promise<PassOutcome> {
    const outcome: PassOutcome = {
      registered: 0,
      failed: 0,
      awaitingConfirmation: 0,
      expired: 0,
      waiting: 0,
    };
    // Its failure (Apple unreachable) does not stop the registrations that follow.
    await registrar
      .beforePass?.()
      .catch((err: unknown) =>
        log.warn({ err }, 'the signing identity could not prepare a registration pass'),
      );
    const expiredOwners = await q.expireDevices(db, clock());
    outcome.expired = expiredOwners.length;
    if (outcome.expired) metrics.registration('expired', outcome.expired);
    for (const userId of new Set(expiredOwners)) await publish(userId);
    await q.deleteEnrollmentTokensBefore(db, new Date(clock().getTime() - TOKENS_KEPT_MS));

    for (let i = 0; i < settings.batch && clock().getTime() >= pausedUntil; i++) {
      const now = clock();
      const lease = new Date(now.getTime() + settings.leaseSeconds * 1000);
      const device = await q.claimNextDevice(db, now, lease);
      if (!device) break;
      await publish(device.userId);
      if (device.leaseExpiresAt === null) {
        outcome.awaitingConfirmation++;
        metrics.registration('awaiting_confirmation');
        continue;
      }
      const result = await registerOne(device, lease);
      if (result === 'registered') outcome.registered++;
      if (result === 'failed') outcome.failed++;
      if (result === 'waiting') outcome.waiting++;
    }
    return outcome;
  }

  // Passes of this process run one after another; a pass asked for while one runs follows it.
  let tail: Promise<unknown> = Promise.resolve();
  let queued: Promise<PassOutcome> | undefined;
  function runPass(): Promise<PassOutcome> {
    if (queued) return queued;
    const next = tail.then(() => {
      queued = undefined;
      return pass();
    });
    queued = next;
    // Its caller hears of a failure (the scheduler logs it); the next pass runs regardless.
    tail = next.catch(() => {});
    return next;
  }

  function adminView(row: q.DeviceRow): AdminDevice {
    return {
      id: String(row.id),
      user: row.userId,
      product: row.product,
      udid: row.udid,
      name: row.deviceName,
      platform: row.platform,
      status: row.status,
      paid_years: row.paidYears,
      reason: row.reason,
      attempts: row.attempts,
      // A device waiting for Apple to list it (apple-wait.ts) is checked again by itself then.
      retry_at:
        row.appleWaitUntil?.toISOString() ??
        (row.reason !== null && row.retryAt !== null ? row.retryAt.toISOString() : null),
      awaiting_confirmation:
        row.status === 'Process' && row.leaseExpiresAt === null && row.appleWaitUntil === null,
      expired_date: row.expiresAt?.toISOString() ?? null,
      created_at: row.createdAt.toISOString(),
    };
  }

  return {
    /** One pass now (after any running one): expiries, then every device that is due. */
    runPass,

    /**
     * Calls `listener` when any process tells of a device change (a payment, an admin's
     * confirmation): a pass is due. Returns the function that stops listening.
     */
    onDeviceChange(listener: () => void): () => void {
      return bus.subscribe((event) => {
        if (event.kind === 'live' && event.event.type === 'device') listener();
      });
    },

    /** Devices waiting for registration, for the admin console. */
    async waiting(limit = 500): Promise<AdminDevice[]> {
      return (await q.listWaitingDevices(db, limit)).map(adminView);
    },

    /** An admin confirms a Mac waiting in Process: registration follows. */
    async confirm(id: number): Promise<AdminDevice> {
      const row = await q.confirmWaitingMac(db, id, clock());
      if (!row) {
        if (!(await q.findDevice(db, id))) throw notFound('This device');
        throw conflict('This device is not waiting for confirmation.');
      }
      await publish(row.userId);
      return adminView(row);
    },

    /** An admin retries a device whose registration failed (or whose worker is stuck). */
    async retry(id: number): Promise<AdminDevice> {
      const row = await q.retryRegistration(db, id, clock());
      if (!row) {
        const device = await q.findDevice(db, id);
        if (!device) throw notFound('This device');
        throw conflict(
          device.status === 'Process'
            ? 'This Mac waits for confirmation; confirm it instead.'
            : 'Only a paid device waiting for registration can be retried.',
        );
      }
      await publish(row.userId);
      return adminView(row);
    },
  };
}

export type RegistrationService = ReturnType<typeof createRegistrationService>;
