/**
 * Install preflight and recovery with the dev identity (docs/sign-service.md): the real server,
 * a real OCSP responder (openssl ocsp, its index naming the dev CA's certificates good or
 * revoked) at OCSP_URL, and an injected clock for expiry.
 */
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eq, ne } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry, SignEvent } from '@sideport/contracts';
import { check, parsePlist, parseProfile, type PlistObject } from '@sideport/ipa';
import {
  opensslVerifies,
  pageHashesMatch,
  printCms,
  readSignatures,
} from '@sideport/ipa/test-support/verify-signature';
import { createCoreServices } from '../../services.js';
import { loadConfig } from '../../platform/config.js';
import * as schema from '../../db/schema/index.js';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { buildIpa, storeApp, storeWith } from '../../test/decrypt-support.js';
import {
  createTestApp,
  databaseKinds,
  sessionCookie,
  signedInUser,
  WEB_CLIENT,
  type TestApp,
} from '../../test/harness.js';
import { startOcspResponder, type OcspResponder } from '../../test/ocsp-responder.js';
import * as devices from '../devices/queries.js';
import { createDevIdentity } from '../identity/dev-identity.js';
import { certificateFingerprint } from '../identity/certificate-details.js';
import { saveDevIdentity } from '../identity/dev-identity-provider.js';
import { missingTools } from '@sideport/ipa/test-support/system-tools';

/** Outside CI a machine without these skips this file with one line saying so; each database runs it. */
const onEachDatabase = describe.skipIf(missingTools('openssl', 'unzip')).each(databaseKinds);

const APP_ID = 6200;
const APP_VER_ID = 862000001;
const BUNDLE_ID = 'com.example.recover';
const PUBLIC_URL = 'https://sideport.example';
const DAY_MS = 86_400_000;
const PASSWORD = 'a'.repeat(32);
const REMEDY = 'sideport-remedy';
const work = mkdtempSync(path.join(tmpdir(), 'sideport-recovery-test-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const day = (date: Date) => date.toISOString().slice(0, 10);

/** The path and query of an absolute URL the server made, for inject. */
const local = (url: string) => {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
};

/**
 * The serial (upper-case hex) of the certificate that signed a code signature's CMS (openssl prints
 * it in decimal), read from the signer info: the certificates before it are the whole chain.
 */
const signerSerial = (cms: string) => {
  const signerInfos = cms.slice(cms.indexOf('signerInfos:'));
  const printed = /serialNumber: (0x[0-9A-F]+|\d+)/i.exec(signerInfos)![1]!;
  return BigInt(printed).toString(16).toUpperCase();
};
const bareSerial = (serial: string) => serial.toUpperCase().replace(/^0+/, '');

interface Harness {
  t: TestApp;
  responder: OcspResponder;
  events: Array<SignEvent & { userId: string }>;
  now(): number;
  advance(ms: number): void;
}

/**
 * One server for a describe block: the dev identity made here (so the responder can sign for its
 * CA), the responder at OCSP_URL, recovery run by the tests and the preflights (no periodic check).
 */
function useServer(
  kind: (typeof databaseKinds)[number],
  options: { validYears?: number; env?: Record<string, string> } = {},
): Harness {
  let store: ItunesServer;
  let now = Math.floor(Date.now() / 1000) * 1000;
  const h = {
    events: [] as Harness['events'],
    now: () => now,
    advance: (ms: number) => void (now += ms),
  } as Harness;
  beforeAll(async () => {
    store = await storeWith([storeApp(APP_ID, BUNDLE_ID)]);
    const feather = await buildIpa({
      bundleId: 'kh.crysalis.feather',
      version: '2.0',
      displayName: 'Feather',
    });
    const identity = createDevIdentity({
      clock: () => new Date(now),
      ...(options.validYears ? { validYears: options.validYears } : {}),
    });
    // No nextUpdate: the responder's clock is the machine's, the server's is the tests' (certificates.test.ts has nextUpdate).
    h.responder = await startOcspResponder({ caPem: identity.caCertPem, caKeyPem: identity.caKeyPem });
    await h.responder.setStatus(identity.certPem, 'good');
    h.t = await createTestApp(kind, {
      env: {
        ITUNES_BASE_URL: store.url,
        PUBLIC_URL,
        FEATHER_IPA: feather,
        OCSP_URL: h.responder.url,
        OCSP_CACHE_MINUTES: '30',
        RECOVERY_CHECK_MINUTES: '0',
        REGISTRATION_INTERVAL_SECONDS: '0',
        SIGN_IN_LIMIT_PER_ADDRESS: '10000',
        ...options.env,
      },
      clock: () => new Date(now),
    });
    await saveDevIdentity(h.t.database.db, h.t.services.secrets, identity);
    h.t.services.bus.subscribe((m) => {
      if (m.kind === 'live' && m.event.type === 'sign' && m.userId)
        h.events.push({ ...m.event, userId: m.userId });
    });
    const ipa = await buildIpa({ bundleId: BUNDLE_ID, version: '1.0', appVerId: String(APP_VER_ID) });
    await h.t.services.jobs.importIpa(ipa, { country: 'KR', appId: APP_ID });
    await signedInUser(h.t, `admin_${kind}`, 1);
  });
  afterAll(async () => {
    await h.t?.close();
    await h.responder?.close();
    await store?.close();
  });
  return h;
}

onEachDatabase('install preflight and recovery with the dev identity on %s', (kind) => {
  const h = useServer(kind);
  let seq = 0;
  let udidSeq = 0;

  const signIn = async (id: string) =>
    sessionCookie(
      await h.t.app.inject({ method: 'POST', url: '/api/sign-in', payload: { id, pw: PASSWORD } }),
    );
  const get = async (url: string, user?: string) =>
    h.t.app.inject({ url, headers: user ? { cookie: await signIn(user), ...WEB_CLIENT } : {} });
  const checkSign = (user: string, type: number) =>
    get(`/api/check/sign/${APP_ID}/${APP_VER_ID}/${type}`, user);
  const requestSign = async (user: string, type: number) =>
    h.t.app.inject({
      method: 'PUT',
      url: `/api/sign/${APP_ID}/${APP_VER_ID}`,
      payload: { type },
      headers: { cookie: await signIn(user), ...WEB_CLIENT },
    });
  const audit = async (page = 0) =>
    (await get(`/api/admin/audit/${page}`, `admin_${kind}`)).json() as AuditEntry[];
  /** Every audit entry after the one with this id, newest first, from as many pages as they fill. */
  async function auditSince(id: number) {
    const entries: AuditEntry[] = [];
    for (let page = 0; ; page++) {
      const rows = await audit(page);
      entries.push(...rows.filter((e) => Number(e.id) > id));
      if (rows.length === 0 || rows.some((e) => Number(e.id) <= id)) return entries;
    }
  }
  const identityInfo = async () =>
    (await get('/api/admin/identity', `admin_${kind}`)).json() as Record<string, unknown>;

  /** Resolves once `user`'s sign of `type` is Done after `from` (as its owner's live events tell). */
  async function doneAfter(user: string, type: number, from: number) {
    await expect
      .poll(
        () =>
          h.events.slice(from).some((e) => e.userId === user && e.sign_type === type && e.status === 'Done'),
        { timeout: 120_000, interval: 50 },
      )
      .toBe(true);
  }

  /**
   * Resolves once no sign is queued or being signed: the re-signs an earlier test's pass queued
   * have run, so no worker starts a pass of its own (before a sign, on a revoked certificate).
   */
  async function queueSettled() {
    await expect
      .poll(
        async () =>
          (
            await h.t.database.db
              .select({ id: schema.signRequests.id })
              .from(schema.signRequests)
              .where(ne(schema.signRequests.state, 'idle'))
          ).length,
        { timeout: 120_000, interval: 100 },
      )
      .toBe(0);
  }

  /** A user with a Registered device and Done signs of the version in `types`. */
  async function userWithSigns(types: number[]) {
    const user = `recover_${kind}_${++seq}`;
    await signedInUser(h.t, user);
    await devices.insertDevice(h.t.database.db, {
      userId: user,
      product: 'iPhone15,2',
      udid: `00008120-00${String(++udidSeq).padStart(14, '0')}`,
      status: 'Registered',
    });
    const from = h.events.length;
    for (const type of types) expect((await requestSign(user, type)).statusCode).toBe(200);
    for (const type of types) await doneAfter(user, type, from);
    return user;
  }

  /** The IPA an install of `user`'s sign leads to, unzipped: its embedded profile and code signatures. */
  async function installed(user: string, type: number | 'feather') {
    const install = await get(
      type === 'feather' ? '/api/feather/install' : `/api/install/${APP_ID}/${APP_VER_ID}/${type}`,
      user,
    );
    expect(install.statusCode, install.body).toBe(200);
    const manifestUrl = decodeURIComponent(/url=(.+)$/.exec((install.json() as { url: string }).url)![1]!);
    const manifest = await get(local(manifestUrl));
    const [item] = (parsePlist(Buffer.from(manifest.body)) as { items: PlistObject[] }).items;
    const ipa = (await get(local((item!.assets as PlistObject[])[0]!.url as string))).rawPayload;
    const dir = path.join(work, `${user}-${type}-${h.now()}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'app.ipa'), ipa);
    const report = await check(path.join(dir, 'app.ipa'));
    execFileSync('unzip', ['-q', 'app.ipa', '-d', 'x'], { cwd: dir });
    const appDir = path.join(dir, 'x', path.dirname(report.machOs[0]!.path));
    return {
      profile: parseProfile(readFileSync(path.join(appDir, 'embedded.mobileprovision'))),
      signatures: report.machOs
        .map((m) => readFileSync(path.join(dir, 'x', m.path)))
        .map((bytes) => ({ bytes, signatures: readSignatures(bytes) })),
    };
  }

  const rowOf = async (user: string, type: number) =>
    (
      await h.t.database.db.select().from(schema.signRequests).where(eq(schema.signRequests.userId, user))
    ).find((r) => r.signType === type)!;

  it('records at commit what a preflight checks, so no install reads an IPA', async () => {
    const user = await userWithSigns([0]);
    const certificate = await h.t.services.signing.currentCertificate();
    const { profile } = await installed(user, 0);
    expect(await rowOf(user, 0)).toMatchObject({
      certFingerprint: certificate.fingerprint,
      certNotBefore: certificate.notBefore,
      certNotAfter: certificate.notAfter,
      profileUuid: profile.uuid,
      profileExpiresAt: profile.expirationDate,
      profileCertificates: profile.developerCertificates.map((c) => certificateFingerprint(c.der)),
      resigning: false,
    });
    expect(profile.developerCertificates.map((c) => certificateFingerprint(c.der))).toEqual([
      certificate.fingerprint,
    ]);
    // The responder was asked and said good: the admin console shows it.
    expect((await checkSign(user, 0)).statusCode).toBe(200);
    expect(await identityInfo()).toMatchObject({
      certificate_serial: certificate.serial,
      certificate_status: 'good',
      certificate_checked_at: expect.any(String),
      certificate_revoked_at: null,
    });
  });

  it("finds a revoked certificate at preflight, recovers without an admin, and every user's app installs again with a new certificate", async () => {
    const alice = await userWithSigns([0, 4]);
    const bob = await userWithSigns([0]);
    const old = await h.t.services.signing.currentCertificate();
    expect((await checkSign(alice, 0)).statusCode).toBe(200);
    const asked = h.responder.requestCount();
    const revokedAt = new Date(h.now() - DAY_MS);
    await h.responder.setStatus(old.pem, 'revoked', revokedAt);

    // The kept answer is used for OCSP_CACHE_MINUTES (30): no question, still good.
    expect((await checkSign(alice, 0)).statusCode).toBe(200);
    expect(h.responder.requestCount()).toBe(asked);

    h.advance(31 * 60_000);
    const from = h.events.length;
    const refused = await checkSign(alice, 0);
    expect([refused.statusCode, refused.headers['content-type'], refused.body]).toEqual([
      409,
      'text/plain; charset=utf-8',
      `The certificate that signed this app was revoked by the dev identity's CA on ${day(revokedAt)}; it is being signed again.`,
    ]);
    expect(refused.headers[REMEDY]).toBe('sign-again');

    // Every artifact of the certificate, Bob's too, is signed again: 'Re-signing', then Done, live.
    await doneAfter(alice, 0, from);
    await doneAfter(alice, 4, from);
    await doneAfter(bob, 0, from);
    expect(
      h.events
        .slice(from)
        .filter((e) => e.userId === bob)
        .map((e) => [e.status, e.resigning ?? false]),
    ).toEqual([
      ['Pending', true],
      ['Process', true],
      ['Done', false],
    ]);

    const current = await h.t.services.signing.currentCertificate();
    expect(current.fingerprint).not.toBe(old.fingerprint);
    const caPem = (await get('/api/admin/identity/ca.pem', `admin_${kind}`)).body;
    for (const [user, type] of [
      [alice, 0],
      [alice, 4],
      [bob, 0],
    ] as const) {
      expect((await checkSign(user, type)).statusCode).toBe(200);
      const { profile, signatures } = await installed(user, type);
      // Its embedded profile names the new certificate, and the new certificate signed it.
      expect(profile.developerCertificates.map((c) => certificateFingerprint(c.der))).toEqual([
        current.fingerprint,
      ]);
      for (const { bytes, signatures: slices } of signatures) {
        for (const signature of slices) {
          expect(pageHashesMatch(bytes, signature)).toBe(true);
          expect(opensslVerifies(signature, caPem).ok).toBe(true);
          expect(signerSerial(printCms(signature))).toBe(bareSerial(current.serial));
        }
      }
    }
    // Each user's profile was made again for it.
    for (const user of [alice, bob]) {
      const [row] = await h.t.database.db
        .select()
        .from(schema.userProfiles)
        .where(eq(schema.userProfiles.userId, user));
      expect(row!.certificateFingerprint).toBe(current.fingerprint);
    }
    expect(await identityInfo()).toMatchObject({ certificate_serial: current.serial });

    // Every step, by recovery, in the audit log (newest first).
    const steps = (await audit()).filter((e) => e.actor === 'system (recovery)');
    expect(
      steps
        .slice(0, 4)
        .map((e) => e.action)
        .reverse(),
    ).toEqual(['certificate-replace', 'certificate-replaced', 'profiles-made-again', 'resign-queued']);
    expect(steps[3]!.subject).toMatchObject({
      reason: `The signing certificate (serial ${old.serial}) is replaced: it was revoked on ${day(revokedAt)}.`,
      trigger: 'install preflight',
    });
    expect(steps[2]!.subject).toMatchObject({ old_serial: old.serial, serial: current.serial });
    expect(steps[0]!.subject).toMatchObject({ users: expect.any(Number), artifacts: expect.any(Number) });
    expect((steps[0]!.subject as { artifacts: number }).artifacts).toBeGreaterThanOrEqual(3);
  });

  it('signs again on request an artifact iOS would refuse, with a certificate it would not', async () => {
    const user = await userWithSigns([0]);
    const old = await h.t.services.signing.currentCertificate();
    await h.responder.setStatus(old.pem, 'revoked', new Date(h.now()));
    h.advance(31 * 60_000);
    // As the web app's 'Sign again' does: no check first. Not answered Done: the artifact is refused.
    const from = h.events.length;
    const again = await requestSign(user, 0);
    expect(again.json()).toMatchObject({ status: 'Pending' });
    await doneAfter(user, 0, from);
    expect((await checkSign(user, 0)).statusCode).toBe(200);
    expect((await rowOf(user, 0)).certFingerprint).not.toBe(old.fingerprint);
    expect((await rowOf(user, 0)).certFingerprint).toBe(
      (await h.t.services.signing.currentCertificate()).fingerprint,
    );
  });

  it('re-signs the most recently installed artifacts first', async () => {
    const early = await userWithSigns([0]);
    const late = await userWithSigns([0]);
    expect((await get(`/api/install/${APP_ID}/${APP_VER_ID}/0`, early)).statusCode).toBe(200);
    h.advance(1000);
    expect((await get(`/api/install/${APP_ID}/${APP_VER_ID}/0`, late)).statusCode).toBe(200);
    await h.responder.setStatus(
      (await h.t.services.signing.currentCertificate()).pem,
      'revoked',
      new Date(h.now()),
    );
    h.advance(31 * 60_000);
    const from = h.events.length;
    expect((await checkSign(early, 0)).statusCode).toBe(409);
    await doneAfter(early, 0, from);
    await doneAfter(late, 0, from);
    const started = h.events
      .slice(from)
      .filter((e) => e.status === 'Process' && (e.userId === early || e.userId === late));
    expect(started.map((e) => e.userId)).toEqual([late, early]);
  });

  it('signs a revoked Feather again before Feather install answers', async () => {
    const user = await userWithSigns([]);
    const before = await installed(user, 'feather');
    const old = await h.t.services.signing.currentCertificate();
    expect(before.profile.developerCertificates.map((c) => certificateFingerprint(c.der))).toEqual([
      old.fingerprint,
    ]);
    await h.responder.setStatus(old.pem, 'revoked', new Date(h.now()));
    h.advance(31 * 60_000);
    const after = await installed(user, 'feather');
    const current = await h.t.services.signing.currentCertificate();
    expect(current.fingerprint).not.toBe(old.fingerprint);
    expect(after.profile.developerCertificates.map((c) => certificateFingerprint(c.der))).toEqual([
      current.fingerprint,
    ]);
  });

  it('makes one certificate and queues each artifact once, however many processes notice at once', async () => {
    const user = await userWithSigns([0, 4]);
    // Else a worker taking an earlier test's re-sign may replace the certificate before the two passes.
    await queueSettled();
    const old = await h.t.services.signing.currentCertificate();
    await h.responder.setStatus(old.pem, 'revoked', new Date(h.now()));
    h.advance(31 * 60_000);
    // A second process: its own services over the same database.
    const config = loadConfig({
      LOG_LEVEL: 'silent',
      DATA_DIR: h.t.dataDir,
      OCSP_URL: h.responder.url,
      OCSP_CACHE_MINUTES: '30',
    });
    const other = await createCoreServices({
      config,
      database: h.t.database,
      clock: () => new Date(h.now()),
      log: { info() {}, warn() {} },
    });
    // The newest entry before (a page holds 50, which earlier tests in this database fill).
    const lastBefore = Number((await audit())[0]?.id ?? 0);
    const from = h.events.length;
    try {
      const reports = await Promise.all([h.t.services.recovery.runPass(), other.recovery.runPass()]);
      const done = reports.filter((r) => r !== undefined);
      expect(done.filter((r) => r.replaced)).toHaveLength(1);
    } finally {
      await other.bus.close();
    }
    await doneAfter(user, 0, from);
    await doneAfter(user, 4, from);
    const steps = await auditSince(lastBefore);
    expect(steps.filter((e) => e.action === 'certificate-replaced')).toHaveLength(1);
    // Each of the user's artifacts queued once.
    expect(h.events.slice(from).filter((e) => e.userId === user && e.status === 'Pending')).toHaveLength(2);
  });

  it('renews a profile within RENEW_BEFORE_DAYS, and re-signs what it signed, before it expires', async () => {
    const user = await userWithSigns([0]);
    const before = await rowOf(user, 0);
    const certificate = await h.t.services.signing.currentCertificate();
    h.advance(before.profileExpiresAt!.getTime() - h.now() - 10 * DAY_MS);
    const from = h.events.length;
    const report = await h.t.services.recovery.runPass();
    expect(report).toMatchObject({ replaced: false, queued: expect.any(Number) });
    expect(report!.profiles).toBeGreaterThanOrEqual(1);
    await doneAfter(user, 0, from);
    const after = await rowOf(user, 0);
    expect(after.certFingerprint).toBe(certificate.fingerprint);
    expect(after.profileUuid).not.toBe(before.profileUuid);
    expect(after.profileExpiresAt!.getTime()).toBeGreaterThan(h.now() + 300 * DAY_MS);
    const steps = (await audit()).filter((e) => e.actor === 'system (recovery)');
    expect(steps[0]).toMatchObject({
      action: 'resign-queued',
      subject: { reason: 'Its provisioning profile expires within RENEW_BEFORE_DAYS.' },
    });
    expect((await checkSign(user, 0)).statusCode).toBe(200);
  });

  it('finds an expired profile at preflight, and the app is signed again with a new one', async () => {
    const user = await userWithSigns([0]);
    const before = await rowOf(user, 0);
    h.advance(before.profileExpiresAt!.getTime() - h.now() + 1000);
    await h.responder.setStatus((await h.t.services.signing.currentCertificate()).pem, 'good');
    const from = h.events.length;
    const refused = await checkSign(user, 0);
    expect([refused.statusCode, refused.body, refused.headers[REMEDY]]).toEqual([
      409,
      `The provisioning profile of this app expired on ${day(before.profileExpiresAt!)}; it is being signed again.`,
      'sign-again',
    ]);
    await doneAfter(user, 0, from);
    expect((await checkSign(user, 0)).statusCode).toBe(200);
    const { profile } = await installed(user, 0);
    expect(profile.uuid).not.toBe(before.profileUuid);
    expect(profile.expirationDate.getTime()).toBeGreaterThan(h.now() + 300 * DAY_MS);
  });

  /** The certificate (PEM) of the .p12 and the profile GET /api/feather/cert hands `user`. */
  async function featherCertOf(user: string) {
    const answer = await get('/api/feather/cert', user);
    expect(answer.statusCode, answer.body).toBe(200);
    const { url, password } = answer.json() as { url: string; password: string };
    const dir = path.join(work, `feather-cert-${user}-${h.now()}-${++seq}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'cert.zip'), (await get(local(url))).rawPayload);
    execFileSync('unzip', ['-q', 'cert.zip'], { cwd: dir });
    const pem = execFileSync(
      'openssl',
      ['pkcs12', '-in', 'sideport.p12', '-nokeys', '-clcerts', '-passin', `pass:${password}`],
      { cwd: dir, encoding: 'utf8' },
    );
    const cert = new X509Certificate(
      /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(pem)![0],
    );
    return {
      pem: cert.toString(),
      fingerprint: certificateFingerprint(cert.raw),
      serial: cert.serialNumber.toUpperCase(),
      profile: parseProfile(readFileSync(path.join(dir, 'sideport.mobileprovision'))),
    };
  }

  it('hands Feather a certificate of its own, whose revocation leaves every other install passing preflight; an admin sees and rotates it', async () => {
    const alice = await userWithSigns([0]);
    const bob = await userWithSigns([0]);
    const signing = await h.t.services.signing.currentCertificate();
    const feather = await featherCertOf(alice);
    expect(feather.fingerprint).not.toBe(signing.fingerprint);
    // Its profile is for it, listing Alice's device: Feather signs with the two.
    expect(feather.profile.developerCertificates.map((c) => certificateFingerprint(c.der))).toEqual([
      feather.fingerprint,
    ]);
    expect(feather.profile.provisionedDevices).toHaveLength(1);
    expect(await identityInfo()).toMatchObject({
      certificate_serial: signing.serial,
      feather_certificate_serial: feather.serial,
    });

    // Alice's .p12 leaks and its certificate is revoked: Bob's and Alice's installs still pass.
    await h.responder.setStatus(feather.pem, 'revoked', new Date(h.now() - DAY_MS));
    h.advance(31 * 60_000);
    expect((await checkSign(bob, 0)).statusCode).toBe(200);
    expect((await checkSign(alice, 0)).statusCode).toBe(200);
    expect((await h.t.services.signing.currentCertificate()).fingerprint).toBe(signing.fingerprint);

    // The admin rotates it: Feather is handed a new one from then on, and the audit log says who.
    const rotated = await h.t.app.inject({
      method: 'POST',
      url: '/api/admin/identity/feather-cert/rotate',
      headers: { cookie: await signIn(`admin_${kind}`), ...WEB_CLIENT },
    });
    expect(rotated.statusCode, rotated.body).toBe(200);
    const next = await featherCertOf(bob);
    expect(new Set([next.fingerprint, feather.fingerprint, signing.fingerprint]).size).toBe(3);
    expect(rotated.json()).toMatchObject({ feather_certificate_serial: next.serial });
    const [entry] = (await audit()).filter((e) => e.action === 'rotate-feather-cert');
    expect(entry).toMatchObject({ actor: `admin_${kind}`, subject: { serial: next.serial } });
  });

  // Last in the block: the revocation it ends with has every artifact of the certificate signed again.
  it('installs while the OCSP responder is down, counting the fault and naming it on the checklist, and finds a revocation once it is back', async () => {
    const user = await userWithSigns([0]);
    const certificate = await h.t.services.signing.currentCertificate();
    expect((await checkSign(user, 0)).statusCode).toBe(200);

    // The responder goes away, and the kept answer runs out (OCSP_CACHE_MINUTES, 30).
    await h.responder.stop();
    h.advance(31 * 60_000);
    // Unanswered counts as good, as on iOS: the install is not held up by the responder.
    const during = await checkSign(user, 0);
    expect(during.statusCode, during.body).toBe(200);
    expect(await h.t.services.metrics.render()).toMatch(
      /sideport_dependency_faults_total\{part="ocsp"\} [1-9]/,
    );
    const setup = (await get('/api/admin/setup', `admin_${kind}`)).json() as Array<{
      key: string;
      state: string;
      detail: string;
    }>;
    expect(setup.find((i) => i.key === 'parts')).toMatchObject({
      state: 'todo',
      detail: expect.stringMatching(/^Apple's OCSP responder is failing since /),
    });
    expect(await identityInfo()).toMatchObject({ certificate_serial: certificate.serial });

    // Back, and the certificate was revoked meanwhile: the next check past the kept answer finds it.
    await h.responder.start();
    const revokedAt = new Date(h.now() - DAY_MS);
    await h.responder.setStatus(certificate.pem, 'revoked', revokedAt);
    h.advance(31 * 60_000);
    const after = await checkSign(user, 0);
    expect([after.statusCode, after.body]).toEqual([
      409,
      `The certificate that signed this app was revoked by the dev identity's CA on ${day(revokedAt)}; it is being signed again.`,
    ]);
  });
});

onEachDatabase('renewal before expiry with the dev identity on %s', (kind) => {
  // A certificate of one year, so that its last days come within reach of the clock.
  const h = useServer(kind, { validYears: 1 });
  let seq = 0;

  const signedUser = async () => {
    const user = `renew_${kind}_${++seq}`;
    await signedInUser(h.t, user);
    await devices.insertDevice(h.t.database.db, {
      userId: user,
      product: 'iPhone15,2',
      udid: `00008120-10${String(seq).padStart(14, '0')}`,
      status: 'Registered',
    });
    const from = h.events.length;
    const cookie = sessionCookie(
      await h.t.app.inject({ method: 'POST', url: '/api/sign-in', payload: { id: user, pw: PASSWORD } }),
    );
    await h.t.app.inject({
      method: 'PUT',
      url: `/api/sign/${APP_ID}/${APP_VER_ID}`,
      payload: { type: 0 },
      headers: { cookie, ...WEB_CLIENT },
    });
    await expect
      .poll(() => h.events.slice(from).some((e) => e.userId === user && e.status === 'Done'), {
        timeout: 120_000,
      })
      .toBe(true);
    return user;
  };
  const rowOf = async (user: string) =>
    (
      await h.t.database.db.select().from(schema.signRequests).where(eq(schema.signRequests.userId, user))
    )[0]!;

  it('renews a certificate and its profiles within RENEW_BEFORE_DAYS, and re-signs what they signed, before they expire', async () => {
    const user = await signedUser();
    const before = await rowOf(user);
    const certificate = await h.t.services.signing.currentCertificate();
    h.advance(certificate.notAfter.getTime() - h.now() - 10 * DAY_MS);
    const from = h.events.length;
    const report = await h.t.services.recovery.runPass();
    expect(report).toMatchObject({ replaced: true, profiles: 1 });
    await expect
      .poll(() => h.events.slice(from).some((e) => e.userId === user && e.status === 'Done'), {
        timeout: 120_000,
      })
      .toBe(true);

    const renewed = await h.t.services.signing.currentCertificate();
    expect(renewed.fingerprint).not.toBe(certificate.fingerprint);
    // Well past RENEW_BEFORE_DAYS: the next pass does not renew it again.
    expect(renewed.notAfter.getTime()).toBeGreaterThan(h.now() + 300 * DAY_MS);
    const after = await rowOf(user);
    expect(after).toMatchObject({ certFingerprint: renewed.fingerprint, resigning: false });
    expect(after.profileExpiresAt!.getTime()).toBeGreaterThan(h.now() + 300 * DAY_MS);
    expect(after.profileUuid).not.toBe(before.profileUuid);
    expect(await h.t.services.recovery.runPass()).toEqual({ replaced: false, queued: 0, profiles: 0 });
    const [replaced] = await h.t.database.db
      .select()
      .from(schema.signingCertificates)
      .where(eq(schema.signingCertificates.fingerprint, certificate.fingerprint));
    expect(replaced!.replacedReason).toBe(
      `The signing certificate (serial ${certificate.serial}) is replaced: it expires on ${day(certificate.notAfter)}.`,
    );
  });
});
