/**
 * Sign service benchmark: ten users sign the same version of about 300 MB of content through the
 * service, one after another, each from PUT /api/sign to its Done event: the first sign and the
 * median of the next nine. In the same run, alternating with them, `sideport-ipa sign` (the CLI, a
 * process of its own) on the same file with the same identity and a profile of the same devices: a
 * first sign with an empty digest cache, and the n-th user's sign (its cache filled). Then a crowd:
 * fifty more users ask at once, and the time until every one's sign is Done is set against fifty
 * of the CLI's n-th signs shared among the sign workers, with what the version's cache holds after
 * (one set of digests, one kept executable, one copied stretch). The crowd's floor, in the same run:
 * as many kernel copies (`cp`) of one signed IPA, as many at a time as there are sign workers, so
 * the crowd's time can be read against what merely writing its artifacts costs on this disk.
 *
 *   npm run bench:sign-service   (BENCH_SIZE_MB=300 BENCH_USERS=10 BENCH_CROWD=50 SIGN_WORKERS=2 to change;
 *   BENCH_LOG_LEVEL=info prints the service's log, each sign's time in it)
 *
 * The service runs as built (`npm run build` first, which the script does): the embedded default,
 * PGlite and local disk, one in-process sign worker whose signing processes start with
 * SIGN_PROCESS_TUNING, the version's digest cache filled when it became Done.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../../apps/server/dist/app.js';
import { openDatabase } from '../../apps/server/dist/db/client.js';
import { startItunesServer } from '../../apps/server/dist/dev/itunes-server.js';
import * as devices from '../../apps/server/dist/modules/devices/queries.js';
import { exportP12 } from '../../apps/server/dist/modules/sign/feather-cert.js';
import { loadConfig } from '../../apps/server/dist/platform/config.js';
import { makeBenchIpa } from '../sign/make-ipa.js';
import { median, seconds, udidOf, signUp } from '../lib.js';

const SIZE_MB = Number(process.env.BENCH_SIZE_MB ?? 300);
const USERS = Number(process.env.BENCH_USERS ?? 10);
const CROWD = Number(process.env.BENCH_CROWD ?? 50);
const WORKERS = process.env.SIGN_WORKERS ?? '2';
const root = path.resolve(import.meta.dirname, '../..');
const fixture = path.join(root, 'fixtures/binaries/fastlane_very-capable-app_arm64_cryptid0.ipa');
const cli = path.join(root, 'packages/ipa/bin/sideport-ipa.js');
const work = mkdtempSync(path.join(tmpdir(), 'sideport-bench-sign-service-'));
const APP_ID = 9_100_001;
const APP_VER_ID = 910_000_001;

async function main() {
  console.log(`building an IPA of ${SIZE_MB} MB of content ...`);
  const input = path.join(work, 'app.ipa');
  await makeBenchIpa(fixture, input, SIZE_MB * 1024 * 1024);
  const ipaMB = statSync(input).size / 1024 / 1024;

  // The store knows the app: a record of the fixture's bundle id (the recorded Facebook answer's shape).
  const record = JSON.parse(
    readFileSync(path.join(root, 'fixtures/itunes/fastlane_itunesLookup-284882215.json'), 'utf8'),
  ).results[0];
  const store = await startItunesServer({
    records: [
      {
        ...record,
        trackId: APP_ID,
        bundleId: 'org.fastlane.very-capable-app',
        trackName: 'Bench App',
        version: '1.0',
        price: 0,
      },
    ],
  });
  const dataDir = path.join(work, 'data');
  const config = loadConfig({
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'silent',
    DATA_DIR: dataDir,
    WEB_DIST_DIR: dataDir,
    ITUNES_BASE_URL: store.url,
    SIGN_IN_LIMIT_PER_ADDRESS: '1000',
    SIGN_WORKERS: WORKERS,
  });
  const database = await openDatabase({ pgliteDir: path.join(dataDir, 'db') });
  await database.migrate();
  const { app, services } = await buildApp({ config, database });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

  try {
    console.log('importing it as a Done version (its digest cache is filled then) ...');
    const importStarted = performance.now();
    await services.jobs.importIpa(input, { country: 'KR', appId: APP_ID, appVerId: APP_VER_ID });
    const importMs = performance.now() - importStarted;

    // When each sign became Done, as the owner's live events tell it.
    const doneAt = new Map<string, number>();
    services.bus.subscribe((m) => {
      if (m.kind === 'live' && m.event.type === 'sign' && m.event.status === 'Done' && m.userId)
        doneAt.set(m.userId, performance.now());
    });

    // The CLI signs with the service's own identity and a profile of the same kind (one device).
    await signUp(base, 'benchcli');
    await devices.insertDevice(database.db, {
      userId: 'benchcli',
      product: 'iPhone15,2',
      udid: udidOf(0),
      status: 'Registered',
    });
    const material = (await services.signing.signingMaterial('benchcli'))!;
    const p12 = path.join(work, 'id.p12');
    const profile = path.join(work, 'cli.mobileprovision');
    writeFileSync(p12, exportP12(material.identity, 'bench-password'));
    writeFileSync(profile, material.profile);
    let coldCaches = 0;
    const cliSign = (cacheDir: string) => {
      const started = performance.now();
      execFileSync(
        cli,
        [
          'sign',
          input,
          '-o',
          path.join(work, 'cli-out.ipa'),
          '--p12',
          p12,
          '--password-env',
          'BENCH_P12_PW',
          '--profile',
          profile,
          '--cache-dir',
          cacheDir,
        ],
        {
          env: { ...process.env, BENCH_P12_PW: 'bench-password' },
          stdio: 'ignore',
        },
      );
      return performance.now() - started;
    };
    const cliCold = () => cliSign(path.join(work, `cli-cold-${coldCaches++}`));
    const warmCache = path.join(work, 'cli-warm');
    cliSign(warmCache); // fills the CLI's own cache

    const users = await Promise.all(
      Array.from({ length: USERS + CROWD }, async (_, i) => {
        const id = `benchuser${i}`;
        const cookie = await signUp(base, id);
        await devices.insertDevice(database.db, {
          userId: id,
          product: 'iPhone15,2',
          udid: udidOf(i + 1),
          status: 'Registered',
        });
        return { id, cookie };
      }),
    );

    const askToSign = async (user: { cookie: string }) => {
      const res = await fetch(`${base}/api/sign/${APP_ID}/${APP_VER_ID}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', cookie: user.cookie, 'x-sideport-client': 'web' },
        body: JSON.stringify({ type: 0 }),
      });
      if (res.status !== 200) throw new Error(`sign request refused: ${res.status} ${await res.text()}`);
    };
    const service: number[] = [];
    const cached: number[] = [];
    const cold: number[] = [cliCold()];
    for (const [i, user] of users.slice(0, USERS).entries()) {
      const started = performance.now();
      await askToSign(user);
      while (!doneAt.has(user.id)) await new Promise((resolve) => setTimeout(resolve, 5));
      service.push(doneAt.get(user.id)! - started);
      console.log(`  user ${i + 1}: ${seconds(service.at(-1)!)}`);
      cached.push(cliSign(warmCache));
      if (i % 4 === 3) cold.push(cliCold());
    }

    // The crowd: every one asks at once. The crowd and its floor below each start with nothing
    // left to write back from what ran before.
    const crowd = users.slice(USERS);
    execFileSync('sync');
    const crowdStarted = performance.now();
    await Promise.all(crowd.map(askToSign));
    while (crowd.some((user) => !doneAt.has(user.id)))
      await new Promise((resolve) => setTimeout(resolve, 20));
    const crowdMs = Math.max(...crowd.map((user) => doneAt.get(user.id)!)) - crowdStarted;
    execFileSync('sync');
    const floorMs = await copyFloor(path.join(work, 'cli-out.ipa'), CROWD, Number(WORKERS));
    const cacheRoot = path.join(dataDir, 'sign-cache', 'versions', `${APP_ID}-${APP_VER_ID}`);
    const kept = (folder: string, suffix: string) => {
      try {
        return readdirSync(path.join(cacheRoot, folder)).filter((name) => name.endsWith(suffix)).length;
      } catch {
        return 0;
      }
    };

    const [first, ...rest] = service;
    const next = median(rest);
    const cliCachedMs = median(cached);
    const cliColdMs = median(cold);
    console.log(
      `\nsign service, ${USERS} users signing one version (${SIZE_MB} MB of content, ${ipaMB.toFixed(0)} MB IPA), mode 0:`,
    );
    console.log(`  import as a Done version (check, store, digest cache filled): ${seconds(importMs)}`);
    console.log(`  first sign through the service (PUT to Done):   ${seconds(first!)}`);
    console.log(
      `  median of the next ${rest.length}:                       ${seconds(next)}  (min ${seconds(Math.min(...rest))}, max ${seconds(Math.max(...rest))})`,
    );
    console.log(`  sideport-ipa sign, empty digest cache (median of ${cold.length}): ${seconds(cliColdMs)}`);
    console.log(
      `  sideport-ipa sign, filled digest cache (median of ${cached.length}): ${seconds(cliCachedMs)}`,
    );
    console.log('ratios:');
    console.log(`  service first / CLI empty cache:  ${(first! / cliColdMs).toFixed(2)}`);
    console.log(`  service first / CLI filled cache: ${(first! / cliCachedMs).toFixed(2)}`);
    console.log(`  service next  / CLI filled cache: ${(next / cliCachedMs).toFixed(2)}`);
    const bound = (CROWD * cliCachedMs) / Number(WORKERS);
    console.log(`\n${CROWD} users asking at once, ${WORKERS} sign workers:`);
    console.log(`  every sign Done after ${seconds(crowdMs)} (${seconds(crowdMs / CROWD)} per user)`);
    console.log(
      `  target ${CROWD} x the CLI's n-th sign / ${WORKERS} workers = ${seconds(bound)}: ${(crowdMs / bound).toFixed(2)} of it, ${crowdMs <= bound ? 'met' : 'MISSED'}`,
    );
    console.log(
      `  floor: ${CROWD} kernel copies (cp) of one signed IPA, ${WORKERS} at a time: ${seconds(floorMs)}; the crowd took ${(crowdMs / floorMs).toFixed(2)}x that`,
    );
    console.log(
      `  the version's cache: ${kept('resource-digests', '.json')} digest sets (one per mode family, made once when it became Done), ${kept('code', '.json')} kept executable, ${kept('copies', '.zip-prefix')} copied stretch`,
    );
  } finally {
    await app.close();
    await database.close();
    await store.close();
    rmSync(work, { recursive: true, force: true });
  }
}

/** Wall time of `count` copies of `file` with cp, `atOnce` at a time; the copies are removed after. */
async function copyFloor(file: string, count: number, atOnce: number): Promise<number> {
  const folder = mkdtempSync(path.join(work, 'copy-floor-'));
  const run = promisify(execFile);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: atOnce }, async () => {
      while (next < count) await run('cp', [file, path.join(folder, `${next++}.ipa`)]);
    }),
  );
  const ms = performance.now() - started;
  rmSync(folder, { recursive: true, force: true });
  return ms;
}

await main();
