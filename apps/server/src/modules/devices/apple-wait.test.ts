/**
 * Apple's wait after a registration, through the App Store Connect double: a device Apple leaves
 * out of new profiles is held in Process with the owner's reason, the user's sign stays queued
 * (not failed, its attempt not counted), and the periodic check makes it Registered again once
 * Apple lists it, after which the sign is claimed.
 */
import { generateKeyPairSync } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { parseProfile } from '@sideport/ipa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devices, signRequests } from '../../db/schema/index.js';
import { startAscServer, type AscServer } from '../../test/asc-server.js';
import { deviceInfo, enrollDevice, payForDevice } from '../../test/device-flow.js';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { buildIpa, storeApp, storeWith } from '../../test/decrypt-support.js';
import { createTestApp, databaseKinds, signedInUser, WEB_CLIENT, type TestApp } from '../../test/harness.js';
import { claimNextSign } from '../sign/queries.js';
import { APPLE_WAIT_REASON, DeviceWaitsForApple } from './apple-wait.js';

const KEY_ID = 'KEYWAIT123';
const ISSUER_ID = '69a6de70-0000-47e3-e053-5b8c7c11a4d2';
const keyPem = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();
const MINUTE = 60_000;
const APP_ID = 7700001;
const APP_VER_ID = 7700002;

describe.each(databaseKinds)("Apple's wait after a registration on %s", (kind) => {
  let asc: AscServer;
  let store: ItunesServer;
  let t: TestApp;
  let now = new Date(Math.floor(Date.now() / 1000) * 1000);
  let seq = 0;

  beforeAll(async () => {
    asc = await startAscServer({ keyId: KEY_ID, issuerId: ISSUER_ID, keyPem, clock: () => now });
    store = await storeWith([storeApp(APP_ID, 'com.example.waits')]);
    t = await createTestApp(kind, {
      env: {
        ITUNES_BASE_URL: store.url,
        ASC_KEY_ID: KEY_ID,
        ASC_ISSUER_ID: ISSUER_ID,
        ASC_PRIVATE_KEY: keyPem.replace(/\n/g, '\\n'),
        ASC_BASE_URL: asc.url,
        SIGN_IN_LIMIT_PER_ADDRESS: '10000',
        REGISTRATION_INTERVAL_SECONDS: '0',
      },
      clock: () => now,
    });
    const ipa = await buildIpa({
      bundleId: 'com.example.waits',
      version: '1.0',
      appVerId: String(APP_VER_ID),
    });
    await t.services.jobs.importIpa(ipa, { country: 'KR', appId: APP_ID });
  });
  afterAll(async () => {
    await t.close();
    await asc.close();
    await store.close();
  });

  const rowOf = async (udid: string) =>
    (await t.database.db.select().from(devices).where(eq(devices.udid, udid)))[0]!;
  const claim = () =>
    claimNextSign(t.database.db, {
      worker: 'test-worker',
      now,
      leaseSeconds: 60,
      maxLostLeases: 3,
      lostReason: 'lost',
    });
  const checkAgain = () => t.services.appleWait.recheck(t.services.signing.signingMaterial);

  /** A user with one iPhone, paid and Registered by a pass. */
  async function registeredDevice() {
    const user = `wait_${kind}_${++seq}`;
    const udid = `00008120-00${String(seq).padStart(14, '0')}`;
    const cookie = await signedInUser(t, user);
    await enrollDevice(t, cookie, { UDID: udid, PRODUCT: 'iPhone15,2', DEVICE_NAME: 'Test iPhone' });
    await payForDevice(t, cookie, 0);
    await t.services.registration.runPass();
    expect((await rowOf(udid)).status).toBe('Registered');
    return { user, cookie, udid };
  }

  it('holds a device Apple refuses in profiles, keeps its sign queued, and releases both once Apple lists it', async () => {
    const { user, cookie, udid } = await registeredDevice();
    asc.leaveOutOfProfiles(udid);

    // The sign a worker would run for the user: no profile, so no install that would fail.
    await expect(t.services.signing.signingMaterial(user)).rejects.toBeInstanceOf(DeviceWaitsForApple);
    const held = await rowOf(udid);
    expect(held).toMatchObject({ status: 'Process', reason: APPLE_WAIT_REASON, leaseExpiresAt: null });
    expect(held.appleWaitUntil!.getTime()).toBe(now.getTime() + 10 * MINUTE);
    // The owner reads why on My page; the admin console does not take it for a Mac to confirm.
    expect(await deviceInfo(t, cookie)).toEqual([
      expect.objectContaining({ status: 'Process', reason: APPLE_WAIT_REASON }),
    ]);
    const [listed] = await t.services.registration.waiting();
    expect(listed).toMatchObject({
      status: 'Process',
      reason: APPLE_WAIT_REASON,
      awaiting_confirmation: false,
      retry_at: held.appleWaitUntil!.toISOString(),
    });
    // Nor does a registration pass take it over.
    expect((await t.services.registration.runPass()).registered).toBe(0);

    // Asked for now, the sign is accepted and waits with the device, neither refused nor failed.
    const asked = await t.app.inject({
      method: 'PUT',
      url: `/api/sign/${APP_ID}/${APP_VER_ID}`,
      payload: { type: 0 },
      headers: { cookie, ...WEB_CLIENT },
    });
    expect([asked.statusCode, asked.json()]).toEqual([200, expect.objectContaining({ status: 'Pending' })]);
    const [sign] = await t.database.db.select().from(signRequests).where(eq(signRequests.userId, user));
    expect(sign).toMatchObject({ state: 'queued', attempts: 0 });
    expect(await claim()).toBeUndefined();

    // Not due yet: nothing is checked.
    expect(await checkAgain()).toEqual([]);
    // Due, and Apple still leaves it out: held again, the next check twice as far off.
    now = new Date(now.getTime() + 10 * MINUTE);
    expect(await checkAgain()).toEqual([user]);
    const again = await rowOf(udid);
    expect(again).toMatchObject({ status: 'Process', reason: APPLE_WAIT_REASON, appleWaitChecks: 2 });
    expect(again.appleWaitUntil!.getTime()).toBe(now.getTime() + 20 * MINUTE);
    expect(await claim()).toBeUndefined();

    // Apple lists it now: the next check makes it Registered and the profile lists it.
    asc.leaveOutOfProfiles(udid, false);
    now = new Date(now.getTime() + 20 * MINUTE);
    expect(await checkAgain()).toEqual([user]);
    expect(await rowOf(udid)).toMatchObject({
      status: 'Registered',
      reason: null,
      appleWaitUntil: null,
      appleWaitChecks: 0,
    });
    const material = await t.services.signing.signingMaterial(user);
    expect(parseProfile(material!.profile).provisionedDevices).toEqual([udid]);
    expect((await deviceInfo(t, cookie))[0]).not.toHaveProperty('reason');

    // The sign that waited is claimed, its attempts those of a first try.
    expect(await claim()).toMatchObject({ userId: user, attempts: 1, failures: 0 });
  });

  it('holds only the device a new profile leaves out; the user’s other one stays Registered', async () => {
    const { user, cookie, udid } = await registeredDevice();
    const second = `00008120-01${String(seq).padStart(14, '0')}`;
    await enrollDevice(t, cookie, { UDID: second, PRODUCT: 'iPhone15,3', DEVICE_NAME: 'Second' });
    await payForDevice(t, cookie, 1);
    await t.services.registration.runPass();
    asc.leaveOutOfProfiles(second);

    await expect(t.services.signing.signingMaterial(user)).rejects.toBeInstanceOf(DeviceWaitsForApple);
    expect((await rowOf(udid)).status).toBe('Registered');
    expect(await rowOf(second)).toMatchObject({ status: 'Process', reason: APPLE_WAIT_REASON });
  });
});
