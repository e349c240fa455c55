/**
 * Registration with the dev identity (no App Store Connect key): enroll -> pay -> Registered,
 * Macs confirmed by an admin, expiry and renewal, several processes, a worker that dies, and the
 * admin console's device routes.
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devices } from '../../db/schema/index.js';
import { deviceInfo, enrollDevice, payForDevice, yearsAfter } from '../../test/device-flow.js';
import {
  createTestApp,
  databaseKinds,
  sessionCookie,
  signedInUser,
  type TestApp,
} from '../../test/harness.js';
import * as q from './queries.js';
import { createRegistrationService, type DeviceToRegister } from './registration.js';

const SAME_ORIGIN = { 'sec-fetch-site': 'same-origin' };
const quiet = { info() {}, warn() {} };
const IPHONE = { UDID: '00008120-001A2B3C4D5E6F70', PRODUCT: 'iPhone15,2' };
const MAC = { UDID: '0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9', PRODUCT: 'Mac14,2' };

describe.each(databaseKinds)('device registration with the dev identity on %s', (kind) => {
  let t: TestApp;
  let now = new Date('2026-06-01T09:30:00.000Z');
  let seq = 0;
  const uid = () => `reg_${kind}_${++seq}`;
  const adminId = `reg_admin_${kind}`;

  beforeAll(async () => {
    t = await createTestApp(kind, {
      // Passes run when the tests say so; the live path has its own app below.
      env: { SIGN_IN_LIMIT_PER_ADDRESS: '10000', REGISTRATION_INTERVAL_SECONDS: '0' },
      clock: () => now,
    });
    await signedInUser(t, adminId, 1);
  });
  afterAll(() => t.close());

  /** A session that has not lapsed, whatever the tests did to the clock. */
  const signIn = async (id: string) =>
    sessionCookie(
      await t.app.inject({ method: 'POST', url: '/api/sign-in', payload: { id, pw: 'a'.repeat(32) } }),
    );
  const adminCall = async (method: 'GET' | 'POST', url: string, cookie?: string) =>
    t.app.inject({ method, url, headers: { cookie: cookie ?? (await signIn(adminId)), ...SAME_ORIGIN } });
  const rowOf = async (userId: string) =>
    (await t.database.db.select().from(devices).where(eq(devices.userId, userId)))[0]!;

  it('registers an enrolled, paid device at once, for a year, and signs for it', async () => {
    const user = uid();
    const cookie = await signedInUser(t, user);
    await enrollDevice(t, cookie, IPHONE);
    expect(await deviceInfo(t, cookie)).toEqual([
      { Product: 'iPhone15,2', UDID: IPHONE.UDID, name: 'Ana’s iPhone', status: 'Add' },
    ]);
    await payForDevice(t, cookie, 0);
    expect((await deviceInfo(t, cookie))[0]!.status).toBe('Pending');

    expect(await t.services.registration.runPass()).toMatchObject({ registered: 1, failed: 0 });
    expect(await deviceInfo(t, cookie)).toEqual([
      {
        Product: 'iPhone15,2',
        UDID: IPHONE.UDID,
        name: 'Ana’s iPhone',
        status: 'Registered',
        expired_date: yearsAfter(now, 1).toISOString(),
      },
    ]);
    expect(await rowOf(user)).toMatchObject({
      paidYears: 0,
      registeredAt: now,
      reason: null,
      appleDeviceId: null,
    });
    const material = await t.services.signing.signingMaterial(user);
    expect(material).toMatchObject({ udids: [IPHONE.UDID], identityKind: 'dev' });
  });

  it('keeps a paid Mac in Process until an admin confirms it', async () => {
    const user = uid();
    const cookie = await signedInUser(t, user);
    await enrollDevice(t, cookie, MAC);
    await payForDevice(t, cookie, 0);
    expect(await t.services.registration.runPass()).toMatchObject({ registered: 0, awaitingConfirmation: 1 });
    expect((await deviceInfo(t, cookie))[0]!.status).toBe('Process');
    // Passes leave it be.
    expect(await t.services.registration.runPass()).toMatchObject({ registered: 0, awaitingConfirmation: 0 });

    const id = String((await rowOf(user)).id);
    const listed = (await adminCall('GET', '/api/admin/devices')).json() as Array<Record<string, unknown>>;
    expect(listed.find((d) => d.id === id)).toEqual({
      id,
      user,
      product: 'Mac14,2',
      udid: MAC.UDID,
      name: 'Ana’s iPhone',
      platform: 'MAC_OS',
      status: 'Process',
      paid_years: 1,
      reason: null,
      attempts: 0,
      retry_at: null,
      awaiting_confirmation: true,
      expired_date: null,
      created_at: expect.any(String),
    });

    expect((await adminCall('POST', `/api/admin/devices/${id}/confirm`, cookie)).statusCode).toBe(403);
    const confirmed = await adminCall('POST', `/api/admin/devices/${id}/confirm`);
    expect(confirmed.statusCode).toBe(200);
    expect(confirmed.json()).toMatchObject({ id, status: 'Process', awaiting_confirmation: false });
    const again = await adminCall('POST', `/api/admin/devices/${id}/confirm`);
    expect([again.statusCode, again.body]).toEqual([409, 'This device is not waiting for confirmation.']);

    expect(await t.services.registration.runPass()).toMatchObject({ registered: 1 });
    expect((await deviceInfo(t, cookie))[0]!.status).toBe('Registered');
    const audit = (await adminCall('GET', '/api/admin/audit/0')).json() as Array<{
      action: string;
      subject: Record<string, string>;
    }>;
    expect(audit.find((a) => a.action === 'confirm-device')?.subject).toEqual({
      id,
      user,
      product: 'Mac14,2',
    });
  });

  it('expires a device past its date; Renew pays again and counts the year from now', async () => {
    const user = uid();
    let cookie = await signedInUser(t, user);
    await enrollDevice(t, cookie, IPHONE);
    await payForDevice(t, cookie, 0);
    await t.services.registration.runPass();
    const expiry = (await rowOf(user)).expiresAt!;

    now = new Date(expiry.getTime() + 86_400_000);
    expect((await t.services.registration.runPass()).expired).toBeGreaterThanOrEqual(1);
    cookie = await signIn(user);
    expect(await deviceInfo(t, cookie)).toEqual([
      { Product: 'iPhone15,2', UDID: IPHONE.UDID, name: 'Ana’s iPhone', status: 'Expired' },
    ]);
    expect(await t.services.signing.signingMaterial(user)).toBeUndefined();

    await payForDevice(t, cookie, 0);
    expect((await deviceInfo(t, cookie))[0]!.status).toBe('Pending');
    await t.services.registration.runPass();
    expect((await deviceInfo(t, cookie))[0]).toMatchObject({
      status: 'Registered',
      expired_date: yearsAfter(now, 1).toISOString(),
    });
  });

  it('adds an early renewal’s year to the current expiry', async () => {
    const user = uid();
    const cookie = await signedInUser(t, user);
    await enrollDevice(t, cookie, IPHONE);
    await payForDevice(t, cookie, 0);
    await t.services.registration.runPass();
    const expiry = (await rowOf(user)).expiresAt!;
    now = new Date(now.getTime() + 20 * 86_400_000);

    await payForDevice(t, cookie, 0);
    await t.services.registration.runPass();
    expect((await deviceInfo(t, cookie))[0]).toMatchObject({
      status: 'Registered',
      expired_date: yearsAfter(expiry, 1).toISOString(),
    });
  });

  it('registers each device once when several processes pass at the same time', async () => {
    const user = uid();
    await signedInUser(t, user);
    const udids = Array.from({ length: 12 }, (_, i) => `00008120-00${String(i).padStart(14, '0')}`);
    for (const udid of udids) {
      const row = await q.insertDevice(t.database.db, { userId: user, product: 'iPhone15,2', udid });
      await q.markDevicePaid(t.database.db, user, row.id);
    }
    const calls: string[] = [];
    const registrar = {
      async registerDevice(device: DeviceToRegister) {
        calls.push(device.udid);
        await new Promise((resolve) => setImmediate(resolve));
        return { appleDeviceId: `APPLE-${device.udid}` };
      },
    };
    const processes = [1, 2, 3].map(() =>
      createRegistrationService({
        db: t.database.db,
        clock: () => now,
        bus: t.services.bus,
        registrar,
        log: quiet,
      }),
    );
    const outcomes = await Promise.all(processes.map((p) => p.runPass()));
    expect(outcomes.reduce((n, o) => n + o.registered, 0)).toBe(12);
    expect([...calls].sort()).toEqual(udids);
    const rows = await t.database.db.select().from(devices).where(eq(devices.userId, user));
    expect(rows.every((r) => r.status === 'Registered' && r.appleDeviceId === `APPLE-${r.udid}`)).toBe(true);
  });

  it('gives a device held by a worker that died to another after the lease, without a second year', async () => {
    const user = uid();
    const cookie = await signedInUser(t, user);
    await enrollDevice(t, cookie, IPHONE);
    await payForDevice(t, cookie, 0);
    let release: () => void = () => {};
    let started: () => void = () => {};
    const claimed = new Promise<void>((resolve) => (started = resolve));
    const dying = createRegistrationService({
      db: t.database.db,
      clock: () => now,
      bus: t.services.bus,
      log: quiet,
      registrar: {
        registerDevice: async () => {
          started();
          await new Promise<void>((resolve) => (release = resolve));
          return { appleDeviceId: 'FROM-THE-DEAD' };
        },
      },
    });
    const dead = dying.runPass();
    await claimed;
    expect((await rowOf(user)).status).toBe('Process');
    // Before the lease runs out, another process leaves it alone.
    expect((await t.services.registration.runPass()).registered).toBe(0);

    const paidAt = now;
    now = new Date(now.getTime() + 301_000);
    expect((await t.services.registration.runPass()).registered).toBe(1);
    const registered = await rowOf(user);
    expect(registered).toMatchObject({ status: 'Registered', paidYears: 0 });
    expect(registered.expiresAt).toEqual(yearsAfter(now, 1));

    release();
    expect(await dead).toMatchObject({ registered: 0 });
    expect(await rowOf(user)).toEqual(registered);
    expect(paidAt).not.toEqual(now);
  });

  it('registers a paid device by itself when the worker runs (a payment tells every process)', async () => {
    const live = await createTestApp(kind, { env: { SIGN_IN_LIMIT_PER_ADDRESS: '10000' }, clock: () => now });
    try {
      const user = uid();
      const cookie = await signedInUser(live, user);
      await enrollDevice(live, cookie, IPHONE);
      const isRegistered = async () => (await deviceInfo(live, cookie))[0]!.status === 'Registered';
      const registered = new Promise<void>((resolve, reject) => {
        const timeout = setTimeout(() => reject(new Error('the device was not registered')), 120_000);
        const stop = live.services.bus.subscribe((event) => {
          if (event.kind !== 'live' || event.event.type !== 'device') return;
          void isRegistered().then((done) => {
            if (!done) return;
            clearTimeout(timeout);
            stop();
            resolve();
          });
        });
      });
      await payForDevice(live, cookie, 0);
      await registered;
      expect((await deviceInfo(live, cookie))[0]).toMatchObject({
        status: 'Registered',
        expired_date: yearsAfter(now, 1).toISOString(),
      });
    } finally {
      await live.close();
    }
  });

  describe('the admin console', () => {
    it('refuses users and signed-out callers', async () => {
      const cookie = await signedInUser(t, uid());
      for (const [method, url] of [
        ['GET', '/api/admin/devices'],
        ['POST', '/api/admin/devices/1/confirm'],
        ['POST', '/api/admin/devices/1/retry'],
        ['GET', '/api/admin/identity'],
      ] as const) {
        const asUser = await adminCall(method, url, cookie);
        expect([asUser.statusCode, asUser.body]).toEqual([403, 'Do not have permission.']);
        const signedOut = await t.app.inject({ method, url, headers: SAME_ORIGIN });
        expect([signedOut.statusCode, signedOut.body]).toEqual([401, 'Please sign in.']);
      }
    });

    it('answers 404 for a device that does not exist, and 409 for one that is not waiting', async () => {
      expect((await adminCall('POST', '/api/admin/devices/987654321/retry')).statusCode).toBe(404);
      const user = uid();
      const cookie = await signedInUser(t, user);
      await enrollDevice(t, cookie, IPHONE);
      const id = (await rowOf(user)).id;
      const res = await adminCall('POST', `/api/admin/devices/${id}/retry`);
      expect([res.statusCode, res.body]).toEqual([
        409,
        'Only a paid device waiting for registration can be retried.',
      ]);
      expect((await adminCall('POST', `/api/admin/devices/${id}/confirm`)).statusCode).toBe(409);
    });

    it('shows the dev identity, marked as not installable on real devices', async () => {
      const res = await adminCall('GET', '/api/admin/identity');
      expect(res.statusCode).toBe(200);
      const identity = res.json() as Record<string, unknown>;
      expect(identity).toMatchObject({
        kind: 'dev',
        installable: false,
        team_id: expect.stringMatching(/^[A-Z0-9]{10}$/),
        certificate_name: expect.stringMatching(/^Sideport Dev \(not Apple\): Sideport \([A-Z0-9]{10}\)$/),
        certificate_expires_at: expect.any(String),
      });
      expect(identity.description).toMatch(/real devices will not install what it signs/);
    });
  });
});
