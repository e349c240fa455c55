import type { Config } from './platform/config.js';
import type { BusEvent } from './platform/events.js';
import type { PeriodicTask, Scheduler } from './platform/scheduler.js';
import type { CoreServices, Services } from './services.js';

/**
 * What a process runs besides its requests, and the order it stops in: the same for the API
 * process (app.ts) and `sideport worker` (cli/worker.ts), so neither can drift from the other.
 */

/** How often every process returns the decrypt jobs and signs whose holder went quiet. */
const LEASE_SWEEP_MS = 5000;
/** How often pushes put off (a push service's Retry-After) are looked at without an event. */
const NOTIFY_MS = 15_000;

/** How often apps needing a new sign, ends nothing renews and plans ending are looked for. */
const REMINDER_MS = 3_600_000;

/** How often updates under way are looked at without an event (a missed one, another process's). */
const UPDATE_ADVANCE_MS = 30_000;

/** A version that became Done or Not, or a sign that ended: an update may wait on it. */
const isUpdateStep = (event: BusEvent) =>
  (event.kind === 'live' && event.event.type === 'version' && ['Done', 'Not'].includes(event.event.status)) ||
  event.kind === 'sign-settled';

/** How often an API process looks for devices whose check of Apple's wait is due. */
const APPLE_WAIT_CHECK_MS = 60_000;
/** Ended sessions and the sign-in counters of ended windows. */
const SESSION_PURGE_MS = 3_600_000;

/**
 * The periodic work of a process (platform/scheduler.ts), from one list: an API process runs all
 * of it; `sideport worker` the tasks of what it has (its sign leases, its files). The claim
 * queries skip rows another process takes, so every process may run each task at once.
 */
export function periodicTasks(
  config: Config,
  process: { role: 'api'; services: Services } | { role: 'worker'; services: CoreServices },
): PeriodicTask[] {
  const { services } = process;
  const everyProcess: PeriodicTask[] = [
    { name: 'sign-lease-sweep', intervalMs: LEASE_SWEEP_MS, run: () => services.signWorkers.sweep() },
    // Files nothing uses any more go, at start and periodically (one process at a time sweeps the store).
    ...(config.ORPHAN_SWEEP_MINUTES > 0
      ? [
          {
            name: 'file-sweep',
            intervalMs: config.ORPHAN_SWEEP_MINUTES * 60_000,
            runAtStart: true,
            run: () => services.fileSweep.sweep(),
          },
        ]
      : []),
    // Revoked or expiring certificates and profiles are replaced (one process at a time runs a pass).
    ...(config.RECOVERY_CHECK_MINUTES > 0
      ? [
          {
            name: 'recovery',
            intervalMs: config.RECOVERY_CHECK_MINUTES * 60_000,
            runAtStart: true,
            run: async () => void (await services.recovery.runPass('periodic check')),
          },
        ]
      : []),
  ];
  if (process.role === 'worker') return everyProcess;
  const { jobs, registration, auth, updates, bus, notificationSources, pushSender } = process.services;
  return [
    { name: 'decrypt-lease-sweep', intervalMs: LEASE_SWEEP_MS, run: () => jobs.sweepExpiredLeases() },
    ...everyProcess,
    // Paid devices are registered and old ones expire; a device change any process tells of starts a pass at once.
    ...(config.REGISTRATION_INTERVAL_SECONDS > 0
      ? [
          {
            name: 'device-registration',
            intervalMs: config.REGISTRATION_INTERVAL_SECONDS * 1000,
            run: () => registration.runPass(),
            wakeOn: (wake: () => void) => registration.onDeviceChange(wake),
          },
        ]
      : []),
    // Devices Apple left out of a new profile are checked again when due (each backs off on its own).
    {
      name: 'apple-wait-recheck',
      intervalMs: APPLE_WAIT_CHECK_MS,
      run: async () =>
        void (await process.services.appleWait.recheck(process.services.signing.signingMaterial)),
    },
    { name: 'session-purge', intervalMs: SESSION_PURGE_MS, run: () => auth.purgeExpiredSessions() },
    // New store versions of installed apps, each app once per interval for all its users, then automatic updates.
    ...(config.UPDATE_CHECK_MINUTES > 0
      ? [
          {
            name: 'update-check',
            intervalMs: config.UPDATE_CHECK_MINUTES * 60_000,
            runAtStart: true,
            run: () => updates.runPass(),
          },
        ]
      : []),
    // Notifications of what changed, then their pushes (a lease queue), as soon as either is heard of.
    {
      name: 'notify',
      intervalMs: NOTIFY_MS,
      run: async () => {
        await notificationSources.drain();
        await pushSender.run();
      },
      wakeOn: (wake: () => void) =>
        bus.subscribe((event) => {
          if (notificationSources.hear(event) || event.kind === 'push-queued') wake();
        }),
    },
    // What time brings (reminders.ts): told once per subject and end, whichever process finds it first.
    {
      name: 'reminders',
      intervalMs: REMINDER_MS,
      runAtStart: true,
      run: async () => void (await process.services.reminders.runPass()),
    },
    // Updates under way move on when a decryption or a sign of theirs changes, and periodically.
    {
      name: 'update-advance',
      intervalMs: UPDATE_ADVANCE_MS,
      run: () => updates.advance(),
      wakeOn: (wake: () => void) =>
        bus.subscribe((event) => {
          if (isUpdateStep(event)) wake();
        }),
    },
  ];
}

/**
 * Stops a process's services as it closes (the API's onClose, the worker's SIGINT or SIGTERM), in
 * this order: the periodic work, so no new pass starts; recovery's pass under way; the sign
 * workers, whose signs go back to the queue; the work after versions became Done; `served`, what
 * the process serves besides (the worker's metrics listener); last the event bus, which every
 * step before may still publish on. The database is the caller's, closed after.
 */
export async function stopServices(
  services: Pick<CoreServices, 'recovery' | 'signWorkers' | 'jobs' | 'bus'> &
    Partial<Pick<CoreServices, 'components'>>,
  scheduler: Pick<Scheduler, 'stop'>,
  served?: { close(): Promise<void> },
) {
  await scheduler.stop();
  await services.recovery.close();
  await services.signWorkers.stop();
  // Digest cache warm-ups that uploads did not wait for finish before the process ends (a worker
  // receives no uploads: nothing to wait for there).
  await services.jobs.settle();
  // Components of versions Done before, read on their first look, are kept before the database closes.
  await services.components?.settle();
  await served?.close();
  await services.bus.close();
}
