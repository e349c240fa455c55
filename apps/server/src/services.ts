import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { DatabaseHandle } from './db/client.js';
import { createSetupChecklist } from './modules/admin/setup-checklist.js';
import { AGENT_ONLINE_WITHIN_MS, createAgentService } from './modules/agents/service.js';
import { createNavigationTokens } from './modules/auth/navigation-tokens.js';
import { createAuditLog, type RecordAudit } from './modules/audit/service.js';
import { createAuthService } from './modules/auth/service.js';
import { createSetupLinkService } from './modules/auth/setup-link.js';
import { createDevCheckout } from './modules/billing/dev-checkout.js';
import { createBillingService, createDecryptUsage } from './modules/billing/service.js';
import { createBillingProvider } from './modules/billing/setup.js';
import { createItunesClient } from './modules/catalog/itunes.js';
import { createCatalogService } from './modules/catalog/service.js';
import { createJobService } from './modules/decrypt/jobs.js';
import { createDecryptService, dropDecryptedFiles } from './modules/decrypt/service.js';
import { createEnrollmentService, enrollmentSettings } from './modules/devices/enrollment-service.js';
import { createAppleWait } from './modules/devices/apple-wait.js';
import { createRegistrationService } from './modules/devices/registration.js';
import { createDeviceService, type DeviceService } from './modules/devices/service.js';
import type { DeviceRegistrar } from './modules/devices/registration.js';
import { createAccountPool, type AccountPool } from './modules/identity/pool/account-pool.js';
import { createAscClient } from './modules/identity/asc-client.js';
import { createCertificateRegistry } from './modules/identity/certificates.js';
import { createDevIdentityProvider } from './modules/identity/dev-identity-provider.js';
import type { SigningIdentityProvider } from './modules/identity/ports.js';
import { createSigningService } from './modules/identity/signing.js';
import { createFileSweep } from './modules/files/sweep.js';
import { noMetrics, type ServiceMetrics } from './modules/metrics/registry.js';
import { createSideportMetrics } from './modules/metrics/service.js';
import { createRecovery } from './modules/sign/recovery.js';
import { createResignService } from './modules/sign/resign.js';
import { runInSignProcess } from './modules/sign/run-task.js';
import { createSignService, dropSignsOfVersions } from './modules/sign/service.js';
import { createSignCache } from './modules/sign/sign-cache.js';
import { createSignWorkers, dupSuffix } from './modules/sign/worker.js';
import { createCopyAppIds } from './modules/versions/capabilities/copy-app-ids.js';
import { createComponentReader } from './modules/versions/capabilities/reader.js';
import { createPushSender } from './modules/notifications/sender.js';
import { createNotificationsService } from './modules/notifications/service.js';
import { createReminders } from './modules/notifications/reminders.js';
import { createNotificationSources } from './modules/notifications/sources.js';
import { loadVapidKeys } from './modules/notifications/vapid.js';
import { createUpdateRuns } from './modules/updates/runs.js';
import { createUpdatesService } from './modules/updates/service.js';
import { createStoreCheck } from './modules/updates/store-check.js';
import { createVersionReadModel } from './modules/versions/read-model.js';
import { withHeldDeletes } from './platform/backup.js';
import type { Config } from './platform/config.js';
import { createDiskGuard } from './platform/disk-space.js';
import { createEventBus } from './platform/events.js';
import { createFaultTracker, type FaultTracker } from './platform/faults.js';
import { createSecretBox, loadOrCreateSecretKey, type SecretBox } from './platform/secrets.js';
import { settingOrCreate } from './platform/settings.js';
import { createUrlSigner } from './platform/signed-urls.js';
import { createFileStore } from './platform/open-store.js';

/**
 * The composition root: every service of a process, made here in dependency order from the
 * configuration, each given the services it uses, none reached through a hook filled in later.
 * The API process makes all of it (`createServices`); the operator commands and `sideport worker`
 * make the steps they need, the same way, so a change an operator makes from the command line (a
 * revoked agent, an imported IPA) is published to running servers like one made through the API.
 *
 *   1. accounts: sessions, sign-in limits, the setup link;
 *   2. core: the store catalogue, events, file storage, decrypt jobs and agents, the signing
 *      material, the sign workers and the file sweep;
 *   3. people: devices, payments, device enrollment and registration;
 *   4. api: what only the API serves (decrypt requests, signs, download URLs, the setup checklist).
 */

export interface ServiceDeps {
  config: Config;
  database: Pick<DatabaseHandle, 'db' | 'listen' | 'kind'>;
  clock: () => Date;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  /** The faults of the parts this process depends on (platform/faults.ts); a fresh tracker when not given. */
  faults?: FaultTracker;
}

/** 1. Accounts: only the database. */
export function createAccountServices({ config, database, clock }: ServiceDeps) {
  const { db } = database;
  const auth = createAuthService({
    db,
    clock,
    sessionCacheMs: config.SESSION_CACHE_MS,
    limits: {
      sessionTtlDays: config.SESSION_TTL_DAYS,
      signInPerId: config.SIGN_IN_LIMIT_PER_ID,
      signInPerAddress: config.SIGN_IN_LIMIT_PER_ADDRESS,
      signInWindowMinutes: config.SIGN_IN_WINDOW_MINUTES,
    },
  });
  const setup = createSetupLinkService({
    db,
    clock,
    auth,
    limits: { perAddress: config.SIGN_IN_LIMIT_PER_ADDRESS, windowMinutes: config.SIGN_IN_WINDOW_MINUTES },
  });
  // One-time tokens for the navigations that change state (docs/security.md, old browsers).
  const navigation = createNavigationTokens({ db, clock, auth });
  return { auth, setup, navigation };
}

/**
 * 2. Core: what the sign worker and the operator commands share with the API. `metrics` counts
 * jobs claimed, done and failed (the server's and the worker's /metrics).
 */
export async function createCoreServices(deps: ServiceDeps, metrics: ServiceMetrics = noMetrics) {
  const { config, database, clock, log } = deps;
  const { db } = database;
  const itunes = createItunesClient({
    baseUrl: config.ITUNES_BASE_URL,
    timeoutMs: config.ITUNES_TIMEOUT_MS,
    searchLimit: config.ITUNES_SEARCH_LIMIT,
    clock: () => clock().getTime(),
  });
  const bus = await createEventBus(database);
  // Deletions can be held while `sideport backup` copies the files (see platform/backup.ts).
  const files = withHeldDeletes(
    await createFileStore({ storageUrl: config.STORAGE_URL, dataDir: config.DATA_DIR }),
  );
  const tmpDir = path.join(config.DATA_DIR, 'tmp');
  const disk = createDiskGuard({
    dir: config.DATA_DIR,
    minFreeBytes: config.DISK_MIN_FREE_MB * 1024 * 1024,
    ...(deps.faults ? { faults: deps.faults } : {}),
  });
  const signCacheDir = path.join(config.DATA_DIR, 'sign-cache');
  const signCache = createSignCache({ files, dir: signCacheDir, tmpDir, run: runInSignProcess, log });
  // What each Done version's components were signed with, for the capability report.
  const components = createComponentReader({ db, files, clock, tmpDir, log });
  // Versions an admin removed, told once, in this order: their stored files go and open pages
  // hear of it, then the signs made of them, their artifacts and digest caches.
  const whenVersionsRemoved = [
    dropDecryptedFiles({ files, bus, log }),
    dropSignsOfVersions({ db, files, cache: signCache, log }),
  ];
  // Who did what: written by every module that acts, read by the admin console.
  const audit = createAuditLog({ db });
  const catalog = createCatalogService({
    db,
    itunes,
    clock,
    cacheTtlMs: config.CATALOG_CACHE_MINUTES * 60_000,
    allowPaid: config.DECRYPT_ALLOW_PAID,
    log,
    audit: audit.record,
    onRemoved: async (removed) => {
      for (const drop of whenVersionsRemoved) await drop(removed);
    },
  });
  const jobs = createJobService({
    db,
    clock,
    bus,
    files,
    catalog,
    settings: {
      leaseSeconds: config.DECRYPT_LEASE_SECONDS,
      maxAttempts: config.DECRYPT_MAX_ATTEMPTS,
      maxLostLeases: config.DECRYPT_MAX_LOST_LEASES,
      maxIpaBytes: config.DECRYPT_MAX_IPA_MB * 1024 * 1024,
      tmpDir,
    },
    log,
    metrics,
    usage: createDecryptUsage({ db }),
    disk,
    // The sign service's digest cache is filled as soon as a version is Done, and its components read.
    onVersionDone: async (done) => {
      await Promise.all([signCache.warm(done), components.record(done)]);
    },
  });
  const agents = createAgentService({
    db,
    clock,
    releaseJobsOf: jobs.releaseJobsOf,
    cacheMs: config.SESSION_CACHE_MS,
    // A busy agent beats every third of its lease: a lease longer than the default stretches "online".
    onlineWithinMs: Math.max(AGENT_ONLINE_WITHIN_MS, 2 * config.DECRYPT_LEASE_SECONDS * 1000),
  });
  const secrets = createSecretBox(config.SECRET_KEY ?? (await loadOrCreateSecretKey(config.DATA_DIR)));
  // Devices are read by the signing identity (the Registered devices a profile lists).
  const devices = createDeviceService({ db, bus });
  // Re-signs in the background: recovery and the moves of the account pool ask for them.
  const resign = createResignService({ db, clock, bus, audit: audit.record });
  const renewBeforeMs = config.RENEW_BEFORE_DAYS * 86_400_000;
  const { signingIdentity, accountPool } = createSigningIdentity({
    config,
    db,
    secrets,
    clock,
    bus,
    devices,
    resign,
    audit: audit.record,
    log,
  });
  // The configured accounts are in the database before anything places a device.
  await accountPool?.ready();
  // SIGN_P12 without its issuer (nor one to be found) stops the start with a sentence, not a bad signature later.
  await signingIdentity.prepare?.();
  /** What registers a paid device: the pool of developer accounts, or the dev identity. */
  const registrar: DeviceRegistrar = accountPool?.registrar ?? signingIdentity;
  const certificates = createCertificateRegistry({
    db,
    clock,
    settings: { ocspUrl: config.OCSP_URL, cacheMinutes: config.OCSP_CACHE_MINUTES },
    log,
    ...(deps.faults ? { faults: deps.faults } : {}),
  });
  // Devices Apple leaves out of new profiles wait in Process, checked again by a periodic task.
  const appleWait = createAppleWait({ db, clock, bus, log });
  const signing = createSigningService({
    db,
    clock,
    identity: signingIdentity,
    devices,
    appleWait,
    certificates,
    renewBeforeMs,
    pool: accountPool,
  });
  // Revoked or expiring certificates and profiles are replaced, and what they signed signed again.
  const recovery = createRecovery({
    db,
    databaseKind: database.kind,
    clock,
    signing,
    resign,
    audit: audit.record,
    renewBeforeMs,
    log,
  });
  // The operator's choice of explicit App IDs for DUP copies, which only App Store Connect can make.
  const copyAppIds = createCopyAppIds({ db, available: signingIdentity.makesExplicitAppIds === true });
  // Made here, started by the caller: the server runs SIGN_WORKERS of them, `sideport worker` its own count.
  const signWorkers = createSignWorkers({
    db,
    clock,
    bus,
    files,
    signing,
    recovery,
    cache: signCache,
    run: runInSignProcess,
    settings: {
      leaseSeconds: config.SIGN_LEASE_SECONDS,
      maxAttempts: config.SIGN_MAX_ATTEMPTS,
      maxLostLeases: config.SIGN_MAX_LOST_LEASES,
      tmpDir,
      dylibs: { iap: config.SIGN_DYLIBS_IAP, igg: config.SIGN_DYLIBS_IGG },
      featherIpa: config.FEATHER_IPA,
    },
    log,
    metrics,
    disk,
    copyAppIds,
  });
  const fileSweep = createFileSweep({
    db,
    databaseKind: database.kind,
    files,
    // Files carry the wall clock's times, whatever clock the services are given.
    clock: () => new Date(),
    tmpDir,
    signCacheDir,
    minAgeMs: config.ORPHAN_MIN_AGE_MINUTES * 60_000,
    log,
  });
  return {
    itunes,
    bus,
    files,
    signCache,
    components,
    audit,
    catalog,
    jobs,
    agents,
    secrets,
    devices,
    appleWait,
    signingIdentity,
    registrar,
    accountPool,
    resign,
    recovery,
    signing,
    copyAppIds,
    signWorkers,
    fileSweep,
  };
}

/** 3. People: their devices, payments, and the enrollment and registration of devices. */
export async function createPeopleServices(
  { config, database, clock, log, faults }: ServiceDeps,
  { auth }: AccountServices,
  core: CoreServices,
  metrics: ServiceMetrics = noMetrics,
) {
  const { db } = database;
  const { bus, devices } = core;
  const billingProvider = await createBillingProvider(config, { db, clock, log });
  const billing = createBillingService({
    db,
    clock,
    provider: billingProvider,
    devices,
    users: auth,
    slots: core.accountPool,
    freeDailyLimit: config.FREE_DAILY_LIMIT,
    log,
  });
  // The test-mode checkout's pages pay through the billing service, as a webhook does.
  const devCheckout = createDevCheckout({ db, clock, billing });
  const enrollment = createEnrollmentService({ db, clock, bus, ...enrollmentSettings(config) });
  const registration = createRegistrationService({
    db,
    clock,
    bus,
    registrar: core.registrar,
    log,
    metrics,
    ...(faults ? { faults } : {}),
  });
  return { billingProvider, billing, devCheckout, enrollment, registration };
}

/** 4. What only the API serves. */
export async function createApiServices(
  { config, database, clock, faults, log }: ServiceDeps,
  core: CoreServices,
  { billing, billingProvider }: PeopleServices,
) {
  const { db } = database;
  const { bus, files, catalog, secrets, signing, agents } = core;
  // The download URL key: configured, or made once and shared by every process through the database.
  const urlKey =
    config.DOWNLOAD_URL_KEY ??
    (await settingOrCreate(db, 'download_url_key', () => randomBytes(32).toString('hex')));
  const urls = createUrlSigner(Buffer.from(urlKey), clock);
  const versions = createVersionReadModel({
    db,
    catalog,
    capabilities: {
      components: core.components,
      teamOf: signing.teamOf,
      dupSuffix,
      copyAppIds: core.copyAppIds,
      ...(core.accountPool ? { pendingTeamMove: core.accountPool.teamMoves.pending } : {}),
    },
  });
  const decrypt = createDecryptService({
    db,
    clock,
    bus,
    files,
    urls,
    catalog,
    billing,
    versions,
    settings: {
      allowPaid: config.DECRYPT_ALLOW_PAID,
      versionsWaitMs: config.VERSIONS_WAIT_SECONDS * 1000,
      versionListTtlMs: config.CATALOG_CACHE_MINUTES * 60_000,
      downloadUrlTtlSeconds: config.DOWNLOAD_URL_TTL_SECONDS,
    },
  });
  const sign = createSignService({
    db,
    clock,
    bus,
    files,
    urls,
    secrets,
    signing,
    recovery: core.recovery,
    versions,
    teamMoves: core.accountPool?.teamMoves,
    settings: {
      urlTtlSeconds: config.DOWNLOAD_URL_TTL_SECONDS,
      hasDylibs: { iap: config.SIGN_DYLIBS_IAP.length > 0, igg: config.SIGN_DYLIBS_IGG.length > 0 },
      featherIpa: config.FEATHER_IPA,
      featherWaitMs: FEATHER_WAIT_MS,
      renewBeforeMs: config.RENEW_BEFORE_DAYS * 86_400_000,
    },
  });
  const checklist = createSetupChecklist({
    config,
    itunes: core.itunes,
    agents,
    identityKind: core.signingIdentity.kind,
    billingProvider: billingProvider.name,
    storage: files,
    ...(faults ? { faults } : {}),
  });
  // Notifications: the VAPID key pair made at first start and kept sealed with the other secrets.
  const vapid = await loadVapidKeys(db, secrets);
  const notifications = createNotificationsService({
    db,
    clock,
    bus,
    vapidPublicKey: vapid.publicKey,
    allowHttpEndpoints: config.PUSH_ALLOW_HTTP,
  });
  const notificationSources = createNotificationSources({ db, notifications, log });
  // What time brings: apps needing a new sign, ends nothing renews, plans ending (reminders.ts).
  const reminders = createReminders({
    db,
    clock,
    notifications,
    signing,
    settings: {
      expiryNoticeMs: config.EXPIRY_NOTICE_DAYS * 86_400_000,
      planEndingMs: config.PLAN_ENDING_NOTICE_DAYS * 86_400_000,
      renewBeforeMs: config.RENEW_BEFORE_DAYS * 86_400_000,
    },
    log,
  });
  const pushSender = createPushSender({
    db,
    clock,
    log,
    settings: {
      vapid,
      subject:
        config.VAPID_SUBJECT ??
        (config.PUBLIC_URL?.startsWith('https:') ? config.PUBLIC_URL : 'mailto:operator@sideport.invalid'),
      ttlSeconds: PUSH_TTL_SECONDS,
      batchSize: PUSH_BATCH,
      concurrency: PUSH_CONCURRENCY,
      leaseSeconds: PUSH_LEASE_SECONDS,
      limits: { maxFailures: PUSH_MAX_ATTEMPTS, maxLostLeases: PUSH_MAX_ATTEMPTS * 2 },
      timeoutMs: PUSH_TIMEOUT_MS,
    },
  });
  const updates = createUpdatesService({
    db,
    clock,
    check: createStoreCheck({
      db,
      clock,
      catalog,
      settings: {
        intervalMs: config.UPDATE_CHECK_MINUTES * 60_000,
        batchSize: UPDATE_LOOKUP_BATCH,
        passLimit: UPDATE_PASS_LIMIT,
      },
    }),
    runs: createUpdateRuns({
      db,
      clock,
      bus,
      decrypt,
      sign,
      log,
      onReady: async (run) => {
        await notifications.notify(run.userId, {
          kind: 'update-ready',
          key: `update-ready:${run.id}:${run.toAppVerId}`,
          title: `The update to ${run.toVersion} is ready to install`,
          body: run.inPlace ? 'Install it on your iPhone: iOS updates the app in place.' : (run.reason ?? ''),
          url: '/my?tab=updates',
        });
      },
    }),
    billing,
    autoDailyCap: config.AUTO_UPDATE_DAILY_CAP,
    audit: core.audit.record,
    log,
  });
  return {
    urls,
    versions,
    decrypt,
    sign,
    checklist,
    updates,
    notifications,
    notificationSources,
    reminders,
    pushSender,
  };
}

/** A day: how long a push service keeps a push for a browser that is offline. */
const PUSH_TTL_SECONDS = 86_400;
/** Pushes one claim takes, and how many are sent at once. */
const PUSH_BATCH = 200;
const PUSH_CONCURRENCY = 32;
const PUSH_LEASE_SECONDS = 120;
const PUSH_MAX_ATTEMPTS = 5;
const PUSH_TIMEOUT_MS = 15_000;

/** Apps per Lookup call of the update check (Apple's Lookup answers up to 200 ids at once). */
const UPDATE_LOOKUP_BATCH = 100;
/** Apps one update check pass asks about; the rest wait for the next pass. */
const UPDATE_PASS_LIMIT = 20_000;

/** Everything the API process serves with, and its metrics. */
export async function createServices(given: ServiceDeps) {
  const faults = given.faults ?? createFaultTracker(given.clock);
  const deps = { ...given, faults };
  const metrics = createSideportMetrics({
    db: deps.database.db,
    clock: deps.clock,
    decryptLeaseSeconds: deps.config.DECRYPT_LEASE_SECONDS,
    log: deps.log,
    faults,
  });
  const accounts = createAccountServices(deps);
  const core = await createCoreServices(deps, metrics.service);
  const people = await createPeopleServices(deps, accounts, core, metrics.service);
  const api = await createApiServices(deps, core, people);
  return { metrics, faults, ...accounts, ...core, ...people, ...api };
}

export type AccountServices = ReturnType<typeof createAccountServices>;
export type CoreServices = Awaited<ReturnType<typeof createCoreServices>>;
export type PeopleServices = Awaited<ReturnType<typeof createPeopleServices>>;
export type Services = Awaited<ReturnType<typeof createServices>>;

/** How long GET /api/feather/install waits for a Feather sign under way (a Feather IPA signs in seconds). */
const FEATHER_WAIT_MS = 60_000;

/**
 * The operator's Apple developer accounts when an App Store Connect key is configured: a pool of
 * the ASC_KEY_ID account (its certificate from SIGN_P12, or made through the API), those of
 * ASC_ACCOUNTS_FILE and those an admin adds, each its own identity. Otherwise the dev identity,
 * one identity with no device limits.
 */
function createSigningIdentity(deps: {
  config: Config;
  db: ServiceDeps['database']['db'];
  secrets: SecretBox;
  clock: () => Date;
  bus: Awaited<ReturnType<typeof createEventBus>>;
  devices: DeviceService;
  resign: ReturnType<typeof createResignService>;
  audit: RecordAudit;
  log: ServiceDeps['log'];
}): { signingIdentity: SigningIdentityProvider; accountPool: AccountPool | undefined } {
  const { config, db, secrets, clock, bus, devices, resign, audit, log } = deps;
  if (
    config.ASC_KEY_ID === undefined ||
    config.ASC_ISSUER_ID === undefined ||
    config.ASC_PRIVATE_KEY === undefined
  ) {
    return {
      signingIdentity: createDevIdentityProvider({
        db,
        secrets,
        clock,
        renewBeforeMs: config.RENEW_BEFORE_DAYS * 86_400_000,
      }),
      accountPool: undefined,
    };
  }
  const accountPool = createAccountPool({
    db,
    secrets,
    clock,
    bus,
    devices,
    resign,
    audit,
    configured: [
      { keyId: config.ASC_KEY_ID, issuerId: config.ASC_ISSUER_ID, privateKeyPem: config.ASC_PRIVATE_KEY },
      ...config.ASC_ACCOUNTS,
    ],
    client: (key) =>
      createAscClient({ key, ...(config.ASC_BASE_URL ? { baseUrl: config.ASC_BASE_URL } : {}), clock }),
    p12: config.SIGN_P12
      ? { bytes: readFileSync(config.SIGN_P12), password: config.SIGN_P12_PASSWORD ?? '' }
      : undefined,
    slotsPerFamily: config.ASC_DEVICES_PER_FAMILY,
    log,
  });
  return { signingIdentity: accountPool.primary, accountPool };
}
