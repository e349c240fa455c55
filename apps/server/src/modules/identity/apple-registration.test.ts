/**
 * Registration and profiles through App Store Connect, end to end: the real server against a local
 * App Store Connect that holds every request to Apple's OpenAPI document and checks the JWT.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import forge from 'node-forge';
import { parseProfile } from '@sideport/ipa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devices, settings } from '../../db/schema/index.js';
import { startAscServer, type AscServer } from '../../test/asc-server.js';
import { deviceInfo, enrollDevice, payForDevice, yearsAfter } from '../../test/device-flow.js';
import {
  createTestApp,
  databaseKinds,
  sessionCookie,
  signedInUser,
  type TestApp,
} from '../../test/harness.js';
import * as q from '../devices/queries.js';
import { createAppleIdentityProvider } from './apple-identity.js';
import { createAscClient } from './asc-client.js';

const SAME_ORIGIN = { 'sec-fetch-site': 'same-origin' };
const KEY_ID = 'KEY1234567';
const ISSUER_ID = '69a6de70-0000-47e3-e053-5b8c7c11a4d1';
const keyPem = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();
const quiet = { info() {}, warn() {} };

describe.each(databaseKinds)('registration through App Store Connect on %s', (kind) => {
  let asc: AscServer;
  let t: TestApp;
  let now = new Date(Math.floor(Date.now() / 1000) * 1000);
  let seq = 0;
  let udidSeq = 0;
  const uid = () => `asc_${kind}_${++seq}`;
  const newUdid = () => `00008120-00${String(++udidSeq).padStart(14, '0')}`;
  const adminId = `asc_admin_${kind}`;
  const env = () => ({
    ASC_KEY_ID: KEY_ID,
    ASC_ISSUER_ID: ISSUER_ID,
    // With literal \n, as a one-line environment file holds the .p8.
    ASC_PRIVATE_KEY: keyPem.replace(/\n/g, '\\n'),
    ASC_BASE_URL: asc.url,
    SIGN_IN_LIMIT_PER_ADDRESS: '10000',
    REGISTRATION_INTERVAL_SECONDS: '0',
  });

  beforeAll(async () => {
    asc = await startAscServer({ keyId: KEY_ID, issuerId: ISSUER_ID, keyPem, clock: () => now });
    t = await createTestApp(kind, { env: env(), clock: () => now });
    await signedInUser(t, adminId, 1);
  });
  afterAll(async () => {
    await t.close();
    await asc.close();
  });

  const signIn = async (id: string) =>
    sessionCookie(
      await t.app.inject({ method: 'POST', url: '/api/sign-in', payload: { id, pw: 'a'.repeat(32) } }),
    );
  const adminGet = async (url: string) =>
    t.app.inject({ url, headers: { cookie: await signIn(adminId), ...SAME_ORIGIN } });
  const adminRetry = async (id: number) =>
    t.app.inject({
      method: 'POST',
      url: `/api/admin/devices/${id}/retry`,
      headers: { cookie: await signIn(adminId), ...SAME_ORIGIN },
    });
  const rowsOf = (userId: string) =>
    t.database.db.select().from(devices).where(eq(devices.userId, userId)).orderBy(devices.id);
  const waiting = async (id: number) =>
    ((await adminGet('/api/admin/devices')).json() as Array<Record<string, unknown>>).find(
      (d) => d.id === String(id),
    );

  /** A user with one enrolled, paid iPhone; the pass has not run yet. */
  async function paidDevice(udid = newUdid()) {
    const user = uid();
    const cookie = await signedInUser(t, user);
    await enrollDevice(t, cookie, { UDID: udid, PRODUCT: 'iPhone15,2', DEVICE_NAME: 'Test iPhone' });
    await payForDevice(t, cookie, 0);
    return { user, cookie, udid, id: (await rowsOf(user))[0]!.id };
  }

  it('makes one distribution certificate, whichever process asks first', async () => {
    const providers = [1, 2].map(() =>
      createAppleIdentityProvider({
        db: t.database.db,
        secrets: t.services.secrets,
        clock: () => now,
        asc: createAscClient({
          key: { keyId: KEY_ID, issuerId: ISSUER_ID, privateKeyPem: keyPem },
          baseUrl: asc.url,
          clock: () => now,
        }),
        devices: t.services.devices,
        keyId: KEY_ID,
        log: quiet,
      }),
    );
    const identity = (await adminGet('/api/admin/identity')).json() as Record<string, unknown>;
    expect(identity).toMatchObject({ kind: 'apple', installable: true, certificate_name: null });
    expect(identity.description).toMatch(/Devices install what it signs\.$/);

    const sources = await Promise.all(providers.map((p) => p.source()));
    expect(asc.certificates).toHaveLength(1);
    expect(sources[1]).toEqual(sources[0]);
    // Kept sealed with SECRET_KEY: the stored value shows no key.
    const [stored] = await t.database.db
      .select()
      .from(settings)
      .where(eq(settings.key, 'apple_signing_identity'));
    expect(stored!.value).toMatch(/^v1\./);
    expect(stored!.value).not.toContain('PRIVATE KEY');

    expect((await adminGet('/api/admin/identity')).json()).toMatchObject({
      kind: 'apple',
      team_id: asc.teamId,
      certificate_name: `Apple Distribution: Sideport Test Team (${asc.teamId})`,
      certificate_expires_at: asc.certificates[0]!.expirationDate.toISOString(),
    });
  });

  it("registers a paid device on the account and keeps Apple's id of it", async () => {
    const { user, cookie, udid } = await paidDevice();
    expect(await t.services.registration.runPass()).toMatchObject({ registered: 1, failed: 0 });
    expect(await deviceInfo(t, cookie)).toEqual([
      {
        Product: 'iPhone15,2',
        UDID: udid,
        name: 'Test iPhone',
        status: 'Registered',
        expired_date: yearsAfter(now, 1).toISOString(),
      },
    ]);
    const onAccount = asc.devices.filter((d) => d.udid === udid);
    expect(onAccount).toHaveLength(1);
    expect(onAccount[0]).toMatchObject({
      platform: 'IOS',
      status: 'ENABLED',
      name: `Sideport ${user} Test iPhone`,
    });
    expect((await rowsOf(user))[0]!.appleDeviceId).toBe(onAccount[0]!.id);
  });

  it("makes each user's ad-hoc profile for the wildcard App ID, and a new one (the old deleted) when devices change", async () => {
    const { user, cookie, udid } = await paidDevice();
    await t.services.registration.runPass();
    const first = (await t.services.signing.signingMaterial(user))!;
    expect(first.identityKind).toBe('apple');
    expect(first.udids).toEqual([udid]);
    expect(parseProfile(first.profile).provisionedDevices).toEqual([udid]);
    expect(asc.bundleIds.map((b) => b.identifier)).toEqual(['*']);
    const made = asc.profiles.find(
      (p) => p.uuid === first.profileUuid.toLowerCase() || p.uuid === first.profileUuid,
    )!;
    expect(made).toMatchObject({ profileType: 'IOS_APP_ADHOC', certificateIds: [asc.certificates[0]!.id] });
    expect(made.deviceIds).toEqual([(await rowsOf(user))[0]!.appleDeviceId]);
    // Kept while the Registered set is the same.
    expect((await t.services.signing.signingMaterial(user))!.profileUuid).toBe(first.profileUuid);

    const second = newUdid();
    await enrollDevice(t, cookie, { UDID: second, PRODUCT: 'iPad13,1' });
    await payForDevice(t, cookie, 1);
    await t.services.registration.runPass();
    const next = (await t.services.signing.signingMaterial(user))!;
    expect(next.profileUuid).not.toBe(first.profileUuid);
    expect([...parseProfile(next.profile).provisionedDevices].sort()).toEqual([udid, second].sort());
    expect(asc.profiles.some((p) => p.id === made.id)).toBe(false);
    expect(asc.profiles.filter((p) => p.name.startsWith(`Sideport ${user.replace(/_/g, ' ')}`))).toHaveLength(
      1,
    );
    expect(asc.bundleIds).toHaveLength(1);
    expect(asc.certificates).toHaveLength(1);
  });

  describe("Apple's refusals become the device's reason; it stays Pending", () => {
    it('the device limit, then an admin retry once a slot is free', async () => {
      const filler = [];
      while (asc.devices.filter((d) => d.platform === 'IOS').length < 100)
        filler.push(asc.addDevice({ udid: newUdid() }));
      const { cookie, id } = await paidDevice();
      expect(await t.services.registration.runPass()).toMatchObject({ registered: 0, failed: 1 });
      expect((await deviceInfo(t, cookie))[0]!.status).toBe('Pending');
      expect(await waiting(id)).toMatchObject({
        status: 'Pending',
        attempts: 1,
        retry_at: null,
        reason: expect.stringMatching(/^The Apple developer account has reached its device limit/),
      });
      // Held for an admin: passes leave it be.
      expect((await t.services.registration.runPass()).failed).toBe(0);

      for (const device of filler) asc.devices.splice(asc.devices.indexOf(device), 1);
      const retried = await adminRetry(id);
      expect(retried.statusCode).toBe(200);
      expect(retried.json()).toMatchObject({ status: 'Pending', attempts: 0 });
      expect((await t.services.registration.runPass()).registered).toBe(1);
      expect((await deviceInfo(t, cookie))[0]!.status).toBe('Registered');
      expect(await waiting(id)).toBeUndefined();
    });

    it('an invalid UDID', async () => {
      const user = uid();
      const cookie = await signedInUser(t, user);
      const row = await q.insertDevice(t.database.db, {
        userId: user,
        product: 'iPhone15,2',
        udid: 'not-a-device-id',
      });
      await q.markDevicePaid(t.database.db, user, row.id);
      await t.services.registration.runPass();
      expect((await deviceInfo(t, cookie))[0]!.status).toBe('Pending');
      expect(await waiting(row.id)).toMatchObject({
        retry_at: null,
        reason: expect.stringMatching(/^Apple refused the device's UDID as invalid/),
      });
    });

    it('a refused (expired) key', async () => {
      const { cookie, id } = await paidDevice();
      const failures = asc.authFailures.length;
      asc.failNext('TOKEN_REFUSED');
      await t.services.registration.runPass();
      expect(asc.authFailures.slice(failures)).toEqual(['refused on request']);
      expect((await deviceInfo(t, cookie))[0]!.status).toBe('Pending');
      expect(await waiting(id)).toMatchObject({
        retry_at: null,
        reason: expect.stringMatching(
          new RegExp(`^App Store Connect refused API key ${KEY_ID}: it is revoked or expired`),
        ),
      });
    });

    it('an outage, retried by itself after a backoff', async () => {
      const { cookie, id } = await paidDevice();
      asc.failNext('UNAVAILABLE');
      await t.services.registration.runPass();
      expect(await waiting(id)).toMatchObject({
        status: 'Pending',
        retry_at: new Date(now.getTime() + 60_000).toISOString(),
        reason: expect.stringMatching(/^App Store Connect is unavailable right now/),
      });
      expect((await t.services.registration.runPass()).registered).toBe(0);
      now = new Date(now.getTime() + 61_000);
      expect((await t.services.registration.runPass()).registered).toBe(1);
      expect((await deviceInfo(t, cookie))[0]!.status).toBe('Registered');
    });
  });

  it('waits out App Store Connect answering 429 with Retry-After for an hour, never counting it as an attempt, then registers every device', async () => {
    const first = await paidDevice();
    const second = await paidDevice();
    asc.failAll('THROTTLED', { retryAfterS: 600 });
    const both = async () => Promise.all([waiting(first.id), waiting(second.id)]);
    try {
      await t.services.registration.runPass();
      // One device asked Apple; the pass stopped there rather than send the next into the limit.
      const [tried, untried] = (await both()).sort((a, b) => (a?.reason ? 0 : 1) - (b?.reason ? 0 : 1));
      expect(tried).toMatchObject({
        status: 'Pending',
        attempts: 0,
        retry_at: new Date(now.getTime() + 600_000).toISOString(),
        reason: expect.stringMatching(/^App Store Connect is unavailable right now \(HTTP 429/),
      });
      expect(untried).toMatchObject({ status: 'Pending', reason: null });
      expect(await t.services.metrics.render()).toMatch(
        /sideport_dependency_faults_total\{part="app_store_connect"\} [1-9]/,
      );
      // A pass inside the wait sends Apple no device.
      await t.services.registration.runPass();
      expect((await both()).filter((d) => d?.reason === null)).toHaveLength(1);
      // An hour of 429s: more passes than the automatic attempts, and still nobody has to act.
      for (let i = 0; i < 6; i++) {
        now = new Date(now.getTime() + 601_000);
        await t.services.registration.runPass();
      }
      // Neither is held for an admin (a held device has a reason and no retry time).
      for (const device of await both()) {
        expect(device).toMatchObject({ status: 'Pending', attempts: 0 });
        expect(device!.reason === null || device!.retry_at !== null).toBe(true);
      }
    } finally {
      asc.failAll(undefined);
    }
    now = new Date(now.getTime() + 601_000);
    expect((await t.services.registration.runPass()).registered).toBe(2);
    expect((await deviceInfo(t, first.cookie))[0]!.status).toBe('Registered');
    expect((await deviceInfo(t, second.cookie))[0]!.status).toBe('Registered');
  });

  it('renews an expired device from now, reusing its registration on the account', async () => {
    const { user, udid } = await paidDevice();
    await t.services.registration.runPass();
    const expiry = (await rowsOf(user))[0]!.expiresAt!;
    now = new Date(expiry.getTime() + 3_600_000);
    await t.services.registration.runPass();
    const cookie = await signIn(user);
    expect((await deviceInfo(t, cookie))[0]!.status).toBe('Expired');
    await payForDevice(t, cookie, 0);
    expect((await t.services.registration.runPass()).registered).toBe(1);
    expect((await deviceInfo(t, cookie))[0]).toMatchObject({
      status: 'Registered',
      expired_date: yearsAfter(now, 1).toISOString(),
    });
    expect(asc.devices.filter((d) => d.udid === udid)).toHaveLength(1);
  });

  describe('with the operator’s certificate (SIGN_P12)', () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(path.join(tmpdir(), 'sideport-sign-p12-'));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    /** A .p12 of a certificate and key, as Keychain exports one. */
    const writeP12 = (name: string, certPem: string, keyPemText: string) => {
      const asn1 = forge.pkcs12.toPkcs12Asn1(
        forge.pki.privateKeyFromPem(keyPemText),
        [forge.pki.certificateFromPem(certPem)],
        'p12-pass',
        {
          algorithm: '3des',
        },
      );
      const file = path.join(dir, name);
      writeFileSync(file, Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary'));
      return file;
    };

    it('signs with it when the account has it, and says so when it does not', async () => {
      const client = createAscClient({
        key: { keyId: KEY_ID, issuerId: ISSUER_ID, privateKeyPem: keyPem },
        baseUrl: asc.url,
        clock: () => now,
      });
      const issued = await client.createDistributionCertificate({ commonName: 'Operator' });
      const operator = await createTestApp(kind, {
        env: {
          ...env(),
          SIGN_P12: writeP12('operator.p12', issued.certificatePem, issued.privateKeyPem),
          SIGN_P12_PASSWORD: 'p12-pass',
        },
        clock: () => now,
      });
      try {
        const user = uid();
        await signedInUser(operator, user);
        const row = await q.insertDevice(operator.database.db, {
          userId: user,
          product: 'iPhone15,2',
          udid: newUdid(),
        });
        await q.markDevicePaid(operator.database.db, user, row.id);
        await operator.services.registration.runPass();
        const material = (await operator.services.signing.signingMaterial(user))!;
        expect(material.identity).toMatchObject({ password: 'p12-pass' });
        const profile = asc.profiles.find(
          (p) => p.uuid.toLowerCase() === material.profileUuid.toLowerCase(),
        )!;
        expect(profile.certificateIds).toEqual([issued.certificate.id]);
        expect(await operator.services.signing.identityDetails()).toMatchObject({
          certificateName: `Apple Distribution: Sideport Test Team (${asc.teamId})`,
        });
      } finally {
        await operator.close();
      }

      // A certificate the account never issued (another team's, or revoked).
      const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const cert = forge.pki.createCertificate();
      cert.publicKey = forge.pki.publicKeyFromPem(
        stranger.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      );
      cert.serialNumber = '0abcdef1';
      cert.validity.notBefore = new Date(now.getTime() - 86_400_000);
      cert.validity.notAfter = new Date(now.getTime() + 86_400_000);
      cert.setSubject([{ name: 'commonName', value: 'Apple Distribution: Elsewhere (OTHERTEAM1)' }]);
      cert.setIssuer(cert.subject.attributes);
      const strangerKeyPem = stranger.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      cert.sign(forge.pki.privateKeyFromPem(strangerKeyPem), forge.md.sha256.create());
      const elsewhere = await createTestApp(kind, {
        env: {
          ...env(),
          SIGN_P12: writeP12('elsewhere.p12', forge.pki.certificateToPem(cert), strangerKeyPem),
          SIGN_P12_PASSWORD: 'p12-pass',
        },
        clock: () => now,
      });
      try {
        const user = uid();
        await signedInUser(elsewhere, user);
        await q.insertDevice(elsewhere.database.db, {
          userId: user,
          product: 'iPhone15,2',
          udid: newUdid(),
          status: 'Registered',
        });
        await expect(elsewhere.services.signing.signingMaterial(user)).rejects.toThrow(
          /^The certificate in SIGN_P12 \("Apple Distribution: Elsewhere \(OTHERTEAM1\)", serial ABCDEF1\) is not on the App Store Connect account of key KEY1234567/,
        );
      } finally {
        await elsewhere.close();
      }
    });
  });

  it('has Apple issue a second distribution certificate for Feather Cert, never the signing one, and a new one on rotation', async () => {
    const { user, udid } = await paidDevice();
    await t.services.registration.runPass();
    const signing = await t.services.signing.currentCertificate();
    const before = asc.certificates.length;
    const feather = (await t.services.signing.featherMaterial(user))!;
    expect(asc.certificates).toHaveLength(before + 1);
    const featherPem = (feather.identity as { certPem: string }).certPem;
    const featherCert = forge.pki.certificateFromPem(featherPem);
    const issued = asc.certificates.at(-1)!;
    expect(issued.serialNumber.replace(/^0+/, '').toUpperCase()).toBe(
      featherCert.serialNumber.replace(/^0+/, '').toUpperCase(),
    );
    expect(issued.serialNumber.replace(/^0+/, '').toUpperCase()).not.toBe(signing.serial.replace(/^0+/, ''));
    // Its profile is Apple's ad-hoc profile for it alone, listing the user's device.
    const profile = parseProfile(feather.profile);
    expect(profile.provisionedDevices).toEqual([udid]);
    expect(asc.profiles.find((p) => p.uuid.toLowerCase() === profile.uuid.toLowerCase())).toMatchObject({
      certificateIds: [issued.id],
    });
    // Kept: the next download uses the same certificate.
    await t.services.signing.featherMaterial(user);
    expect(asc.certificates).toHaveLength(before + 1);
    const shown = (await adminGet('/api/admin/identity')).json() as Record<string, string>;
    expect(shown.feather_certificate_name).toBe(`Apple Distribution: Sideport Test Team (${asc.teamId})`);
    // The same serial, however each side writes a leading zero byte (forge keeps the DER's).
    expect(shown.feather_certificate_serial!.replace(/^0+/, '')).toBe(
      featherCert.serialNumber.replace(/^0+/, '').toUpperCase(),
    );

    const rotated = await t.app.inject({
      method: 'POST',
      url: '/api/admin/identity/feather-cert/rotate',
      headers: { cookie: await signIn(adminId), ...SAME_ORIGIN },
    });
    expect(rotated.statusCode, rotated.body).toBe(200);
    expect(asc.certificates).toHaveLength(before + 2);
    const next = (await t.services.signing.featherMaterial(user))!;
    expect((next.identity as { certPem: string }).certPem).not.toBe(featherPem);
    expect((await t.services.signing.currentCertificate()).fingerprint).toBe(signing.fingerprint);
  });

  it("kept to Apple's published API and sent a valid token with every request", async () => {
    // Requests of its own (a device registered, a profile made), so that it checks some run alone too.
    const { user } = await paidDevice();
    await t.services.registration.runPass();
    expect((await t.services.signing.signingMaterial(user))?.identityKind).toBe('apple');
    expect(asc.violations).toEqual([]);
    // The only refused tokens are the ones a test asked the server to refuse.
    expect(asc.authFailures.filter((reason) => reason !== 'refused on request')).toEqual([]);
  });
});
