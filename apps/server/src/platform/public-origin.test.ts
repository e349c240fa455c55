import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulatedDevice } from '../modules/devices/simulated-device.js';
import { changedTables, snapshotDatabase } from '../test/db-snapshot.js';
import { deviceInfo } from '../test/device-flow.js';
import { createTestApp, oneDatabase, signedInUser, type TestApp } from '../test/harness.js';
import { rawRequest } from '../test/raw-http.js';
import { isValidHost } from './public-origin.js';

const SAME_ORIGIN = { 'sec-fetch-site': 'same-origin' };
const BAD_HOST = 'The Host header is not a valid host name.';

describe('isValidHost', () => {
  it.each([
    'sideport.example',
    'sideport.example:8443',
    'localhost',
    'localhost:8080',
    '127.0.0.1:8080',
    '[::1]',
    '[::1]:8080',
    '[2001:db8::7]:443',
    'sideport_app:8080',
    'xn--bcher-kva.example',
    'sideport.example.',
  ])('takes %s', (host) => {
    expect(isValidHost(host)).toBe(true);
  });

  it.each([
    '',
    'bad host',
    'sideport.example/path',
    'user@sideport.example',
    'sideport.example:0',
    'sideport.example:65536',
    'sideport.example:',
    '[::1',
    '[::g]',
    '::1',
    '-',
    'a..b',
    '.sideport.example',
    `${'a'.repeat(64)}.example`,
    `${'a.'.repeat(127)}ab`,
    'sideport.example\\evil',
  ])('refuses %j', (host) => {
    expect(isValidHost(host)).toBe(false);
  });
});

describe.each([oneDatabase])('links made from the request on %s', (kind) => {
  let t: TestApp;
  let port: number;
  let cookie: string;
  beforeAll(async () => {
    t = await createTestApp(kind);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
    cookie = await signedInUser(t, `origin_${kind}`);
  });
  afterAll(() => t.close());

  /** A device's signed answer to a fresh enrollment profile of the user, and the path it posts to. */
  async function deviceAnswer() {
    const profile = await t.app.inject({ url: '/api/udid/profile', headers: { cookie, ...SAME_ORIGIN } });
    expect(profile.statusCode).toBe(200);
    const answer = createSimulatedDevice().answer(profile.rawPayload);
    return { path: new URL(answer.url).pathname, body: answer.body };
  }

  it("refuses a device's answer with a malformed Host and adds no device", async () => {
    const { path, body } = await deviceAnswer();
    const before = await snapshotDatabase(t.database.db);
    const res = await t.app.inject({
      method: 'POST',
      url: path,
      headers: { host: 'bad host', 'content-type': 'application/pkcs7-signature' },
      payload: body,
    });
    expect(res.statusCode).toBe(400);
    expect(res.body).toBe(BAD_HOST);
    expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
    expect(await deviceInfo(t, cookie)).toEqual([]);
  });

  it("refuses a device's answer that names no host (HTTP/1.0) before adding the device", async () => {
    const { path, body } = await deviceAnswer();
    const before = await snapshotDatabase(t.database.db);
    const head =
      `POST ${path} HTTP/1.0\r\nContent-Type: application/pkcs7-signature\r\n` +
      `Content-Length: ${body.length}\r\n\r\n`;
    const res = await rawRequest(port, Buffer.concat([Buffer.from(head), body]));
    expect(res.status).toBe(400);
    expect(res.body).toBe('Send a Host header naming this site.');
    expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
  });

  it('refuses a checkout asked for with no host (HTTP/1.0) and makes none', async () => {
    const before = await snapshotDatabase(t.database.db);
    const res = await rawRequest(
      port,
      `GET /api/pay/service/0 HTTP/1.0\r\nCookie: ${cookie}\r\nSec-Fetch-Site: same-origin\r\n\r\n`,
    );
    expect(res.status).toBe(400);
    expect(res.body).toBe('Send a Host header naming this site.');
    expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
  });

  it('makes links with the Host the request names when it is well formed', async () => {
    const res = await t.app.inject({
      url: '/api/pay/service/0',
      headers: { cookie, ...SAME_ORIGIN, host: 'sideport.lan:8443' },
    });
    expect(res.statusCode).toBe(200);
    expect((res.json() as { url: string }).url).toMatch(
      /^http:\/\/sideport\.lan:8443\/billing\/dev-checkout\//,
    );
  });
});

describe.each([oneDatabase])('behind a trusted proxy, no PUBLIC_URL, on %s', (kind) => {
  let t: TestApp;
  let cookie: string;
  beforeAll(async () => {
    t = await createTestApp(kind, { env: { TRUST_PROXY: 'true' } });
    cookie = await signedInUser(t, `proxied_${kind}`);
  });
  afterAll(() => t.close());

  const profile = (headers: Record<string, string>) =>
    t.app.inject({ url: '/api/udid/profile', headers: { cookie, ...SAME_ORIGIN, ...headers } });

  it('refuses a malformed X-Forwarded-Host and issues no profile', async () => {
    const before = await snapshotDatabase(t.database.db);
    const res = await profile({ 'x-forwarded-host': 'evil.example/x' });
    expect(res.statusCode).toBe(400);
    expect(res.body).toBe(BAD_HOST);
    expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
  });

  it('refuses an X-Forwarded-Proto other than http or https and issues no profile', async () => {
    const before = await snapshotDatabase(t.database.db);
    const res = await profile({ 'x-forwarded-proto': 'javascript' });
    expect(res.statusCode).toBe(400);
    expect(res.body).toBe('The X-Forwarded-Proto header is neither http nor https.');
    expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
  });

  it("names the proxy's host and scheme in the profile's enrollment URL", async () => {
    const res = await profile({ 'x-forwarded-host': 'sideport.example', 'x-forwarded-proto': 'https' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('https://sideport.example/api/udid/enroll/');
  });
});
