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
 * versions become Done, while CHAOS_KILLS times a random process is SIGKILLed and restarted.
 * Afterwards, once the work has settled and every process has swept its files, it reports:
 *   lost        decrypts not Done, signs not Done
 *   duplicated  a version or sign accepted more than once (the processes' own log lines)
 *   wrong       a Done IPA that is not the one its job produced (bundle id, store version, job),
 *               a signed artifact that does not verify or is not for its user's device
 *   orphaned    stored files no row names, agent job folders, DATA_DIR/tmp files and signing
 *               spools left after the sweep
 *   stuck       work neither finished nor given up once settled
 *   settle      seconds from the last restart until every request was final
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
import { createFileStore } from '../apps/server/src/platform/storage.js';
import { chaosAppId, chaosAppVerId, chaosBundleId, chaosDisplayName } from './apps.js';
import { filesUnder, foldersIn, readIpa, unnamedStoredFiles, wrongDecrypted, wrongSigned } from './checks.js';
import { managedProcess, type LogLine, type Managed } from './processes.js';
import { createSite, type Site } from './site.js';

const int = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 0)
    throw new Error(`${name} must be a whole number, not ${process.env[name]}`);
  return value;
};
const DECRYPTS = int('CHAOS_DECRYPTS', 16);
const USERS = Math.max(1, int('CHAOS_USERS', 3));
const SIGNS = Math.min(int('CHAOS_SIGNS', 16), DECRYPTS * USERS);
const KILLS = int('CHAOS_KILLS', 10);
/** Decrypt requests come this far apart; the kills fall at random times while they come. */
const REQUEST_EVERY_MS = int('CHAOS_REQUEST_EVERY_MS', 3000);
/** A killed process is started again after a pause drawn between these. */
const RESTART_MS = [500, 2000] as const;
const STEP_MS = int('CHAOS_STEP_MS', 1000);
const SETTLE_TIMEOUT_MS = int('CHAOS_SETTLE_TIMEOUT_S', 300) * 1000;
const STORAGE = process.env.CHAOS_STORAGE === 'local' ? 'local' : 's3';
const KEEP = process.env.CHAOS_KEEP === '1';
/** The processes' lease and sweep settings: short, so a run takes minutes. */
const LEASE_SECONDS = 10;
const ORPHAN_MINUTES = 1;

const adminUrl = process.env.CHAOS_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
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
const between = ([low, high]: readonly [number, number]) => low + Math.floor(random() * (high - low + 1));

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

/** A user with a simulated iPhone enrolled, paid on the test-mode checkout and Registered. */
async function userWithDevice(site: Site, id: string): Promise<User> {
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
  await site.expect(303, `${new URL(checkout.url).pathname}/pay`, {
    method: 'POST',
    cookie,
    body: new Uint8Array(),
    contentType: 'application/x-www-form-urlencoded',
  });
  for (let i = 0; !(await info()).some((d) => d.UDID === device.udid && d.status === 'Registered'); i++) {
    if (i > 240) throw new Error(`${id}'s device was not Registered within two minutes`);
    await sleep(500);
  }
  return { id, cookie, udid: device.udid };
}

/** Sign j: the version j % DECRYPTS, for a user no other sign of that version has. */
const signPlan = Array.from({ length: SIGNS }, (_, j) => ({
  appIndex: j % DECRYPTS,
  userIndex: (j + Math.floor(j / DECRYPTS)) % USERS,
}));

async function main() {
  say(
    `chaos: ${DECRYPTS} decrypts, ${SIGNS} signs, ${USERS} users, ${KILLS} kills, storage ${STORAGE}, seed ${seed}; work in ${work}`,
  );
  const database = await createDatabase();
  const db = new pg.Pool({ connectionString: database.url, max: 3 });
  const itunes = await startItunesServer({ records: storeRecords() });
  let s3: S3rver | undefined;
  let storageEnv: Record<string, string> = {};
  const sharedDataDir = path.join(work, 'data');
  if (STORAGE === 's3') {
    const s3Dir = path.join(work, 's3');
    mkdirSync(s3Dir);
    s3 = new S3rver({
      port: 0,
      address: '127.0.0.1',
      directory: s3Dir,
      silent: true,
      configureBuckets: [{ name: 'chaos', configs: [] }],
    });
    const { port } = await s3.run();
    // s3rver's fixed credentials, found by the AWS SDK the usual way (here and in every process).
    process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
    process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
    storageEnv = {
      STORAGE_URL: `s3://chaos/sideport?endpoint=http://127.0.0.1:${port}&region=us-east-1&forcePathStyle=true`,
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    };
  }
  const store = createFileStore({ storageUrl: storageEnv.STORAGE_URL, dataDir: sharedDataDir });

  const logs = path.join(work, 'logs');
  mkdirSync(logs);
  const apiPorts = [await freePort(), await freePort()];
  const origins = apiPorts.map((port) => `http://127.0.0.1:${port}`);
  const site = createSite(origins);
  const secretKey = randomBytes(32).toString('base64');
  const adminPassword = randomBytes(12).toString('base64url');
  /** Each server process's own DATA_DIR (one shared on local disk) and temp folder. */
  const folders = (name: string) => {
    const dataDir = STORAGE === 's3' ? path.join(work, name) : sharedDataDir;
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
    const caPem = await site.expect<string>(200, '/api/admin/identity/ca.pem', { cookie: admin });
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
    for (let u = 0; u < USERS; u++) users.push(await userWithDevice(site, `chaos-user-${u}`));
    say(`${USERS} users with a Registered simulated iPhone each`);

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

    // Each kill at a random moment of the requests' span, one at a time (a process restarts first).
    const killTimes = Array.from({ length: KILLS }, () => between([2000, DECRYPTS * REQUEST_EVERY_MS])).sort(
      (a, b) => a - b,
    );
    const kills: Array<{ at: string; victim: string }> = [];
    let lastRestartAt = Date.now();
    let lastKillAt = Date.now();
    const killing = (async () => {
      for (let k = 0; k < KILLS; k++) {
        await sleep(Math.max(0, workStartedAt + killTimes[k]! - Date.now()));
        const victim = all()[Math.floor(random() * all().length)]!;
        lastKillAt = Date.now();
        await victim.kill();
        kills.push({ at: elapsed().trim(), victim: victim.name });
        say(`kill ${k + 1}/${KILLS}: ${victim.name} (SIGKILL)`);
        await sleep(between(RESTART_MS));
        await victim.start();
        lastRestartAt = Date.now();
        say(`           ${victim.name} restarted`);
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
    void killing.then(
      () => (killsDone = true),
      () => (killsDone = true),
    );
    let settledAt: number | undefined;
    const deadline = () => (killsDone ? lastRestartAt + SETTLE_TIMEOUT_MS : Infinity);
    for (;;) {
      const allAsked = await askSigns();
      const final = await isFinal(db, appIds, allAsked);
      if (killsDone && final) {
        settledAt = Date.now();
        break;
      }
      if (Date.now() > deadline()) break;
      await sleep(1000);
    }
    await killing;
    await requesting;
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
    const orphans = orphanedLocal(servers, agentWorkDir, sharedDataDir);
    const duplicates = duplicated(servers.flatMap((p) => p.lines()));
    const counts = {
      lost_decrypts: report.lostDecrypts.length,
      lost_signs: report.lostSigns.length,
      duplicated: duplicates.length,
      wrong_files: report.wrong.length,
      orphaned_stored: report.orphanStored.length,
      orphaned_agent_folders: orphans.agentFolders.length,
      orphaned_tmp: orphans.tmp.length,
      stuck: report.stuck.length,
    };
    console.log('\n==== chaos run ====');
    console.log(
      `ran: ${DECRYPTS} decrypts, ${SIGNS} signs (${USERS} users), 2 API + 2 sign workers + 3 agents, storage ${STORAGE}, seed ${seed}`,
    );
    console.log(`kills: ${kills.length}: ${summarise(kills.map((k) => k.victim))}`);
    console.log(`settle: ${settleText}`);
    console.log(`sweeps removed ${removedBySweeps} files in all; after them:`);
    for (const [name, count] of Object.entries(counts)) console.log(`  ${name.padEnd(24)} ${count}`);
    for (const line of [
      ...report.lostDecrypts,
      ...report.lostSigns,
      ...duplicates,
      ...report.wrong,
      ...report.orphanStored.map((f) => `orphaned stored file ${f.key} (${f.sizeBytes} bytes)`),
      ...orphans.agentFolders.map((f) => `orphaned agent folder ${f}`),
      ...orphans.tmp.map((f) => `orphaned temporary file ${f}`),
      ...report.stuck,
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
          kills: kills.length,
          settleSeconds,
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
  store: ReturnType<typeof createFileStore>;
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

/** Agent job folders, and files in the servers' DATA_DIR/tmp and temp folders, after the sweeps. */
function orphanedLocal(servers: Managed[], agentWorkDir: string, sharedDataDir: string) {
  const dataDirs = STORAGE === 's3' ? servers.map((p) => path.join(work, p.name)) : [sharedDataDir];
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

function summarise(names: string[]) {
  const counts = new Map<string, number>();
  for (const name of names) counts.set(name, (counts.get(name) ?? 0) + 1);
  return [...counts].map(([name, n]) => `${name} x${n}`).join(', ') || 'none';
}

await main();
