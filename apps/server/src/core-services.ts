import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { DatabaseHandle } from './db/client.js';
import { AGENT_ONLINE_WITHIN_MS, createAgentService } from './modules/agents/service.js';
import { createItunesClient } from './modules/catalog/itunes.js';
import type { RemovedEntry } from './modules/catalog/queries.js';
import { createCatalogService } from './modules/catalog/service.js';
import { createJobService } from './modules/decrypt/jobs.js';
import type { Config } from './platform/config.js';
import { createEventBus } from './platform/events.js';
import { withHeldDeletes } from './platform/backup.js';
import { createFileStore } from './platform/storage.js';
import { createSecretBox, loadOrCreateSecretKey, type SecretBox } from './platform/secrets.js';
import { createDeviceService, type DeviceService } from './modules/devices/service.js';
import type { DeviceRegistrar } from './modules/devices/registration.js';
import { createAccountPool, type AccountPool } from './modules/identity/account-pool.js';
import { createAscClient } from './modules/identity/asc-client.js';
import {
  createDevIdentityProvider,
  createSigningService,
  type SigningIdentityProvider,
} from './modules/identity/signing.js';
import { createResigner } from './modules/sign/resign.js';
import { runInSignProcess } from './modules/sign/run-task.js';
import { createSignCache } from './modules/sign/sign-cache.js';
import { createSignWorkers } from './modules/sign/worker.js';
import { createFileSweep } from './modules/files/sweep.js';
import { noMetrics, type ServiceMetrics } from './modules/metrics/registry.js';

export interface CoreServicesDeps {
  config: Config;
  database: Pick<DatabaseHandle, 'db' | 'listen' | 'kind'>;
  clock: () => Date;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  /** Told of every entry an admin removed (the decrypt service deletes its file). */
  onRemoved?: (removed: RemovedEntry[]) => Promise<void>;
  /** Counts jobs claimed, done and failed (the server's and the worker's /metrics). */
  metrics?: ServiceMetrics;
}

/**
 * The services both the server and the operator CLI need, made from the configuration the same
 * way in both: the store catalogue, the event bus, file storage, decrypt jobs and agents, the
 * signing material and the sign workers. A change an operator makes from the CLI (a revoked
 * agent, an imported IPA) is thus published to running servers like one made through the API.
 */
export async function createCoreServices({ config, database, clock, log, onRemoved, metrics = noMetrics }: CoreServicesDeps) {
  const { db } = database;
  const itunes = createItunesClient({
    baseUrl: config.ITUNES_BASE_URL,
    timeoutMs: config.ITUNES_TIMEOUT_MS,
    searchLimit: config.ITUNES_SEARCH_LIMIT,
    clock: () => clock().getTime(),
  });
  const bus = await createEventBus(database);
  // Deletions can be held while `sideport backup` copies the files (see platform/backup.ts).
  const files = withHeldDeletes(createFileStore({ storageUrl: config.STORAGE_URL, dataDir: config.DATA_DIR }));
  const catalog = createCatalogService({
    db,
    itunes,
    clock,
    cacheTtlMs: config.CATALOG_CACHE_MINUTES * 60_000,
    allowPaid: config.DECRYPT_ALLOW_PAID,
    log,
    ...(onRemoved ? { onRemoved } : {}),
  });
  const tmpDir = path.join(config.DATA_DIR, 'tmp');
  const signCacheDir = path.join(config.DATA_DIR, 'sign-cache');
  const signCache = createSignCache({ files, dir: signCacheDir, tmpDir, run: runInSignProcess, log });
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
    // The sign service's digest cache is filled as soon as a version is Done.
    onVersionDone: (done) => signCache.warm(done),
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
  const devices = createDeviceService({ db, bus });
  const resigner = createResigner({ db, clock, bus, log });
  const { signingIdentity, accountPool } = createSigningIdentity({ config, db, secrets, clock, bus, devices, resigner, audit: catalog.audit, log });
  // The configured accounts are in the database before anything places a device.
  await accountPool?.ready();
  /** What registers a paid device: the pool of developer accounts, or the dev identity. */
  const registrar: DeviceRegistrar = accountPool?.registrar ?? signingIdentity;
  const signing = createSigningService({ db, clock, identity: signingIdentity, devices, pool: accountPool });
  // Made here, started by the caller: the server runs SIGN_WORKERS of them, `sideport worker` its own count.
  const signWorkers = createSignWorkers({
    db,
    clock,
    bus,
    files,
    signing,
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
  });
  // Made here, started by the caller: the server and `sideport worker` sweep every ORPHAN_SWEEP_MINUTES.
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
    bus,
    files,
    catalog,
    jobs,
    agents,
    secrets,
    devices,
    signing,
    signingIdentity,
    registrar,
    accountPool,
    resigner,
    signCache,
    signWorkers,
    fileSweep,
    itunes,
  };
}

/**
 * The operator's Apple developer accounts when an App Store Connect key is configured: a pool of
 * the ASC_KEY_ID account (its certificate from SIGN_P12, or made through the API), those of
 * ASC_ACCOUNTS_FILE and those an admin adds, each its own identity. Otherwise the dev identity,
 * one identity with no device limits.
 */
function createSigningIdentity(deps: {
  config: Config;
  db: CoreServicesDeps['database']['db'];
  secrets: SecretBox;
  clock: () => Date;
  bus: Awaited<ReturnType<typeof createEventBus>>;
  devices: DeviceService;
  resigner: ReturnType<typeof createResigner>;
  audit: (actor: string, action: string, subject: object) => Promise<void>;
  log: CoreServicesDeps['log'];
}): { signingIdentity: SigningIdentityProvider; accountPool: AccountPool | undefined } {
  const { config, db, secrets, clock, bus, devices, resigner, audit, log } = deps;
  if (config.ASC_KEY_ID === undefined || config.ASC_ISSUER_ID === undefined || config.ASC_PRIVATE_KEY === undefined) {
    return { signingIdentity: createDevIdentityProvider({ db, secrets, clock }), accountPool: undefined };
  }
  const accountPool = createAccountPool({
    db,
    secrets,
    clock,
    bus,
    devices,
    resign: resigner,
    audit,
    configured: [
      { keyId: config.ASC_KEY_ID, issuerId: config.ASC_ISSUER_ID, privateKeyPem: config.ASC_PRIVATE_KEY },
      ...config.ASC_ACCOUNTS,
    ],
    client: (key) => createAscClient({ key, ...(config.ASC_BASE_URL ? { baseUrl: config.ASC_BASE_URL } : {}), clock }),
    p12: config.SIGN_P12 ? { bytes: readFileSync(config.SIGN_P12), password: config.SIGN_P12_PASSWORD ?? '' } : undefined,
    slotsPerFamily: config.ASC_DEVICES_PER_FAMILY,
    log,
  });
  return { signingIdentity: accountPool.primary, accountPool };
}
