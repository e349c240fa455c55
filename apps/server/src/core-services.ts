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
import { createAppleIdentityProvider } from './modules/identity/apple-identity.js';
import { createAscClient } from './modules/identity/asc-client.js';
import { createCertificateRegistry } from './modules/identity/certificates.js';
import {
  createDevIdentityProvider,
  createSigningService,
  type SigningIdentityProvider,
} from './modules/identity/signing.js';
import { runInSignProcess } from './modules/sign/run-task.js';
import { createSignCache } from './modules/sign/sign-cache.js';
import { createSignWorkers } from './modules/sign/worker.js';
import { createRecovery } from './modules/sign/recovery.js';
import { createResignService } from './modules/sign/resign.js';
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
  const renewBeforeMs = config.RENEW_BEFORE_DAYS * 86_400_000;
  const signingIdentity = createSigningIdentity({ config, db, secrets, clock, devices, log });
  const certificates = createCertificateRegistry({
    db,
    clock,
    settings: { ocspUrl: config.OCSP_URL, cacheMinutes: config.OCSP_CACHE_MINUTES },
    log,
  });
  const signing = createSigningService({ db, clock, identity: signingIdentity, devices, certificates, renewBeforeMs });
  // Re-signs in the background, and the recovery pass that asks for them (started by the caller, as the sweep is).
  const resign = createResignService({ db, clock, bus, audit: catalog.audit });
  const recovery = createRecovery({ db, databaseKind: database.kind, clock, signing, resign, audit: catalog.audit, renewBeforeMs, log });
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
    signCache,
    signWorkers,
    fileSweep,
    itunes,
    resign,
    recovery,
  };
}

/**
 * The operator's Apple developer account when an App Store Connect key is configured (its
 * certificate from SIGN_P12, or made through the API); otherwise the dev identity.
 */
function createSigningIdentity(deps: {
  config: Config;
  db: CoreServicesDeps['database']['db'];
  secrets: SecretBox;
  clock: () => Date;
  devices: DeviceService;
  log: CoreServicesDeps['log'];
}): SigningIdentityProvider {
  const { config, db, secrets, clock, devices, log } = deps;
  if (config.ASC_KEY_ID === undefined || config.ASC_ISSUER_ID === undefined || config.ASC_PRIVATE_KEY === undefined) {
    return createDevIdentityProvider({ db, secrets, clock, renewBeforeMs: config.RENEW_BEFORE_DAYS * 86_400_000 });
  }
  const asc = createAscClient({
    key: { keyId: config.ASC_KEY_ID, issuerId: config.ASC_ISSUER_ID, privateKeyPem: config.ASC_PRIVATE_KEY },
    ...(config.ASC_BASE_URL ? { baseUrl: config.ASC_BASE_URL } : {}),
    clock,
  });
  return createAppleIdentityProvider({
    db,
    secrets,
    clock,
    asc,
    devices,
    keyId: config.ASC_KEY_ID,
    p12: config.SIGN_P12 ? { bytes: readFileSync(config.SIGN_P12), password: config.SIGN_P12_PASSWORD ?? '' } : undefined,
    log,
  });
}
