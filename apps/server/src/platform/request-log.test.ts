/**
 * The request lines the server logs, read from the stream its logger writes to, while the real
 * routes are driven with bearer links: no secret of a link may appear in any line, and the path's
 * shape stays readable.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as devices from '../modules/devices/queries.js';
import { createSimulatedDevice } from '../modules/devices/simulated-device.js';
import { fixtureIpa } from '../test/fixtures.js';
import { createTestApp, databaseKinds, signedInUser, type TestApp } from '../test/harness.js';
import { WRITTEN_AS_IS } from './logger.js';
import { redactUrl } from './redact-url.js';

const SAME_ORIGIN = { 'sec-fetch-site': 'same-origin' };

describe.each(databaseKinds)('request logs on %s', (kind) => {
  let t: TestApp;
  const lines: string[] = [];
  /** Every `url` a request line showed. */
  const loggedUrls = () =>
    lines
      .map((line) => (JSON.parse(line) as { req?: { url?: string } }).req?.url)
      .filter((url) => url !== undefined);

  beforeAll(async () => {
    t = await createTestApp(kind, {
      env: { LOG_LEVEL: 'info', FEATHER_IPA: fixtureIpa, SIGN_IN_LIMIT_PER_ADDRESS: '10000' },
      web: true,
      logStream: { write: (line: string) => void lines.push(line) },
    });
  });
  afterAll(() => t.close());

  /** Runs `drive`, then checks that no line logged meanwhile holds any of the secrets it returns. */
  async function expectNoSecretLogged(drive: () => Promise<string[]>) {
    const from = lines.length;
    const secrets = await drive();
    expect(secrets.length).toBeGreaterThan(0);
    const logged = lines.slice(from);
    expect(logged.length).toBeGreaterThan(0);
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThanOrEqual(16);
      expect(logged.filter((line) => line.includes(secret))).toEqual([]);
    }
  }

  it("hides the first admin's setup token, on its page and its API", async () => {
    const token = (await t.services.setup.issue())!;
    expect(token).toBeDefined();
    await expectNoSecretLogged(async () => {
      expect((await t.app.inject({ url: `/setup/${token}` })).statusCode).toBe(200);
      expect((await t.app.inject({ url: `/api/setup/${token}`, headers: SAME_ORIGIN })).statusCode).toBe(204);
      const created = await t.app.inject({
        method: 'POST',
        url: `/api/setup/${token}`,
        headers: SAME_ORIGIN,
        payload: { id: `first_admin_${kind}`, pw: 'b'.repeat(32) },
      });
      expect(created.statusCode).toBe(200);
      return [token];
    });
    expect(loggedUrls()).toEqual(expect.arrayContaining(['/setup/[redacted]', '/api/setup/[redacted]']));
  });

  it("hides a device's enrollment token", async () => {
    const cookie = await signedInUser(t, `enrolling_${kind}`);
    await expectNoSecretLogged(async () => {
      const profile = await t.app.inject({ url: '/api/udid/profile', headers: { cookie, ...SAME_ORIGIN } });
      expect(profile.statusCode).toBe(200);
      const { url, body } = createSimulatedDevice({}).answer(profile.rawPayload);
      const path = new URL(url).pathname;
      const enrolled = await t.app.inject({
        method: 'POST',
        url: path,
        headers: { 'content-type': 'application/pkcs7-signature' },
        payload: body,
      });
      expect(enrolled.statusCode).toBe(301);
      return [path.split('/').at(-1)!];
    });
    expect(loggedUrls()).toContain('/api/udid/enroll/[redacted]');
  });

  it("hides a Feather certificate link's sealed token and signature", async () => {
    const user = `feather_${kind}`;
    const cookie = await signedInUser(t, user);
    await devices.insertDevice(t.database.db, {
      userId: user,
      product: 'iPhone15,2',
      udid: '00008110-000A1B2C3D4E5F61',
      status: 'Registered',
    });
    let expires = '';
    await expectNoSecretLogged(async () => {
      const answer = await t.app.inject({ url: '/api/feather/cert', headers: { cookie, ...SAME_ORIGIN } });
      expect(answer.statusCode).toBe(200);
      const link = new URL((answer.json() as { url: string }).url);
      expires = link.searchParams.get('expires')!;
      const zip = await t.app.inject({ url: `${link.pathname}${link.search}` });
      expect(zip.statusCode).toBe(200);
      expect(zip.headers['content-type']).toBe('application/zip');
      return [link.pathname.split('/').at(-1)!, link.searchParams.get('sig')!];
    });
    expect(loggedUrls()).toContain(`/files/feather/cert/[redacted]?expires=${expires}&sig=[redacted]`);
  });

  it('hides the signature of the manifest link the phone handoff page carries in its query', async () => {
    // What a computer's Install QR code opens on the iPhone (phone-qr.tsx): the signed manifest URL,
    // %-encoded as the value of `manifest`, and an itms-services link carrying it once more encoded.
    const manifest = `https://sideport.example${t.services.urls.sign('/files/sign/0b3c2f6e-8a1d-4c1e-9f5b-2a7d3e4c5b6a/manifest.plist', 600)}`;
    const sig = new URL(manifest).searchParams.get('sig')!;
    const itms = `itms-services://?action=download-manifest&url=${encodeURIComponent(manifest)}`;
    await expectNoSecretLogged(async () => {
      expect(
        (await t.app.inject({ url: `/install?manifest=${encodeURIComponent(manifest)}` })).statusCode,
      ).toBe(200);
      await t.app.inject({
        url: `/install?next=${encodeURIComponent(`/x?link=${encodeURIComponent(itms)}`)}`,
      });
      return [sig];
    });
    const logged = loggedUrls().filter((url) => url.startsWith('/install?'));
    expect(logged).toHaveLength(2);
    expect(
      logged.map((url) => decodeURIComponent(new URL(url, 'http://x').searchParams.get('manifest') ?? '')),
    ).toContain(manifest.replace(sig, '[redacted]'));
  });

  it("hides an address's secrets in every other line: a message, a field, an error", async () => {
    const sig = 'cd'.repeat(32);
    const presigned = `https://bucket.s3.example/ipa/1?X-Amz-Credential=AKIA0123456789ABCDEF&X-Amz-Signature=${sig}`;
    await expectNoSecretLogged(async () => {
      t.app.log.warn({ url: presigned, nested: { links: [presigned] } }, `could not fetch ${presigned}`);
      t.app.log.error({ err: new Error(`request to ${presigned} failed`) }, 'a store call failed');
      t.app.log.error(new Error(`request to /files/x?expires=1&sig=${sig} failed`), 'a file call failed');
      t.app.log.info(`Route GET:/files/y?sig=${sig} not found, nor sideport.example/files/z?sig=${sig}`);
      return [sig, 'AKIA0123456789ABCDEF'];
    });
    const last = lines.slice(-4).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(last[0]).toMatchObject({
      msg: 'could not fetch https://bucket.s3.example/ipa/1?X-Amz-Credential=[redacted]&X-Amz-Signature=[redacted]',
      url: 'https://bucket.s3.example/ipa/1?X-Amz-Credential=[redacted]&X-Amz-Signature=[redacted]',
    });
    expect(last[2]).toMatchObject({
      err: { message: 'request to /files/x?expires=1&sig=[redacted] failed', type: 'Error' },
    });
    expect(last[3]).toMatchObject({
      msg: 'Route GET:/files/y?sig=[redacted] not found, nor sideport.example/files/z?sig=[redacted]',
    });
  });

  it('writes a secret only on the line marked to carry it: the setup link printed at start', async () => {
    const link = `http://localhost:8080/setup/${'k'.repeat(43)}`;
    t.app.log.warn({ [WRITTEN_AS_IS]: true }, `No admin account yet. Open ${link} to create it`);
    t.app.log.warn(`Someone opened ${link}`);
    const [marked, plain] = lines.slice(-2).map((line) => JSON.parse(line) as { msg: string });
    expect(marked!.msg).toBe(`No admin account yet. Open ${link} to create it`);
    expect(plain!.msg).toBe('Someone opened http://localhost:8080/setup/[redacted]');
  });

  it('hides the signature of a signed file link and any credential in a query, keeping the rest', async () => {
    const sig = 'ab'.repeat(32);
    const apiKey = 'sk_live_0123456789abcdef';
    await expectNoSecretLogged(async () => {
      expect((await t.app.inject({ url: `/files/ipa/1/2?expires=9999999999&sig=${sig}` })).statusCode).toBe(
        403,
      );
      await t.app.inject({ url: `/api/queue/0?access_token=${apiKey}&X-Amz-Signature=${sig}&page=2` });
      return [sig, apiKey];
    });
    expect(loggedUrls()).toEqual(
      expect.arrayContaining([
        '/files/ipa/1/2?expires=9999999999&sig=[redacted]',
        '/api/queue/0?access_token=[redacted]&X-Amz-Signature=[redacted]&page=2',
      ]),
    );
  });
});

describe('redactUrl', () => {
  it.each([
    ['/api/latest/0?anchor=1', '/api/latest/0?anchor=1'],
    ['/api/search/kr/facebook', '/api/search/kr/facebook'],
    // An artifact's id is a UUID: an id, shown; the link's secret is its signature.
    [
      '/files/sign/0b3c2f6e-8a1d-4c1e-9f5b-2a7d3e4c5b6a/app.ipa?expires=1&sig=00ff',
      '/files/sign/0b3c2f6e-8a1d-4c1e-9f5b-2a7d3e4c5b6a/app.ipa?expires=1&sig=[redacted]',
    ],
    // The router decodes the path: a token behind an encoded prefix is still the setup link's.
    ['/%61pi/setup/short', '/%61pi/setup/[redacted]'],
    // A token-like segment anywhere else (43 characters of base64url).
    ['/somewhere/new/Q2FsbCBtZSBJc2htYWVsLiBTb21lIHllYXJzIGFnby4uLg', '/somewhere/new/[redacted]'],
    [
      'https://user:secret@sideport.example/my?session_id=cs_test_1',
      'https://[redacted]@sideport.example/my?session_id=[redacted]',
    ],
    // A signed link carried as a query value, %-encoded once or twice: its signature is redacted in place.
    [
      `/install?manifest=${encodeURIComponent('https://s.example/files/sign/1/manifest.plist?expires=9&sig=00ff')}`,
      `/install?manifest=${encodeURIComponent('https://s.example/files/sign/1/manifest.plist?expires=9&sig=[redacted]')}`,
    ],
    [
      `/x?go=${encodeURIComponent(`itms-services://?action=download-manifest&url=${encodeURIComponent('https://s.example/m?sig=00ff')}`)}`,
      `/x?go=${encodeURIComponent(`itms-services://?action=download-manifest&url=${encodeURIComponent('https://s.example/m?sig=[redacted]')}`)}`,
    ],
    // A query string as a value, and a value with nothing secret, left as they came.
    [
      `/x?state=${encodeURIComponent('a=1&token=abc')}`,
      `/x?state=${encodeURIComponent('a=1&token=[redacted]')}`,
    ],
    ['/x?back=%2Fmy%3Ftab%3Ddevices&q=a+b', '/x?back=%2Fmy%3Ftab%3Ddevices&q=a+b'],
  ])('%s is logged as %s', (url, logged) => {
    expect(redactUrl(url)).toBe(logged);
  });
});
