/**
 * Chaos run: the scaled topology on one machine, with processes killed (SIGKILL) and restarted
 * while users ask for decrypts and signs; then what became of the work, and of the files.
 *
 *   npm run chaos        (CHAOS_DECRYPTS, CHAOS_SIGNS, CHAOS_KILLS, ... below; PG_PORT for PostgreSQL)
 *
 * Topology: a throwaway PostgreSQL (scripts/with-postgres.sh), an S3-compatible store (s3rver, in
 * this process; CHAOS_STORAGE=local for one DATA_DIR shared on local disk), a local iTunes server,
 * 2 API processes (`node apps/server/dist/main.js`, no sign workers of their own), 2 `sideport
 * worker` sign processes and 3 `sideport-agent` processes sharing one work dir and running
 * chaos/decrypt-command.ts. The first API starts alone and migrates the database; the others start
 * once it listens. Users are signed up, each with a simulated iPhone enrolled, paid on the
 * test-mode checkout and registered with the dev identity, before the first kill.
 *
 * Then CHAOS_DECRYPTS app-level decrypt requests, and CHAOS_SIGNS signs (mode 0) asked as their
 * versions become Done, while the scenario (CHAOS_SCENARIO, chaos/disruptions.ts) disrupts the
 * topology: `kills` (the default) SIGKILLs a random process CHAOS_KILLS times and restarts it;
 * `dependencies` stops PostgreSQL (a cluster of the run's own, pg_ctl), then the S3 store, fills
 * the servers' size-limited data disk (chaos/small-disk.ts) and has App Store Connect and Stripe
 * (chaos/outside-apis.ts: devices registered and paid through them in this scenario) answer 429
 * and 5xx while late users pay; `rolling` replaces each API process and sign worker in turn with
 * SIGTERM and a start.
 * Afterwards, once the work has settled and every process has swept its files, it reports:
 *   lost        decrypts not Done, signs not Done, payments or registrations missing (dependencies)
 *   duplicated  a version or sign accepted more than once (the processes' own log lines), a
 *               payment recorded or a device registered at Apple twice
 *   wrong       a Done IPA that is not the one its job produced (bundle id, store version, job),
 *               a signed artifact that does not verify or is not for its user's device
 *   orphaned    stored files no row names, agent job folders, DATA_DIR/tmp files and signing
 *               spools left after the sweep
 *   stuck       work neither finished nor given up once settled
 *   settle      seconds from the last restart until every request was final
 *   unanswered  5xx answers without a sentence and Retry-After (503s with both are counted apart)
 *   resume      per part or process back: seconds until a decrypt and a sign finished after it,
 *               and until every device that waited was registered
 * and exits 1 when any count is not 0.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import S3rver from 's3rver';
import { parsePlistDict } from '@sideport/ipa';
import { startItunesServer } from '../apps/server/src/dev/itunes-server.js';
import { createSimulatedDevice } from '../apps/server/src/modules/devices/simulated-device.js';
import { createFileStore } from '../apps/server/src/platform/open-store.js';
import { startPgCluster, type PgCluster } from '../apps/server/src/test/pg-cluster.js';
import { chaosAppId, chaosAppVerId, chaosBundleId, chaosDisplayName } from './apps.js';
import { filesUnder, foldersIn, readIpa, unnamedStoredFiles, wrongDecrypted, wrongSigned } from './checks.js';
import {
  API_DOWN_MS,
  DEPENDENCIES_MS,
  disrupt,
  KILLS,
  SCENARIOS,
  type Disrupted,
  type Part,
  type Scenario,
} from './disruptions.js';
import { startOutsideApis, type OutsideApis } from './outside-apis.js';
import { managedProcess, type LogLine, type Managed } from './processes.js';
import { createSite, type Site } from './site.js';
import { createSmallDisk, type SmallDisk } from './small-disk.js';

const int = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 0)
    throw new Error(`${name} must be a whole number, not ${process.env[name]}`);
  return value;
};
const DECRYPTS = int('CHAOS_DECRYPTS', 16);
const USERS = Math.max(1, int('CHAOS_USERS', 3));
const SIGNS = Math.min(int('CHAOS_SIGNS', 16), DECRYPTS * USERS);
/** Users who enroll and pay while App Store Connect and Stripe are away (dependencies). */
const LATE_USERS = int('CHAOS_LATE_USERS', 2);
const STEP_MS = int('CHAOS_STEP_MS', 1000);
const SETTLE_TIMEOUT_MS = int('CHAOS_SETTLE_TIMEOUT_S', 300) * 1000;
const STORAGE = process.env.CHAOS_STORAGE === 'local' ? 'local' : 's3';
const KEEP = process.env.CHAOS_KEEP === '1';
/** The processes' lease and sweep settings: short, so a run takes minutes. */
const LEASE_SECONDS = 10;
const ORPHAN_MINUTES = 1;

const SCENARIO = (process.env.CHAOS_SCENARIO ?? 'kills') as Scenario;
if (!SCENARIOS.includes(SCENARIO))
  throw new Error(`CHAOS_SCENARIO must be one of ${SCENARIOS.join(', ')}, not ${SCENARIO}`);
/**
 * Decrypt requests come this far apart; the kills fall at random times while they come. The
 * dependencies scenario spreads them over its outages, so every part fails under work.
 */
const REQUEST_EVERY_MS = int(
  'CHAOS_REQUEST_EVERY_MS',
  SCENARIO === 'dependencies' ? Math.ceil(DEPENDENCIES_MS / DECRYPTS) : 3000,
);
/** The dependencies scenario stops PostgreSQL, so it runs a cluster of its own (PG_FAULT_PORT). */
const ownCluster: PgCluster | undefined = SCENARIO === 'dependencies' ? await startPgCluster() : undefined;
const adminUrl = ownCluster?.url ?? process.env.CHAOS_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
if (!adminUrl)
  throw new Error('Set CHAOS_DATABASE_URL (or run through scripts/with-postgres.sh: npm run chaos).');
const root = path.resolve(import.meta.dirname, '..');
const work = mkdtempSync(path.join(tmpdir(), 'sideport-chaos-'));
const startedAt = Date.now();
const elapsed = () => `${((Date.now() - startedAt) / 1000).toFixed(1).padStart(6)} s`;
const say = (line: string) => console.log(`${elapsed()}  ${line}`);

/** A small seeded generator (mulberry32), so a run's kills can be repeated with CHAOS_SEED. */
const seed = int('CHAOS_SEED', Math.floor(Math.random() * 1_000_000));
let state = seed;
const random = () => {
  state = (state + 0x6d2b79f5) | 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function createDatabase() {
  const name = `sideport_chaos_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl!);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const cleanup = new pg.Client({ connectionString: adminUrl });
      await cleanup.connect();
      await cleanup.query(`drop database if exists ${name} with (force)`);
      await cleanup.end();
    },
  };
}

/** A store record for a made-up free iPhone app, from a real recorded one. */
function storeRecords() {
  const recorded = JSON.parse(
    readFileSync(path.join(root, 'fixtures/itunes/fastlane_itunesLookup-284882215.json'), 'utf8'),
  ) as {
    results: Array<Record<string, unknown>>;
  };
  return Array.from({ length: DECRYPTS }, (_, i) => {
    const appId = chaosAppId(i);
    return {
      ...recorded.results[0],
      trackId: appId,
      bundleId: chaosBundleId(appId),
      trackName: `Chaos ${appId}`,
      version: '1.0',
      price: 0,
    };
  });
}

interface User {
  id: string;
  cookie: string;
  udid: string;
}

/**
 * A user with a simulated iPhone enrolled, paid (on the test-mode checkout, or through Stripe's
 * checkout and webhook when `apis` run) and Registered.
 */
async function userWithDevice(site: Site, id: string, apis?: OutsideApis): Promise<User> {
  return (await openCheckout(site, id)).pay(apis);
}

/** A user with a simulated iPhone enrolled and its checkout opened; `pay` pays and waits for Registered. */
async function openCheckout(site: Site, id: string) {
  const cookie = await site.session(id, `${id}-password`, true);
  const profile = await site.call('/api/udid/profile', { cookie });
  if (profile.status !== 200) throw new Error(`profile for ${id}: ${profile.status}`);
  const device = createSimulatedDevice();
  const answer = device.answer(Buffer.from(await profile.arrayBuffer()));
  // The device posts without the person's cookie, as iOS does.
  const enrolled = await site.call(new URL(answer.url).pathname, {
    method: 'POST',
    body: new Uint8Array(answer.body),
    contentType: 'application/pkcs7-signature',
  });
  if (enrolled.status !== 301)
    throw new Error(`enrollment of ${id}: ${enrolled.status} ${await enrolled.text()}`);
  const info = async () =>
    (
      await site.expect<{ device_info: Array<{ UDID: string; status: string }> }>(200, '/api/info', {
        cookie,
      })
    ).device_info;
  const index = (await info()).findIndex((d) => d.UDID === device.udid);
  const checkout = await site.expect<{ url: string }>(200, `/api/pay/device/${index}`, { cookie });
  return {
    async pay(apis: OutsideApis | undefined): Promise<User> {
      if (apis) await apis.pay(site, id);
      else
        await site.expect(303, `${new URL(checkout.url).pathname}/pay`, {
          method: 'POST',
          cookie,
          body: new Uint8Array(),
          contentType: 'application/x-www-form-urlencoded',
        });
      // Through App Store Connect, a registration may wait out its outage first.
      for (let i = 0; !(await info()).some((d) => d.UDID === device.udid && d.status === 'Registered'); i++) {
        if (i > 600) throw new Error(`${id}'s device was not Registered within five minutes`);
        await sleep(500);
      }
      return { id, cookie, udid: device.udid };
    },
  };
}

/** Sign j: the version j % DECRYPTS, for a user no other sign of that version has. */
const signPlan = Array.from({ length: SIGNS }, (_, j) => ({
  appIndex: j % DECRYPTS,
  userIndex: (j + Math.floor(j / DECRYPTS)) % USERS,
}));

async function main() {
  say(
    `chaos: ${SCENARIO}, ${DECRYPTS} decrypts, ${SIGNS} signs, ${USERS} users${SCENARIO === 'kills' ? `, ${KILLS} kills` : ''}, storage ${STORAGE}, seed ${seed}; work in ${work}`,
  );
  const database = await createDatabase();
  const db = new pg.Pool({ connectionString: database.url, max: 3 });
  // A connection PostgreSQL closes while idle (its restart in the dependencies scenario) is
  // replaced on the next query; the pool would otherwise end the run with an unhandled error.
  db.on('error', (err) => say(`the run's own database connection dropped (${err.message})`));
  const itunes = await startItunesServer({ records: storeRecords() });
  // The dependencies scenario's other parts: a disk it can fill, App Store Connect and Stripe.
  const disk: SmallDisk | undefined = SCENARIO === 'dependencies' ? await createSmallDisk(work) : undefined;
  const outside: OutsideApis | undefined =
    SCENARIO === 'dependencies' ? await startOutsideApis(root) : undefined;
  if (disk)
    say(
      `data disk: ${disk.kind === 'tmpfs' ? 'a 64 MB tmpfs' : `the machine's, reserve ${disk.minFreeMb} MB`}`,
    );
  let s3: S3rver | undefined;
  let storagePart: Part | undefined;
  let storageEnv: Record<string, string> = {};
  const sharedDataDir = path.join(disk?.dir ?? work, 'data');
  if (STORAGE === 's3') {
    const s3Dir = path.join(work, 's3');
    mkdirSync(s3Dir);
    const startS3 = async (on: number) => {
      s3 = new S3rver({
        port: on,
        address: '127.0.0.1',
        directory: s3Dir,
        silent: true,
        configureBuckets: [{ name: 'chaos', configs: [] }],
      });
      return (await s3.run()).port;
    };
    const port = await startS3(0);
    // Stopped and started again on the same port and folder, as an outage of the store.
    storagePart = {
      stop: async () => void (await s3?.close()),
      start: async () => void (await startS3(port)),
    };
    // s3rver's fixed credentials, found by the AWS SDK the usual way (here and in every process).
    process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
    process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
    storageEnv = {
      STORAGE_URL: `s3://chaos/sideport?endpoint=http://127.0.0.1:${port}&region=us-east-1&forcePathStyle=true`,
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    };
  }
  const store = await createFileStore({ storageUrl: storageEnv.STORAGE_URL, dataDir: sharedDataDir });

  const logs = path.join(work, 'logs');
  mkdirSync(logs);
  const apiPorts = [await freePort(), await freePort()];
  const origins = apiPorts.map((port) => `http://127.0.0.1:${port}`);
  const site = createSite(origins);
  const secretKey = randomBytes(32).toString('base64');
  const adminPassword = randomBytes(12).toString('base64url');
  /** Each server process's own DATA_DIR (one shared on local disk) and temp folder. */
  const folders = (name: string) => {
    const dataDir = dataDirOf(name, disk, sharedDataDir);
    const osTmp = path.join(work, `${name}-os-tmp`);
    mkdirSync(dataDir, { recursive: true });
    mkdirSync(osTmp, { recursive: true });
    return { dataDir, osTmp };
  };
  const serverEnv = (name: string, extra: Record<string, string> = {}) => {
    const { dataDir, osTmp } = folders(name);
    return {
      PATH: process.env.PATH ?? '',
      TMPDIR: osTmp,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      DATABASE_URL: database.url,
      SECRET_KEY: secretKey,
      DATA_DIR: dataDir,
      WEB_DIST_DIR: dataDir,
      ITUNES_BASE_URL: itunes.url,
      SIGN_WORKERS: '0',
      DECRYPT_LEASE_SECONDS: String(LEASE_SECONDS),
      SIGN_LEASE_SECONDS: String(LEASE_SECONDS),
      REGISTRATION_INTERVAL_SECONDS: '2',
      ORPHAN_SWEEP_MINUTES: String(ORPHAN_MINUTES),
      ORPHAN_MIN_AGE_MINUTES: String(ORPHAN_MINUTES),
      // A rolling upgrade's stop leaves readiness first, still serving meanwhile (README, Upgrades).
      ...(SCENARIO === 'rolling' ? { SHUTDOWN_DRAIN_DELAY_MS: '2000' } : {}),
      ...(disk ? { DISK_MIN_FREE_MB: String(disk.minFreeMb) } : {}),
      ...outside?.env,
      FREE_DAILY_LIMIT: '100000',
      SIGN_IN_LIMIT_PER_ADDRESS: '100000',
      SIGN_IN_LIMIT_PER_ID: '100000',
      ...storageEnv,
      ...extra,
    };
  };
  const apis = [1, 2].map((n) =>
    managedProcess({
      name: `api-${n}`,
      kind: 'api',
      args: [path.join(root, 'apps/server/dist/main.js')],
      env: serverEnv(`api-${n}`, {
        PORT: String(apiPorts[n - 1]),
        ...(n === 1 ? { ADMIN_ID: 'chaos-admin', ADMIN_PASSWORD: adminPassword } : {}),
      }),
      ready: /Sideport listening on/,
      logFile: path.join(logs, `api-${n}.log`),
    }),
  );
  const workers = [1, 2].map((n) =>
    managedProcess({
      name: `worker-${n}`,
      kind: 'worker',
      args: [path.join(root, 'apps/server/bin/sideport.js'), 'worker', '--workers', '1'],
      env: serverEnv(`worker-${n}`),
      ready: /Sign worker started/,
      logFile: path.join(logs, `worker-${n}.log`),
    }),
  );
  const servers = [...apis, ...workers];
  const agentWorkDir = path.join(work, 'agents');
  let agents: Managed[] = [];
  const all = () => [...servers, ...agents];

  try {
    // The first API alone: it migrates the empty database; the others start on a migrated one.
    await apis[0]!.start();
    await Promise.all([apis[1]!.start(), ...workers.map((w) => w.start())]);
    say('2 API processes and 2 sign workers started');

    const admin = await site.session('chaos-admin', adminPassword, false);
    // What a signature chains to: the dev CA, or the (stand-in) Apple account's root.
    const caPem =
      outside?.asc.rootPem ??
      (await site.expect<string>(200, '/api/admin/identity/ca.pem', { cookie: admin }));
    // tsx by its own address: the command runs in the job's folder, where no node_modules is.
    const command = `"${process.execPath}" --import "${import.meta.resolve('tsx')}" "${path.join(root, 'chaos/decrypt-command.ts')}"`;
    agents = [];
    for (let n = 1; n <= 3; n++) {
      const { token } = await site.expect<{ token: string }>(200, '/api/admin/agents', {
        method: 'POST',
        cookie: admin,
        json: { name: `chaos-agent-${n}` },
      });
      agents.push(
        managedProcess({
          name: `agent-${n}`,
          kind: 'agent',
          args: [
            path.join(root, 'apps/agent/bin/sideport-agent.js'),
            '--server',
            origins[(n - 1) % origins.length]!,
            '--command',
            command,
            '--work-dir',
            agentWorkDir,
          ],
          env: { PATH: process.env.PATH ?? '', SIDEPORT_AGENT_TOKEN: token, CHAOS_STEP_MS: String(STEP_MS) },
          ready: /waiting for/,
          logFile: path.join(logs, `agent-${n}.log`),
        }),
      );
    }
    await Promise.all(agents.map((a) => a.start()));
    say('3 agents started (one work dir)');

    const users: User[] = [];
    for (let u = 0; u < USERS; u++) users.push(await userWithDevice(site, `chaos-user-${u}`, outside));
    say(`${USERS} users with a Registered simulated iPhone each`);

    let lateUsers: Promise<Array<{ user?: User; failed?: string }>> = Promise.resolve([]);
    let opened: Awaited<ReturnType<typeof openCheckout>> | undefined;
    /** Whether the late users' enrollments are over (or there are none to wait for). */
    let lateOver = outside === undefined || LATE_USERS === 0;

    // ---- the work, and the kills ----
    const appIds = Array.from({ length: DECRYPTS }, (_, i) => chaosAppId(i));
    const workStartedAt = Date.now();
    let lastRequestAt = Date.now();
    const requesting = (async () => {
      for (const [i, appId] of appIds.entries()) {
        await site.expect(200, `/api/decrypt/KR/${appId}`, { cookie: users[i % USERS]!.cookie });
        lastRequestAt = Date.now();
        if (i < appIds.length - 1) await sleep(REQUEST_EVERY_MS);
      }
      say(`${DECRYPTS} decrypt requests made`);
    })();
    requesting.catch(() => {}); // awaited below, where a failure ends the run

    // The scenario's disruptions, spread over the requests' span (chaos/disruptions.ts).
    let lastRestartAt = Date.now();
    let lastKillAt = Date.now();
    let disrupted: Disrupted = { events: [], returns: [] };
    const disrupting = disrupt(SCENARIO, {
      apis,
      workers,
      all,
      database: ownCluster,
      storage: storagePart,
      disk,
      // Users pay while App Store Connect and Stripe are away: the first opened its checkout just
      // before (its payment is recorded, its registration waits for Apple), the others open theirs
      // meanwhile (refused 503 until Stripe is back).
      outsideApis: outside?.part(API_DOWN_MS, {
        before: async () => {
          if (LATE_USERS > 0) opened = await openCheckout(site, 'chaos-late-0');
        },
        during: () => {
          const late = (u: number) =>
            (u === 0 && opened ? opened.pay(outside) : userWithDevice(site, `chaos-late-${u}`, outside)).then(
              (user) => ({ user }),
              (err: Error) => ({ failed: `late user chaos-late-${u}: ${err.message}` }),
            );
          lateUsers = Promise.all(Array.from({ length: LATE_USERS }, (_, u) => late(u)));
          void lateUsers.then(() => (lateOver = true));
        },
      }),
      workStartedAt,
      spanMs: DECRYPTS * REQUEST_EVERY_MS,
      random,
      say,
      elapsed,
    }).then((d) => {
      disrupted = d;
      lastRestartAt = lastKillAt = d.returns.at(-1)?.at ?? Date.now();
    });

    // A steady read load beside the work, as people browsing: the latest list and one's own page,
    // each through whichever API answers, until the disruptions are over.
    const reads = { made: 0, failed: [] as string[] };
    let disruptionsOver = false;
    const reading = (async () => {
      for (let i = 0; !disruptionsOver; i++) {
        const pathname = i % 2 === 0 ? '/api/latest/0' : '/api/info';
        try {
          const res = await site.call(pathname, { cookie: users[i % USERS]!.cookie });
          await res.arrayBuffer();
          reads.made++;
          if (res.status !== 200) reads.failed.push(`GET ${pathname}: ${res.status}`);
        } catch (err) {
          reads.failed.push(`GET ${pathname}: ${(err as Error).message}`);
        }
        await sleep(250);
      }
    })();

    const asked = new Set<number>();
    /** Asks every planned sign whose version is Done; answers whether none such is left unasked. */
    const askSigns = async () => {
      const done = await doneVersions(db, appIds);
      for (const [j, plan] of signPlan.entries()) {
        const version = done.get(appIds[plan.appIndex]!);
        if (asked.has(j) || !version) continue;
        const res = await site.call(`/api/sign/${version.appId}/${version.appVerId}`, {
          method: 'PUT',
          cookie: users[plan.userIndex]!.cookie,
          json: { type: 0 },
        });
        if (res.status === 200) asked.add(j);
        else say(`sign ${j}: PUT answered ${res.status} ${await res.text()}`);
      }
      return signPlan.every((plan, j) => asked.has(j) || !done.has(appIds[plan.appIndex]!));
    };

    // ---- settling ----
    let killsDone = false;
    void disrupting.then(
      () => (killsDone = true),
      () => (killsDone = true),
    );
    let settledAt: number | undefined;
    let checkFailing = false;
    const deadline = () => (killsDone ? lastRestartAt + SETTLE_TIMEOUT_MS : Infinity);
    for (;;) {
      // While PostgreSQL is away the run's own queries fail too: it asks again a second later.
      const final = await askSigns()
        .then((allAsked) => isFinal(db, appIds, allAsked))
        .then((isDone) => {
          checkFailing = false;
          return isDone;
        })
        .catch((err: Error) => {
          if (!checkFailing) say(`settle check failed (${err.message}); trying again each second`);
          checkFailing = true;
          return false;
        });
      if (killsDone && final && lateOver) {
        settledAt = Date.now();
        break;
      }
      if (Date.now() > deadline()) break;
      await sleep(1000);
    }
    await disrupting;
    disruptionsOver = true;
    await reading;
    await requesting;
    const late = await lateUsers;
    const settleSeconds =
      settledAt === undefined ? undefined : Math.max(0, (settledAt - lastRestartAt) / 1000);
    /** From the last request: the work that came after the last restart. */
    const afterRequestSeconds =
      settledAt === undefined ? undefined : Math.max(0, (settledAt - lastRequestAt) / 1000);
    const settleText =
      settleSeconds === undefined
        ? 'not within the timeout'
        : `${settleSeconds.toFixed(1)} s after the last restart (${afterRequestSeconds!.toFixed(1)} s after the last request)`;
    say(settledAt ? `settled ${settleText}` : 'did NOT settle before the timeout');

    // ---- sweeps: every server process sweeps once more after its leftovers are old enough ----
    const sweptAfter = lastKillAt + ORPHAN_MINUTES * 60_000 + 2000;
    say(`waiting for every server process to sweep after ${new Date(sweptAfter).toISOString()}`);
    const sweepLines = (p: Managed) =>
      p.lines().filter((l) => l.msg?.startsWith('file sweep:') && (l.time ?? 0) >= sweptAfter);
    for (let i = 0; ; i++) {
      const everyone = servers.every((p) => sweepLines(p).length > 0);
      const storeSwept = servers.some((p) =>
        sweepLines(p).some((l) => (l.sweep as { stored?: unknown }).stored !== undefined),
      );
      if (everyone && storeSwept) break;
      if (i > 240) throw new Error('the processes did not sweep within four minutes');
      await sleep(1000);
    }
    const removedBySweeps = servers
      .flatMap((p) => p.lines())
      .filter((l) => l.msg?.startsWith('file sweep:'))
      .reduce((sum, l) => sum + Number(/removed (\d+) files/.exec(l.msg!)?.[1] ?? 0), 0);

    // ---- the counts ----
    const report = await account({ db, site, appIds, users, admin, caPem, asked, store });
    const resumes = await resumeTimes(db, disrupted.returns);
    const orphans = orphanedLocal(servers, agentWorkDir, disk, sharedDataDir);
    // Each user paid once and registered once at Apple (payments and enrollments through Stripe and ASC).
    const enrolled = outside
      ? await outside.account(db, [...users, ...late.flatMap((l) => (l.user ? [l.user] : []))])
      : { lost: [], duplicated: [] };
    const lostEnrollments = [...late.flatMap((l) => (l.failed ? [l.failed] : [])), ...enrolled.lost];
    const duplicates = [...duplicated(servers.flatMap((p) => p.lines())), ...enrolled.duplicated];
    const counts = {
      lost_decrypts: report.lostDecrypts.length,
      lost_signs: report.lostSigns.length,
      lost_enrollments: lostEnrollments.length,
      duplicated: duplicates.length,
      wrong_files: report.wrong.length,
      orphaned_stored: report.orphanStored.length,
      orphaned_agent_folders: orphans.agentFolders.length,
      orphaned_tmp: orphans.tmp.length,
      stuck: report.stuck.length,
      unanswered_5xx: site.tally.withoutSentence.length,
      failed_reads: reads.failed.length,
    };
    console.log('\n==== chaos run ====');
    console.log(
      `ran: ${SCENARIO}, ${DECRYPTS} decrypts, ${SIGNS} signs (${USERS} users), 2 API + 2 sign workers + 3 agents, storage ${STORAGE}, seed ${seed}`,
    );
    console.log(
      SCENARIO === 'kills'
        ? `kills: ${disrupted.events.length}: ${summarise(disrupted.events.map((k) => k.what))}`
        : `${SCENARIO}: ${disrupted.events.map((e) => `${e.what} at ${e.at}`).join(', ')}`,
    );
    console.log(`settle: ${settleText}`);
    console.log(
      `answers: ${site.tally.refusedWithSentence} 503s with a sentence and Retry-After, ${site.tally.withoutSentence.length} 5xx without; ${site.tally.unreachable} calls found a process gone (retried on the other, as a load balancer does)`,
    );
    console.log(
      `reads: ${reads.made} GETs of /api/latest/0 and /api/info beside the work, ${reads.failed.length} failed`,
    );
    if (SCENARIO === 'rolling') {
      const during = await finishedBetween(db, disrupted.began ?? workStartedAt, lastRestartAt);
      console.log(
        `during the roll: ${during.decrypts} decrypts and ${during.signs} signs finished while processes were replaced`,
      );
    } else
      for (const r of resumes)
        console.log(
          `resume after ${r.what}: decrypts ${seconds(r.decryptSeconds)}, signs ${seconds(r.signSeconds)}${r.registrationSeconds === undefined ? '' : `, every waiting device registered ${seconds(r.registrationSeconds)}`}`,
        );
    console.log(`sweeps removed ${removedBySweeps} files in all; after them:`);
    for (const [name, count] of Object.entries(counts)) console.log(`  ${name.padEnd(24)} ${count}`);
    for (const line of [
      ...report.lostDecrypts,
      ...report.lostSigns,
      ...lostEnrollments,
      ...duplicates,
      ...report.wrong,
      ...report.orphanStored.map((f) => `orphaned stored file ${f.key} (${f.sizeBytes} bytes)`),
      ...orphans.agentFolders.map((f) => `orphaned agent folder ${f}`),
      ...orphans.tmp.map((f) => `orphaned temporary file ${f}`),
      ...report.stuck,
      ...site.tally.withoutSentence.map((a) => `5xx without a sentence: ${a}`),
      ...reads.failed.map((r) => `read failed: ${r}`),
    ])
      console.log(`  - ${line}`);
    console.log(
      `total ${((Date.now() - startedAt) / 1000).toFixed(0)} s; logs in ${logs}${KEEP ? '' : ' (removed; CHAOS_KEEP=1 keeps them)'}`,
    );
    console.log(
      JSON.stringify({
        chaos: {
          seed,
          decrypts: DECRYPTS,
          signs: SIGNS,
          scenario: SCENARIO,
          disruptions: disrupted.events.length,
          settleSeconds,
          refusedWithSentence: site.tally.refusedWithSentence,
          reads: reads.made,
          resumes,
          afterRequestSeconds,
          counts,
        },
      }),
    );
    process.exitCode = Object.values(counts).some((n) => n > 0) || settledAt === undefined ? 1 : 0;
  } finally {
    await Promise.all(all().map((p) => p.stop()));
    await db.end();
    await itunes.close();
    await s3?.close();
    await database.drop();
    await ownCluster?.dispose();
    await outside?.close();
    disk?.dispose();
    if (!KEEP) rmSync(work, { recursive: true, force: true });
  }
}

interface DoneVersion {
  seq: number;
  appId: number;
  appVerId: number;
}

async function doneVersions(db: pg.Pool, appIds: number[]): Promise<Map<number, DoneVersion>> {
  const { rows } = await db.query<{ seq: string; app_id: string; app_ver_id: string }>(
    `select seq, app_id, app_ver_id from versions where app_id = any($1) and status = 'Done'`,
    [appIds],
  );
  return new Map(
    rows.map((r) => [
      Number(r.app_id),
      { seq: Number(r.seq), appId: Number(r.app_id), appVerId: Number(r.app_ver_id) },
    ]),
  );
}

/** Every request final: each app's entry Done or Not, and every sign asked Done or No with no job open. */
async function isFinal(db: pg.Pool, appIds: number[], allAsked: boolean): Promise<boolean> {
  const { rows } = await db.query<{ open: number; final: number; signs_open: number }>(
    `select (select count(*)::int from versions where app_id = any($1) and status not in ('Done', 'Not')) as open,
            (select count(distinct app_id)::int from versions where app_id = any($1) and status in ('Done', 'Not')) as final,
            (select count(*)::int from sign_requests where state in ('queued', 'leased') or status in ('Pending', 'Process')) as signs_open`,
    [appIds],
  );
  const row = rows[0]!;
  return allAsked && row.open === 0 && row.final === appIds.length && row.signs_open === 0;
}

/** Lost, wrong, stuck and stored-orphan findings, from the database and the files handed out. */
async function account(options: {
  db: pg.Pool;
  site: Site;
  appIds: number[];
  users: User[];
  admin: string;
  caPem: string;
  asked: Set<number>;
  store: Awaited<ReturnType<typeof createFileStore>>;
}) {
  const { db, site, appIds, users, admin, caPem } = options;
  const lostDecrypts: string[] = [];
  const lostSigns: string[] = [];
  const wrong: string[] = [];
  const stuck: string[] = [];

  const { rows: versions } = await db.query<{
    seq: string;
    app_id: string;
    app_ver_id: string | null;
    status: string;
    reason: string | null;
  }>(`select seq, app_id, app_ver_id, status, reason from versions where app_id = any($1) order by app_id`, [
    appIds,
  ]);
  const { rows: jobs } = await db.query<{
    id: string;
    version_seq: string;
    state: string;
    attempts: number;
    last_reason: string | null;
  }>(`select id, version_seq, state, attempts, last_reason from jobs where kind = 'decrypt'`);
  const jobOf = new Map(jobs.map((j) => [Number(j.version_seq), j]));
  for (const appId of appIds) {
    const rows = versions.filter((v) => Number(v.app_id) === appId);
    const done = rows.filter((v) => v.status === 'Done');
    if (done.length === 0) {
      const shown =
        rows.map((v) => `${v.status}${v.reason ? ` (${v.reason})` : ''}`).join(', ') || 'no entry';
      lostDecrypts.push(`decrypt of app ${appId} never Done: ${shown}`);
    }
    for (const v of rows.filter((r) => !['Done', 'Not'].includes(r.status)))
      stuck.push(`decrypt of app ${appId} still ${v.status}`);
    for (const v of done) {
      const job = jobOf.get(Number(v.seq));
      const link = await site.expect<{ url: string }>(200, `/api/download/${appId}/${v.app_ver_id}`, {
        cookie: admin,
      });
      const ipa = await readIpa(await site.download(link.url));
      const why = wrongDecrypted(ipa, {
        bundleId: chaosBundleId(appId),
        appVerId: chaosAppVerId(appId),
        displayName: job ? chaosDisplayName(`${job.id}-${job.attempts}`) : '(no job)',
      });
      if (why) wrong.push(`decrypted IPA of app ${appId}: ${why}`);
    }
  }
  for (const job of jobs.filter((j) => j.state === 'queued' || j.state === 'leased'))
    stuck.push(`decrypt job ${job.id} still ${job.state}`);

  const { rows: signs } = await db.query<{
    id: string;
    user_id: string;
    app_id: string;
    app_ver_id: string;
    status: string;
    state: string;
    last_reason: string | null;
  }>(`select id, user_id, app_id, app_ver_id, status, state, last_reason from sign_requests`);
  for (const [j, plan] of signPlan.entries()) {
    const appId = appIds[plan.appIndex]!;
    const user = users[plan.userIndex]!;
    const row = signs.find((s) => s.user_id === user.id && Number(s.app_id) === appId);
    if (!options.asked.has(j) || !row) {
      lostSigns.push(`sign ${j} (app ${appId} for ${user.id}) never asked: its version was not Done`);
      continue;
    }
    if (row.status !== 'Done') {
      lostSigns.push(
        `sign ${row.id} (app ${appId} for ${user.id}) ended ${row.status}${row.last_reason ? ` (${row.last_reason})` : ''}`,
      );
      continue;
    }
    const job = jobOf.get(
      Number(versions.find((v) => Number(v.app_id) === appId && v.status === 'Done')?.seq),
    );
    const install = await site.expect<{ url: string }>(200, `/api/install/${appId}/${row.app_ver_id}/0`, {
      cookie: user.cookie,
    });
    const manifestUrl = new URL(install.url).searchParams.get('url')!;
    const manifest = parsePlistDict(await site.download(manifestUrl), 'the install manifest');
    const [item] = manifest.items as Array<{ assets: Array<{ url: string }> }>;
    const ipa = await readIpa(await site.download(item!.assets[0]!.url));
    const why = wrongSigned(ipa, {
      bundleId: chaosBundleId(appId),
      displayName: job ? chaosDisplayName(`${job.id}-${job.attempts}`) : '(no job)',
      udid: user.udid,
      caPem,
    });
    if (why) wrong.push(`signed artifact ${row.id} (app ${appId} for ${user.id}): ${why}`);
  }
  for (const s of signs.filter(
    (r) => r.state === 'queued' || r.state === 'leased' || r.status === 'Pending' || r.status === 'Process',
  ))
    stuck.push(`sign ${s.id} still ${s.status}/${s.state}`);

  const { rows: refs } = await db.query<{ key: string }>(
    `select file_key as key from versions where file_key is not null
     union select file_key from sign_requests where file_key is not null
     union select source_key from sign_requests where source_key is not null`,
  );
  const { rows: kept } = await db.query<{ v: string }>(
    `select app_id || '-' || app_ver_id as v from versions where app_ver_id is not null`,
  );
  const orphanStored = await unnamedStoredFiles(
    options.store,
    new Set(refs.map((r) => r.key)),
    new Set(kept.map((r) => r.v)),
  );
  return { lostDecrypts, lostSigns, wrong, stuck, orphanStored };
}

/** A server process's DATA_DIR: its own (on the run's small disk when there is one), or the shared one. */
function dataDirOf(name: string, disk: SmallDisk | undefined, sharedDataDir: string) {
  return STORAGE === 's3' ? path.join(disk?.dir ?? work, name) : sharedDataDir;
}

/** Agent job folders, and files in the servers' DATA_DIR/tmp and temp folders, after the sweeps. */
function orphanedLocal(
  servers: Managed[],
  agentWorkDir: string,
  disk: SmallDisk | undefined,
  sharedDataDir: string,
) {
  const dataDirs = [...new Set(servers.map((p) => dataDirOf(p.name, disk, sharedDataDir)))];
  return {
    agentFolders: foldersIn(agentWorkDir, 'job-'),
    tmp: [
      ...dataDirs.flatMap((dir) =>
        filesUnder(path.join(dir, 'tmp')).map((f) => `${f.path} (${f.sizeBytes} bytes)`),
      ),
      ...servers.flatMap((p) => foldersIn(path.join(work, `${p.name}-os-tmp`), 'sideport-sign-')),
    ],
  };
}

/** A version or sign accepted more than once, from the processes' own log lines. */
function duplicated(lines: LogLine[]): string[] {
  const count = (key: string | undefined, into: Map<string, number>) =>
    key !== undefined && into.set(key, (into.get(key) ?? 0) + 1);
  const decrypts = new Map<string, number>();
  const signs = new Map<string, number>();
  for (const line of lines) {
    if (line.msg === 'decrypted version accepted') count(String(line.appId), decrypts);
    const signed = /^sign (\d+): signed$/.exec(line.msg ?? '');
    if (signed) count(signed[1], signs);
  }
  return [
    ...[...decrypts].filter(([, n]) => n > 1).map(([app, n]) => `app ${app}'s upload accepted ${n} times`),
    ...[...signs].filter(([, n]) => n > 1).map(([sign, n]) => `sign ${sign} signed ${n} times`),
  ];
}

const seconds = (value: number | undefined) =>
  value === undefined
    ? 'none finished before the next disruption (or none was left)'
    : `${value.toFixed(1)} s`;

/**
 * For each part or process that came back: seconds until the first decrypt (a version Done) and
 * the first sign (signed) finished after it, and the last device registration, before the next
 * disruption; undefined where none did (no work was left, or the next disruption came first).
 */
async function resumeTimes(db: pg.Pool, returns: Disrupted['returns']) {
  const firstAfter = async (
    table: 'versions' | 'sign_requests' | 'devices',
    column: string,
    from: number,
    until: number,
    which: 'min' | 'max' = 'min',
  ) => {
    const { rows } = await db.query<{ first: Date | null }>(
      `select ${which}(${column}) as first from ${table} where ${column} >= $1 and ${column} < $2`,
      [new Date(from), new Date(until)],
    );
    const first = rows[0]?.first;
    return first ? Math.max(0, (first.getTime() - from) / 1000) : undefined;
  };
  const out: Array<{
    what: string;
    decryptSeconds?: number;
    signSeconds?: number;
    registrationSeconds?: number;
  }> = [];
  for (const r of returns) {
    const until = r.until ?? Date.now();
    const decryptSeconds = await firstAfter('versions', 'done_at', r.at, until);
    const signSeconds = await firstAfter('sign_requests', 'signed_at', r.at, until);
    // The last: every device that waited out the part is registered by then.
    const registrationSeconds = await firstAfter('devices', 'registered_at', r.at, until, 'max');
    out.push({
      what: r.what,
      ...(decryptSeconds !== undefined ? { decryptSeconds } : {}),
      ...(signSeconds !== undefined ? { signSeconds } : {}),
      ...(registrationSeconds !== undefined ? { registrationSeconds } : {}),
    });
  }
  return out;
}

/** Decrypts (versions Done) and signs (signed) that finished between two moments. */
async function finishedBetween(db: pg.Pool, from: number, until: number) {
  const { rows } = await db.query<{ decrypts: number; signs: number }>(
    `select (select count(*)::int from versions where done_at >= $1 and done_at < $2) as decrypts,
            (select count(*)::int from sign_requests where signed_at >= $1 and signed_at < $2) as signs`,
    [new Date(from), new Date(until)],
  );
  return rows[0]!;
}

function summarise(names: string[]) {
  const counts = new Map<string, number>();
  for (const name of names) counts.set(name, (counts.get(name) ?? 0) + 1);
  return [...counts].map(([name, n]) => `${name} x${n}`).join(', ') || 'none';
}

await main();
