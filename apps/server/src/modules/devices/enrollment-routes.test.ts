/**
 * Enrollment through the real server: the downloaded .mobileconfig, a device's signed answer to its
 * one-time URL, and every answer that must change nothing.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { parsePlistDict, type PlistObject } from '@sideport/ipa';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devices, enrollmentTokens } from '../../db/schema/index.js';
import { changedTables, snapshotDatabase } from '../../test/db-snapshot.js';
import {
  ATTRIBUTES,
  billionLaughs,
  devicePlist,
  issue,
  p12Of,
  signAnswer,
  type Issued,
} from '../../test/device-answers.js';
import { waitForEvent } from '../../platform/events.js';
import { createTestApp, databaseKinds, fixturesDir, signedInUser, type TestApp } from '../../test/harness.js';
import { verifyCms } from '../../test/cms-verify.js';

const SAME_ORIGIN = { 'sec-fetch-site': 'same-origin' };
const REAL_ANSWER = () =>
  readFileSync(
    path.join(fixturesDir, 'enrollment/zentral_ota_payload_phase_2_signed_by_apple_device_ca.p7s'),
  );
const REAL_CHALLENGE = '8gLEIttrT7qbLOZs3XzL5XPgNXCliGwRLtn2Lfe4GBsa7g6MGm2sJjicKrLFal4D';

/** "Apple iPhone Device CA" as the real answer carries it: what an operator puts in DEVICE_CA_PEM. */
function appleDeviceCaPem(): string {
  const info = new pkijs.ContentInfo({ schema: asn1js.fromBER(new Uint8Array(REAL_ANSWER())).result });
  const certs = new pkijs.SignedData({ schema: info.content }).certificates as pkijs.Certificate[];
  const ca = certs.find((c) =>
    c.subject.typesAndValues.some((tv) => tv.value.valueBlock.value === 'Apple iPhone Device CA'),
  )!;
  return `-----BEGIN CERTIFICATE-----\n${Buffer.from(ca.toSchema().toBER()).toString('base64')}\n-----END CERTIFICATE-----\n`;
}

let deviceCa: Issued;
let deviceCaIntermediate: Issued;
let device: Issued;
let strangerCa: Issued;
let stranger: Issued;
beforeAll(() => {
  deviceCa = issue('Test Device Root', undefined, true);
  deviceCaIntermediate = issue('Test iPhone Device CA', deviceCa, true);
  device = issue('5D3C9A2B-0000-4000-8000-00000000ABCD', deviceCaIntermediate);
  strangerCa = issue('Stranger CA', undefined, true);
  stranger = issue('5D3C9A2B-0000-4000-8000-00000000FFFF', strangerCa);
});

/** The answer a device signed by the test device CA sends for `fields`. */
const answerOf = (fields: PlistObject, signer: Issued = device) =>
  signAnswer(devicePlist({ ...ATTRIBUTES, ...fields }), signer, { chain: [deviceCaIntermediate] });

describe.each(databaseKinds)('device enrollment on %s', (kind) => {
  let t: TestApp;
  // Near the real time: openssl checks the test certificates' validity against it.
  let now = new Date(Math.floor(Date.now() / 1000) * 1000);
  let seq = 0;
  const uid = () => `enr_${kind}_${++seq}`;

  beforeAll(async () => {
    t = await createTestApp(kind, {
      env: { SIGN_IN_LIMIT_PER_ADDRESS: '10000', REGISTRATION_INTERVAL_SECONDS: '0' },
      clock: () => now,
    });
  });
  afterAll(() => t.close());

  /** Downloads a profile; `unwrap` reads a signed one's content. */
  async function download(
    cookie: string,
    app: TestApp = t,
    unwrap: (raw: Buffer) => Buffer | Promise<Buffer> = (raw) => raw,
  ) {
    const res = await app.app.inject({ url: '/api/udid/profile', headers: { cookie, ...SAME_ORIGIN } });
    expect(res.statusCode, res.body).toBe(200);
    const dict = parsePlistDict(await unwrap(res.rawPayload), 'mobileconfig');
    const content = dict['PayloadContent'] as { URL: string; Challenge: string };
    const url = new URL(content.URL);
    return { res, dict, url, token: content.Challenge };
  }

  const post = (url: string, body: Buffer, app: TestApp = t, headers: Record<string, string> = {}) =>
    app.app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/pkcs7-signature', ...headers },
      payload: body,
    });

  const deviceInfo = async (cookie: string) =>
    ((await t.app.inject({ url: '/api/info', headers: { cookie } })).json() as { device_info: unknown[] })
      .device_info;

  it('downloads a Profile Service .mobileconfig whose one-time URL is absolute and whose token is stored hashed', async () => {
    const user = uid();
    const cookie = await signedInUser(t, user);
    const { res, dict, url, token } = await download(cookie);
    expect(res.headers['content-type']).toBe('application/x-apple-aspen-config');
    expect(res.headers['content-disposition']).toBe('attachment; filename=sideport-device.mobileconfig');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(dict).toMatchObject({
      PayloadType: 'Profile Service',
      PayloadVersion: 1,
      PayloadContent: {
        DeviceAttributes: ['UDID', 'PRODUCT', 'VERSION', 'SERIAL', 'DEVICE_NAME'],
        Challenge: token,
      },
    });
    // The request's own origin without PUBLIC_URL.
    expect(url.origin).toBe('http://localhost');
    expect(url.pathname).toBe(`/api/udid/enroll/${token}`);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const rows = await t.database.db.select().from(enrollmentTokens).where(eq(enrollmentTokens.userId, user));
    expect(rows).toHaveLength(1);
    expect(rows[0]!.tokenHash).toBe(createHash('sha256').update(token).digest('hex'));
    expect(JSON.stringify(rows)).not.toContain(token);
    expect(rows[0]!.expiresAt.getTime() - now.getTime()).toBe(10 * 60_000);
  });

  it('asks a signed-out visitor to sign in, and refuses the download from another site', async () => {
    const signedOut = await t.app.inject({ url: '/api/udid/profile', headers: SAME_ORIGIN });
    expect(signedOut.statusCode).toBe(401);
    expect(signedOut.body).toBe('Please sign in.');
    const cookie = await signedInUser(t, uid());
    const before = await snapshotDatabase(t.database.db);
    const crossSite = await t.app.inject({
      url: '/api/udid/profile',
      headers: { cookie, 'sec-fetch-site': 'cross-site' },
    });
    expect(crossSite.statusCode).toBe(403);
    expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
  });

  it("adds the device that answers to the token's user with status Add and sends it to /my", async () => {
    const user = uid();
    const cookie = await signedInUser(t, user);
    const { url, token } = await download(cookie);
    const told = waitForEvent(
      t.services.bus,
      (e) => e.kind === 'live' && e.event.type === 'device' && e.userId === user,
      10_000,
    );
    const res = await post(url.pathname, answerOf({ CHALLENGE: token }), t, {
      'sec-fetch-site': 'cross-site',
    });
    expect(res.statusCode, res.body).toBe(301);
    expect(res.headers.location).toBe('http://localhost/my');
    expect(await deviceInfo(cookie)).toEqual([
      { Product: 'iPhone15,2', UDID: ATTRIBUTES.UDID, name: ATTRIBUTES.DEVICE_NAME, status: 'Add' },
    ]);
    const [row] = await t.database.db.select().from(devices).where(eq(devices.userId, user));
    expect(row).toMatchObject({ platform: 'IOS', deviceName: 'Ana’s iPhone', paidYears: 0, reason: null });
    // The owner's open pages hear of it.
    expect(await told).toBeDefined();
  });

  it('stores a Mac as MAC_OS', async () => {
    const user = uid();
    const cookie = await signedInUser(t, user);
    const { url, token } = await download(cookie);
    const udid = '0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9';
    expect(
      (await post(url.pathname, answerOf({ CHALLENGE: token, PRODUCT: 'Mac14,2', UDID: udid }))).statusCode,
    ).toBe(301);
    const [row] = await t.database.db.select().from(devices).where(eq(devices.userId, user));
    expect(row).toMatchObject({ product: 'Mac14,2', udid, platform: 'MAC_OS', status: 'Add' });
  });

  it('does not add a UDID the user already has, and still sends the device to /my', async () => {
    const user = uid();
    const cookie = await signedInUser(t, user);
    for (let i = 0; i < 2; i++) {
      const { url, token } = await download(cookie);
      expect((await post(url.pathname, answerOf({ CHALLENGE: token }))).statusCode).toBe(301);
    }
    expect(await deviceInfo(cookie)).toHaveLength(1);
  });

  it('takes the same UDID in another letter case for the same device, kept in upper case', async () => {
    const user = uid();
    const cookie = await signedInUser(t, user);
    for (const udid of [
      '00008110-000a1b2c3d4e5f60',
      '00008110-000A1B2C3D4E5F60',
      '00008110-000A1b2C3d4E5f60',
    ]) {
      const { url, token } = await download(cookie);
      expect((await post(url.pathname, answerOf({ CHALLENGE: token, UDID: udid }))).statusCode).toBe(301);
    }
    expect(await deviceInfo(cookie)).toEqual([
      {
        Product: 'iPhone15,2',
        UDID: '00008110-000A1B2C3D4E5F60',
        name: ATTRIBUTES.DEVICE_NAME,
        status: 'Add',
      },
    ]);
    // One device, so one registration to pay for.
    const pay = (index: number) =>
      t.app.inject({ url: `/api/pay/device/${index}`, headers: { cookie, ...SAME_ORIGIN } });
    expect((await pay(0)).statusCode).toBe(200);
    expect((await pay(1)).statusCode).toBe(404);
  });

  describe('refuses with a 4xx sentence and changes nothing', () => {
    /** Posts `body` to a fresh token's URL of a new user; returns the answer, the token's URL and the user's cookie. */
    async function refused(makeBody: (token: string) => Buffer, status: number) {
      const cookie = await signedInUser(t, uid());
      const { url, token } = await download(cookie);
      const before = await snapshotDatabase(t.database.db);
      const res = await post(url.pathname, makeBody(token));
      expect(res.statusCode, res.body).toBe(status);
      expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(res.body).toMatch(/^[A-Z].{10,298}[.]$/);
      expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
      // The token was not spent: the device's real answer still goes through.
      expect((await post(url.pathname, answerOf({ CHALLENGE: token }))).statusCode).toBe(301);
      return res;
    }

    it('an unsigned answer (a bare plist)', async () => {
      const res = await refused(
        (token) => Buffer.from(devicePlist({ ...ATTRIBUTES, CHALLENGE: token })),
        400,
      );
      expect(res.body).toBe('The device answer is a bare property list; a device signs its answer.');
    });

    it('a malformed answer', async () => {
      await refused(() => Buffer.from('not a signed message at all'), 400);
      await refused(() => Buffer.alloc(0), 400);
    });

    it('an answer whose signature does not match its content', async () => {
      await refused((token) => {
        const body = answerOf({ CHALLENGE: token });
        const at = body.indexOf('iPhone15,2');
        body.write('iPhone15,3', at, 'latin1');
        return body;
      }, 400);
    });

    it('an oversized answer, before reading it', async () => {
      const res = await refused(() => Buffer.alloc(64 * 1024 + 1, 0x30), 413);
      expect(res.body).toBe('The request body is too large.');
    });

    it('an XML entity-expansion plist', async () => {
      const res = await refused(() => signAnswer(billionLaughs(), device), 400);
      expect(res.body).toBe("The device answer's XML declares entities; it is refused unread.");
    });

    it('an answer made for another token (a foreign challenge)', async () => {
      const other = await signedInUser(t, uid());
      const { token: foreign } = await download(other);
      const res = await refused(() => answerOf({ CHALLENGE: foreign }), 403);
      expect(res.body).toBe('The device answer was made for another enrollment link.');
    });

    it('a replayed answer', async () => {
      const user = uid();
      const cookie = await signedInUser(t, user);
      const { url, token } = await download(cookie);
      const body = answerOf({ CHALLENGE: token });
      expect((await post(url.pathname, body)).statusCode).toBe(301);
      const before = await snapshotDatabase(t.database.db);
      const replay = await post(url.pathname, body);
      expect(replay.statusCode).toBe(410);
      expect(replay.body).toBe(
        'This enrollment link was already used; download the device profile again from My page to add another device.',
      );
      // Even as another device: the link is spent.
      const otherDevice = await post(
        url.pathname,
        answerOf({ CHALLENGE: token, UDID: '00008120-00AAAAAAAAAAAAAA' }),
      );
      expect(otherDevice.statusCode).toBe(410);
      expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
    });

    it('an answer after the 10 minutes', async () => {
      const cookie = await signedInUser(t, uid());
      const { url, token } = await download(cookie);
      now = new Date(now.getTime() + 10 * 60_000 + 1000);
      const before = await snapshotDatabase(t.database.db);
      const res = await post(url.pathname, answerOf({ CHALLENGE: token }));
      expect(res.statusCode).toBe(410);
      expect(res.body).toBe(
        'This enrollment link expired (it works for 10 minutes); download the device profile again from My page.',
      );
      expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
    });

    it('an unknown token, and one that is not a token', async () => {
      const before = await snapshotDatabase(t.database.db);
      const unknown = await post(
        `/api/udid/enroll/${'B'.repeat(43)}`,
        answerOf({ CHALLENGE: 'B'.repeat(43) }),
      );
      expect(unknown.statusCode).toBe(404);
      expect(unknown.body).toBe(
        'This enrollment link is not known; download the device profile again from My page.',
      );
      const bad = await post('/api/udid/enroll/..%2F..%2Fetc', answerOf({}));
      expect(bad.statusCode).toBe(400);
      expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
    });
  });

  it('keeps at most ten unused profiles per user', async () => {
    const cookie = await signedInUser(t, uid());
    for (let i = 0; i < 10; i++) await download(cookie);
    const res = await t.app.inject({ url: '/api/udid/profile', headers: { cookie, ...SAME_ORIGIN } });
    expect(res.statusCode).toBe(429);
    expect(res.body).toBe(
      'You downloaded 10 device profiles in the last 10 minutes; install one of them, or try again later.',
    );
  });

  describe('with PUBLIC_URL, PROFILE_SIGNING_P12 and DEVICE_CA_PEM', () => {
    let configured: TestApp;
    let operatorCa: Issued;
    let dir: string;
    beforeAll(async () => {
      operatorCa = issue('Operator Root', undefined, true);
      const operator = issue('enroll.sideport.example', operatorCa);
      dir = mkdtempSync(path.join(tmpdir(), 'sideport-p12-'));
      const p12Path = path.join(dir, 'profile-signing.p12');
      writeFileSync(p12Path, p12Of(operator, 'p12-pass'));
      configured = await createTestApp(kind, {
        env: {
          REGISTRATION_INTERVAL_SECONDS: '0',
          PUBLIC_URL: 'https://sideport.example',
          PROFILE_SIGNING_P12: p12Path,
          PROFILE_SIGNING_P12_PASSWORD: 'p12-pass',
          // The test device CA and Apple's, as one PEM text with literal \n, as a one-line .env holds it.
          DEVICE_CA_PEM: `${deviceCa.pem}${appleDeviceCaPem()}`.replace(/\n/g, '\\n'),
        },
        clock: () => now,
      });
    });
    afterAll(async () => {
      await configured.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('signs the .mobileconfig with the operator’s certificate and points it at PUBLIC_URL', async () => {
      const cookie = await signedInUser(configured, uid());
      const res = await configured.app.inject({
        url: '/api/udid/profile',
        headers: { cookie, ...SAME_ORIGIN },
      });
      expect(res.statusCode).toBe(200);
      expect(res.rawPayload[0]).toBe(0x30); // DER: CMS SignedData, not bare XML
      const dict = parsePlistDict(await verifyCms(res.rawPayload, operatorCa.pem), 'mobileconfig');
      const content = dict['PayloadContent'] as { URL: string; Challenge: string };
      expect(content.URL).toBe(`https://sideport.example/api/udid/enroll/${content.Challenge}`);
    });

    it('accepts a device whose certificate chains to DEVICE_CA_PEM, and refuses one that does not', async () => {
      const cookie = await signedInUser(configured, uid());
      const { url, token } = await download(cookie, configured, (raw) => verifyCms(raw, operatorCa.pem));
      const before = await snapshotDatabase(configured.database.db);
      const untrusted = await post(url.pathname, answerOf({ CHALLENGE: token }, stranger), configured);
      expect(untrusted.statusCode).toBe(400);
      expect(untrusted.body).toMatch(
        /^The device answer is signed by "CN=5D3C9A2B-0000-4000-8000-00000000FFFF", which does not chain/,
      );
      expect(changedTables(before, await snapshotDatabase(configured.database.db))).toEqual({});
      const trusted = await post(url.pathname, answerOf({ CHALLENGE: token }), configured);
      expect(trusted.statusCode).toBe(301);
      expect(trusted.headers.location).toBe('https://sideport.example/my');
    });

    it("enrolls the real device answer (signed by Apple's device CA)", async () => {
      const user = uid();
      await signedInUser(configured, user);
      // The recorded answer echoes its own challenge: issue that token to this user.
      await configured.database.db.insert(enrollmentTokens).values({
        tokenHash: createHash('sha256').update(REAL_CHALLENGE).digest('hex'),
        userId: user,
        createdAt: now,
        expiresAt: new Date(now.getTime() + 600_000),
      });
      const res = await post(`/api/udid/enroll/${REAL_CHALLENGE}`, REAL_ANSWER(), configured);
      expect(res.statusCode, res.body).toBe(301);
      const [row] = await configured.database.db.select().from(devices).where(eq(devices.userId, user));
      expect(row).toMatchObject({
        product: 'VirtualMac2,1',
        udid: '78897E40-F532-5DE0-A7DC-56BAC5CEEB9C',
        platform: 'MAC_OS',
        status: 'Add',
      });
    });
  });
});
