/**
 * Recovery benchmark (issue 23): N users x M apps are signed through the service; the signing
 * certificate is then revoked at a real OCSP responder (openssl ocsp, at OCSP_URL), an install's
 * preflight finds it, and recovery makes a new certificate, new profiles and re-signs every
 * artifact in the background. Measured: from the preflight's 409 to the last artifact installable
 * again (every check-sign answers 200 after it), with the per-version digest caches filled when
 * the versions became Done. Baseline, in the same run: the same N x M signs from scratch (no
 * digest cache), with `sideport-ipa sign` one after another, as one sign worker would.
 *
 *   npm run bench:resign      (BENCH_USERS=10 BENCH_APPS=3 BENCH_SIZE_MB=40 to change)
 *
 * The service runs as built (`npm run build` first, which the script does): the embedded default,
 * PGlite and local disk, one in-process sign worker.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../../apps/server/dist/app.js';
import { openDatabase } from '../../apps/server/dist/db/client.js';
import { startItunesServer } from '../../apps/server/dist/dev/itunes-server.js';
import * as devices from '../../apps/server/dist/modules/devices/queries.js';
import { createDevIdentity } from '../../apps/server/dist/modules/identity/dev-identity.js';
import { saveDevIdentity } from '../../apps/server/dist/modules/identity/dev-identity-provider.js';
import { exportP12 } from '../../apps/server/dist/modules/sign/feather-cert.js';
import { loadConfig } from '../../apps/server/dist/platform/config.js';
import { createSecretBox } from '../../apps/server/dist/platform/secrets.js';
import { startOcspResponder } from '../../apps/server/src/test/ocsp-responder.js';
import { makeBenchIpa } from '../sign/make-ipa.js';
import { seconds, udidOf, signUp } from '../lib.js';

const USERS = Number(process.env.BENCH_USERS ?? 10);
const APPS = Number(process.env.BENCH_APPS ?? 3);
const SIZE_MB = Number(process.env.BENCH_SIZE_MB ?? 40);
const root = path.resolve(import.meta.dirname, '../..');
const fixture = path.join(root, 'fixtures/binaries/fastlane_very-capable-app_arm64_cryptid0.ipa');
const cli = path.join(root, 'packages/ipa/bin/sideport-ipa.js');
const work = mkdtempSync(path.join(tmpdir(), 'sideport-bench-resign-'));
const SECRET_KEY = 'bench-resign-secret-key-of-enough-length';
const FIRST_APP_ID = 9_200_001;
const appVerIdOf = (app: number) => 920_000_001 + app;

const until = async (done: () => boolean) => {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 5));
};

async function main() {
  console.log(`building an IPA of ${SIZE_MB} MB of content ...`);
  const input = path.join(work, 'app.ipa');
  await makeBenchIpa(fixture, input, SIZE_MB * 1024 * 1024);
  const ipaMB = statSync(input).size / 1024 / 1024;

  // M store apps of the fixture's bundle id (the recorded answer's shape), each a version of its own.
  const record = JSON.parse(
    readFileSync(path.join(root, 'fixtures/itunes/fastlane_itunesLookup-284882215.json'), 'utf8'),
  ).results[0];
  const appIds = Array.from({ length: APPS }, (_, i) => FIRST_APP_ID + i);
  const store = await startItunesServer({
    records: appIds.map((trackId, i) => ({
      ...record,
      trackId,
      bundleId: 'org.fastlane.very-capable-app',
      trackName: `Bench App ${i + 1}`,
      version: '1.0',
      price: 0,
    })),
  });

  // The dev identity is made here, so the responder can answer for its CA.
  const identity = createDevIdentity();
  const responder = await startOcspResponder({ caPem: identity.caCertPem, caKeyPem: identity.caKeyPem });
  await responder.setStatus(identity.certPem, 'good');
  const dataDir = path.join(work, 'data');
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    DATA_DIR: dataDir,
    WEB_DIST_DIR: dataDir,
    ITUNES_BASE_URL: store.url,
    SIGN_IN_LIMIT_PER_ADDRESS: '100000',
    SECRET_KEY,
    OCSP_URL: responder.url,
    OCSP_CACHE_MINUTES: '0',
    RECOVERY_CHECK_MINUTES: '0',
    REGISTRATION_INTERVAL_SECONDS: '0',
  });
  const database = await openDatabase({ pgliteDir: path.join(dataDir, 'db') });
  await database.migrate();
  await saveDevIdentity(database.db, createSecretBox(SECRET_KEY), identity);
  const { app, services } = await buildApp({ config, database });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

  try {
    console.log(`importing it as ${APPS} Done versions (each one's digest cache is filled then) ...`);
    for (const [i, appId] of appIds.entries())
      await services.jobs.importIpa(input, { country: 'KR', appId, appVerId: appVerIdOf(i) });

    // Every Done of every user's sign, as their live events tell it, and which came after recovery began.
    const done = new Map<string, number>();
    // When recovery queued its first re-sign: the new certificate and profiles were made by then.
    let firstResignAt: number | undefined;
    services.bus.subscribe((m) => {
      if (m.kind !== 'live' || m.event.type !== 'sign' || !m.userId) return;
      if (m.event.status === 'Done') done.set(`${m.userId}/${m.event.app_id}`, performance.now());
      if (m.event.resigning) firstResignAt ??= performance.now();
    });

    const users = [];
    for (let i = 0; i < USERS; i++) {
      const id = `resignuser${i}`;
      const cookie = await signUp(base, id);
      await devices.insertDevice(database.db, {
        userId: id,
        product: 'iPhone15,2',
        udid: udidOf(i + 1),
        status: 'Registered',
      });
      users.push({ id, cookie });
    }
    const call = (cookie: string, method: string, urlPath: string, body?: unknown) =>
      fetch(`${base}${urlPath}`, {
        method,
        headers: {
          cookie,
          'x-sideport-client': 'web',
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });

    console.log(`signing ${USERS} users x ${APPS} apps ...`);
    const signStarted = performance.now();
    for (const user of users) {
      for (const [i, appId] of appIds.entries()) {
        const res = await call(user.cookie, 'PUT', `/api/sign/${appId}/${appVerIdOf(i)}`, { type: 0 });
        if (res.status !== 200) throw new Error(`sign request refused: ${res.status} ${await res.text()}`);
      }
    }
    await until(() => done.size === USERS * APPS);
    const firstSignsMs = performance.now() - signStarted;

    console.log('revoking the signing certificate at the OCSP responder ...');
    await responder.setStatus(identity.certPem, 'revoked', new Date());
    done.clear();
    const recoveryStarted = performance.now();
    const refused = await call(users[0]!.cookie, 'GET', `/api/check/sign/${appIds[0]}/${appVerIdOf(0)}/0`);
    if (refused.status !== 409)
      throw new Error(`the preflight did not find the revocation: ${refused.status} ${await refused.text()}`);
    await until(() => done.size === USERS * APPS);
    const recoveryMs = Math.max(...done.values()) - recoveryStarted;
    for (const user of users) {
      for (const [i, appId] of appIds.entries()) {
        const res = await call(user.cookie, 'GET', `/api/check/sign/${appId}/${appVerIdOf(i)}/0`);
        if (res.status !== 200)
          throw new Error(
            `${user.id}'s app ${appId} is not installable again: ${res.status} ${await res.text()}`,
          );
      }
    }

    console.log('baseline: the same signs from scratch with sideport-ipa sign ...');
    const p12 = path.join(work, 'id.p12');
    let scratchMs = 0;
    for (const user of users) {
      const material = (await services.signing.signingMaterial(user.id))!;
      writeFileSync(p12, exportP12(material.identity, 'bench-password'));
      const profile = path.join(work, `${user.id}.mobileprovision`);
      writeFileSync(profile, material.profile);
      for (let i = 0; i < APPS; i++) {
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
          ],
          {
            env: { ...process.env, BENCH_P12_PW: 'bench-password' },
            stdio: 'ignore',
          },
        );
        scratchMs += performance.now() - started;
      }
    }

    const count = USERS * APPS;
    console.log(
      `\nrecovery, ${USERS} users x ${APPS} apps (${count} artifacts; ${SIZE_MB} MB of content, ${ipaMB.toFixed(0)} MB IPA), mode 0, one sign worker:`,
    );
    console.log(`  first signs of them all (PUT to Done):                      ${seconds(firstSignsMs)}`);
    console.log(
      `  revocation found by preflight to the first re-sign queued:   ${seconds(firstResignAt! - recoveryStarted)}  (a new certificate, ${USERS} profiles)`,
    );
    console.log(
      `  revocation found by preflight to every artifact installable: ${seconds(recoveryMs)}  (${seconds(recoveryMs / count)} per artifact)`,
    );
    console.log(
      `  the same signs from scratch, sideport-ipa sign, one by one:  ${seconds(scratchMs)}  (${seconds(scratchMs / count)} per artifact)`,
    );
    console.log(`ratio from scratch / recovery: ${(scratchMs / recoveryMs).toFixed(2)}`);
  } finally {
    await app.close();
    await database.close();
    await responder.close();
    await store.close();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
