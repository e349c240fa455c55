import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { openZip, parseProfile, sign } from '@sideport/ipa';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startAscServer, type AscServer, type AscServerOptions } from '../../test/asc-server.js';
import { fixtureIpa, fixturesDir } from '../../test/fixtures.js';
import { createAscClient } from './asc-client.js';
import { isAscError, type AscError } from './asc-errors.js';
import {
  parseBundleIdResponse,
  parseBundleIdsResponse,
  parseCertificatesResponse,
  parseDeviceResponse,
  parseDevicesResponse,
  parseProfilesResponse,
} from './asc-resources.js';
import type { AscClientOptions, AscKey } from './asc-transport.js';

const newP8 = () =>
  generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
const KEY: AscKey = {
  keyId: 'ABC123DEFG',
  issuerId: '57246542-96fe-1a63-e053-0824d011072a',
  privateKeyPem: newP8(),
};
const IPHONE = '00008120-001A2B3C4D5E6F70';
const IPAD = '00008103-000C35A12345678E';
const OLD_IPHONE = 'b1946ac92492d2347c6235b4d2611184a1e4ffc2';

let now: Date;
let server: AscServer;
let running = false;
const clock = () => now;
async function start(options: Partial<AscServerOptions> = {}) {
  server = await startAscServer({
    keyId: KEY.keyId,
    issuerId: KEY.issuerId,
    keyPem: KEY.privateKeyPem,
    clock,
    ...options,
  });
  running = true;
  return server;
}
const client = (options: Partial<AscClientOptions> = {}) =>
  createAscClient({ key: KEY, baseUrl: server.url, clock, ...options });

async function failure(promise: Promise<unknown>): Promise<AscError> {
  try {
    await promise;
  } catch (err) {
    if (!isAscError(err)) throw err;
    return err;
  }
  throw new Error('the call succeeded');
}

/** Nothing secret may reach the admin console: not the key, not a token. */
function expectNoSecrets(err: AscError) {
  const keyBody = KEY.privateKeyPem.split('\n')[1]!;
  for (const text of [err.message, JSON.stringify(err.apple ?? {})]) {
    expect(text).not.toContain(keyBody);
    expect(text).not.toMatch(/eyJ[\w-]+\./);
  }
}

beforeEach(() => {
  now = new Date('2026-05-01T12:00:00Z');
});
afterEach(async () => {
  if (!running) return;
  running = false;
  // Every request the client made is one Apple's OpenAPI document allows.
  expect(server.violations).toEqual([]);
  await server.close();
});

describe('the token', () => {
  it('is an ES256 JWT for App Store Connect, reused until near its expiry, then renewed', async () => {
    await start();
    const asc = client();
    await asc.listDevices();
    await asc.listDevices();
    const [first, second] = server.requests.map((r) => r.token!);
    expect(second).toBe(first);
    expect(decodeProtectedHeader(first!)).toEqual({ alg: 'ES256', kid: KEY.keyId, typ: 'JWT' });
    const claims = decodeJwt(first!);
    expect(claims).toEqual({
      iss: KEY.issuerId,
      aud: 'appstoreconnect-v1',
      iat: now.getTime() / 1000,
      exp: now.getTime() / 1000 + 15 * 60,
    });

    now = new Date(now.getTime() + 14.5 * 60_000); // within a minute of expiry
    await asc.listDevices();
    const third = server.requests[2]!.token!;
    expect(third).not.toBe(first);
    expect(decodeJwt(third).iat).toBe(now.getTime() / 1000);
    expect(server.authFailures).toEqual([]);
  });

  it('never lives longer than Apple’s 20 minutes', async () => {
    await start();
    await client({ tokenLifetimeSeconds: 3600 }).listDevices();
    const claims = decodeJwt(server.requests[0]!.token!);
    expect(claims.exp! - claims.iat!).toBe(20 * 60);
  });
});

describe('devices', () => {
  it('registers a new device', async () => {
    await start();
    const result = await client().registerDevice({ name: 'Ana iPhone', udid: IPHONE, platform: 'IOS' });
    expect(result.outcome).toBe('created');
    expect(result.device).toMatchObject({
      name: 'Ana iPhone',
      udid: IPHONE,
      platform: 'IOS',
      status: 'ENABLED',
    });
    expect(server.devices.map((d) => [d.id, d.udid])).toEqual([[result.device.id, IPHONE]]);
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /v1/devices',
      'POST /v1/devices',
    ]);
    expect(server.requests[0]!.query).toMatchObject({ 'filter[udid]': IPHONE });
  });

  it('reuses a device Apple already has, without registering it twice', async () => {
    await start();
    const known = server.addDevice({ udid: IPHONE, name: 'Registered by hand' });
    const result = await client().registerDevice({ name: 'Ana iPhone', udid: IPHONE, platform: 'IOS' });
    expect(result).toMatchObject({ outcome: 'found', device: { id: known.id, name: 'Registered by hand' } });
    expect(server.devices).toHaveLength(1);
    expect(server.requests.map((r) => r.method)).toEqual(['GET']);
  });

  it('enables a device Apple has but disabled', async () => {
    await start();
    const known = server.addDevice({ udid: IPHONE, status: 'DISABLED' });
    const result = await client().registerDevice({ name: 'Ana iPhone', udid: IPHONE, platform: 'IOS' });
    expect(result).toMatchObject({ outcome: 'enabled', device: { id: known.id, status: 'ENABLED' } });
    expect(server.devices[0]!.status).toBe('ENABLED');
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /v1/devices',
      `PATCH /v1/devices/${known.id}`,
    ]);
  });

  it('finds a device Apple stored in other letter case through Apple’s duplicate error', async () => {
    await start();
    const known = server.addDevice({ udid: OLD_IPHONE });
    const result = await client().registerDevice({
      name: 'Old iPhone',
      udid: OLD_IPHONE.toUpperCase(),
      platform: 'IOS',
    });
    expect(result).toMatchObject({ outcome: 'found', device: { id: known.id } });
    expect(server.devices).toHaveLength(1);
    expect(server.requests.map((r) => r.method)).toEqual(['GET', 'POST', 'GET']);
  });

  it('registers a Mac', async () => {
    await start();
    const mac = '78897E40-F532-5DE0-A7DC-56BAC5CEEB9C';
    const result = await client().registerDevice({ name: 'Studio', udid: mac, platform: 'MAC_OS' });
    expect(result.device).toMatchObject({ udid: mac, platform: 'MAC_OS' });
  });

  it('lists every device, following links.next page by page', async () => {
    await start({ maxPageSize: 2 });
    for (let i = 0; i < 5; i++)
      server.addDevice({ udid: `00008120-00000000000000${String(i).padStart(2, '0')}` });
    const listed = await client().listDevices();
    expect(listed.map((d) => d.udid)).toEqual(server.devices.map((d) => d.udid));
    expect(server.requests).toHaveLength(3);
    expect(server.requests[0]!.query).toEqual({ limit: '200' });
    expect(server.requests[1]!.query).toHaveProperty('cursor');
  });

  it('filters by platform and status', async () => {
    await start();
    server.addDevice({ udid: IPHONE });
    server.addDevice({ udid: IPAD, status: 'DISABLED' });
    const enabled = await client().listDevices({ platform: 'IOS', status: 'ENABLED' });
    expect(enabled.map((d) => d.udid)).toEqual([IPHONE]);
    expect(server.requests[0]!.query).toEqual({
      'filter[platform]': 'IOS',
      'filter[status]': 'ENABLED',
      limit: '200',
    });
  });

  it('stops following a next link that leads to another host', async () => {
    await start();
    const answers = [
      {
        data: [],
        links: { self: `${server.url}/v1/devices`, next: 'https://elsewhere.example/v1/devices?cursor=Mg' },
      },
    ];
    const fetchImpl: typeof fetch = async () =>
      new Response(JSON.stringify(answers.shift()), { status: 200 });
    const err = await failure(client({ fetchImpl }).listDevices());
    expect(err.kind).toBe('OTHER');
    expect(err.message).toBe(
      'App Store Connect linked to another host (https://elsewhere.example); Sideport follows links to ' +
        new URL(server.url).origin +
        ' only.',
    );
  });
});

describe('bundle id', () => {
  it('is created once and its id reused', async () => {
    await start();
    const asc = client();
    const id = await asc.ensureBundleId({ identifier: '*', name: 'Sideport Wildcard' });
    expect(await asc.ensureBundleId({ identifier: '*', name: 'Sideport Wildcard' })).toBe(id);
    expect(server.bundleIds).toEqual([
      expect.objectContaining({ id, identifier: '*', name: 'Sideport Wildcard', platform: 'IOS' }),
    ]);
    expect(server.requests.map((r) => r.method)).toEqual(['GET', 'POST']);
    // Another process (a new client) finds it instead of creating another.
    expect(await client().ensureBundleId({ identifier: '*', name: 'Sideport Wildcard' })).toBe(id);
    expect(server.bundleIds).toHaveLength(1);
  });

  it('is not mistaken for a longer identifier Apple’s filter also returns', async () => {
    await start();
    const asc = client();
    const tools = await asc.ensureBundleId({ identifier: 'app.sideport.tools', name: 'Tools' });
    const wildcard = await asc.ensureBundleId({ identifier: 'app.sideport', name: 'Sideport' });
    expect(wildcard).not.toBe(tools);
    expect(server.bundleIds.map((b) => b.identifier)).toEqual(['app.sideport.tools', 'app.sideport']);
  });

  it('is asked for again after a failure', async () => {
    await start();
    const asc = client();
    server.failNext('UNAVAILABLE');
    expect((await failure(asc.ensureBundleId({ identifier: '*', name: 'Sideport Wildcard' }))).kind).toBe(
      'UNAVAILABLE',
    );
    expect(await asc.ensureBundleId({ identifier: '*', name: 'Sideport Wildcard' })).toBe(
      server.bundleIds[0]!.id,
    );
  });
});

describe('certificates and ad-hoc profiles', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'sideport-asc-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('make a profile that signs the fixture IPA for the registered devices', async () => {
    await start();
    const asc = client();
    const devices = [
      await asc.registerDevice({ name: 'Ana iPhone', udid: IPHONE, platform: 'IOS' }),
      await asc.registerDevice({ name: 'Ana iPad', udid: IPAD, platform: 'IOS' }),
    ];
    const bundleIdId = await asc.ensureBundleId({ identifier: '*', name: 'Sideport Wildcard' });
    const created = await asc.createDistributionCertificate();
    expect(created.certificate).toMatchObject({
      certificateType: 'DISTRIBUTION',
      name: `Apple Distribution: Sideport Test Team (${server.teamId})`,
    });
    expect(created.privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(
      (server.requests.at(-1)!.body as { data: { attributes: { csrContent: string } } }).data.attributes
        .csrContent,
    ).toMatch(/^-----BEGIN CERTIFICATE REQUEST-----/);

    const profile = await asc.createAdHocProfile({
      name: 'Sideport user 42',
      bundleIdId,
      certificateIds: [created.certificate.id],
      deviceIds: devices.map((d) => d.device.id),
    });
    expect(profile).toMatchObject({
      name: 'Sideport user 42',
      profileType: 'IOS_APP_ADHOC',
      profileState: 'ACTIVE',
    });
    const parsed = parseProfile(profile.content);
    expect(parsed).toMatchObject({
      name: 'Sideport user 42',
      uuid: profile.uuid,
      teamId: server.teamId,
      applicationIdentifier: `${server.teamId}.*`,
    });
    expect(parsed.provisionedDevices).toEqual([IPHONE, IPAD]);
    expect(parsed.expirationDate).toEqual(profile.expirationDate);

    const output = path.join(dir, 'signed.ipa');
    await sign({
      input: fixtureIpa,
      output,
      identity: {
        certPem: created.certificatePem,
        keyPem: created.privateKeyPem,
        chain: [Buffer.from(server.caPem), Buffer.from(server.rootPem)],
      },
      profile: profile.content,
    });
    const archive = await openZip(output);
    try {
      const embedded = parseProfile(
        await archive.readEntry(
          archive.find('Payload/very-capable-app.app/embedded.mobileprovision')!,
          1 << 20,
        ),
      );
      expect(embedded.provisionedDevices).toEqual([IPHONE, IPAD]);
    } finally {
      await archive.close();
    }
  });

  it('lists certificates by type', async () => {
    await start();
    const asc = client();
    const created = await asc.createDistributionCertificate({
      certificateType: 'IOS_DISTRIBUTION',
      commonName: 'Sideport',
    });
    expect((await asc.listCertificates({ certificateType: 'IOS_DISTRIBUTION' })).map((c) => c.id)).toEqual([
      created.certificate.id,
    ]);
    expect(await asc.listCertificates({ certificateType: 'DISTRIBUTION' })).toEqual([]);
    const [listed] = await asc.listCertificates();
    expect(listed!.content!.equals(server.certificates[0]!.der)).toBe(true);
  });

  it('deletes a profile, and deleting it again succeeds', async () => {
    await start();
    const asc = client();
    const device = await asc.registerDevice({ name: 'Ana iPhone', udid: IPHONE, platform: 'IOS' });
    const bundleIdId = await asc.ensureBundleId({ identifier: '*', name: 'Sideport Wildcard' });
    const { certificate } = await asc.createDistributionCertificate();
    const profile = await asc.createAdHocProfile({
      name: 'Old',
      bundleIdId,
      certificateIds: [certificate.id],
      deviceIds: [device.device.id],
    });
    expect((await asc.listProfiles({ name: 'Old' })).map((p) => p.id)).toEqual([profile.id]);
    await asc.deleteProfile(profile.id);
    expect(server.profiles).toEqual([]);
    await asc.deleteProfile(profile.id);
    expect(await asc.listProfiles()).toEqual([]);
  });

  it('passes on Apple’s refusal of a profile without devices', async () => {
    await start();
    const asc = client();
    const bundleIdId = await asc.ensureBundleId({ identifier: '*', name: 'Sideport Wildcard' });
    const { certificate } = await asc.createDistributionCertificate();
    const err = await failure(
      asc.createAdHocProfile({ name: 'Empty', bundleIdId, certificateIds: [certificate.id], deviceIds: [] }),
    );
    expect(err.kind).toBe('OTHER');
    expect(err.message).toBe(
      'App Store Connect refused the request (HTTP 409, ENTITY_ERROR.RELATIONSHIP.INVALID; Apple said: "The provided entity includes a relationship with an invalid value - There are no current ios devices on this team matching the provided device IDs.").',
    );
  });
});

describe('Apple’s errors', () => {
  it('device limit reached', async () => {
    await start({ deviceLimit: 1 });
    const asc = client();
    await asc.registerDevice({ name: 'First', udid: IPHONE, platform: 'IOS' });
    const err = await failure(asc.registerDevice({ name: 'Second', udid: IPAD, platform: 'IOS' }));
    expect(err).toMatchObject({
      kind: 'DEVICE_LIMIT',
      code: 'ASC_DEVICE_LIMIT',
      status: 502,
      apple: { status: 403, code: 'FORBIDDEN_ERROR' },
    });
    expect(err.message).toBe(
      'The Apple developer account has reached its device limit for this membership year (Apple said: "This request is forbidden for security reasons - Your development team has reached the maximum number of registered iPhone devices."). Removed devices still count until the membership renews; register the device then, or on another account.',
    );
    expectNoSecrets(err);
    expect(server.devices).toHaveLength(1);
  });

  it('device limit of a family Apple names in two words, counted apart from the others', async () => {
    await start({ deviceLimit: 1 });
    server.setDeviceClass(IPAD, 'APPLE_TV');
    server.setDeviceClass(OLD_IPHONE, 'APPLE_TV');
    const asc = client();
    await asc.registerDevice({ name: 'Phone', udid: IPHONE, platform: 'IOS' });
    await asc.registerDevice({ name: 'Living room', udid: IPAD, platform: 'IOS' });
    const err = await failure(asc.registerDevice({ name: 'Bedroom', udid: OLD_IPHONE, platform: 'IOS' }));
    expect(err).toMatchObject({ kind: 'DEVICE_LIMIT', apple: { status: 403 } });
    expect(err.message).toMatch(
      /maximum number of registered Apple TV devices\."\)\. Removed devices still count/,
    );
    expect(server.devices.map((d) => d.deviceClass)).toEqual(['IPHONE', 'APPLE_TV']);
  });

  it('invalid UDID', async () => {
    await start();
    const err = await failure(client().registerDevice({ name: 'Odd', udid: 'not-a-udid', platform: 'IOS' }));
    expect(err).toMatchObject({
      kind: 'INVALID_UDID',
      apple: { status: 409, code: 'ENTITY_ERROR.ATTRIBUTE.INVALID' },
    });
    expect(err.message).toMatch(
      /^Apple refused the device's UDID as invalid \(Apple said: ".*An invalid value 'not-a-udid' was provided for the parameter 'udid'\."\)\./,
    );
    expectNoSecrets(err);
  });

  it('expired token (the server’s clock ahead of ours)', async () => {
    await start({ clock: () => new Date(now.getTime() + 30 * 60_000) });
    const err = await failure(client().listDevices());
    expect(err).toMatchObject({ kind: 'KEY_REJECTED', apple: { status: 401, code: 'NOT_AUTHORIZED' } });
    expect(err.message).toMatch(/^App Store Connect refused API key ABC123DEFG: it is revoked or expired/);
    expect(server.authFailures).toEqual(['"exp" claim timestamp check failed']);
    expectNoSecrets(err);
  });

  it('revoked key', async () => {
    await start();
    server.revokeKey();
    expect((await failure(client().registerDevice({ name: 'x', udid: IPHONE, platform: 'IOS' }))).kind).toBe(
      'KEY_REJECTED',
    );
  });

  it('a key that is not the one App Store Connect knows', async () => {
    await start();
    const err = await failure(
      createAscClient({ key: { ...KEY, privateKeyPem: newP8() }, baseUrl: server.url, clock }).listDevices(),
    );
    expect(err.kind).toBe('KEY_REJECTED');
    expect(server.authFailures).toEqual(['signature verification failed']);
  });

  it('a key without the rights', async () => {
    await start();
    server.failNext('KEY_FORBIDDEN');
    const err = await failure(client().listCertificates());
    expect(err).toMatchObject({ kind: 'KEY_REJECTED', apple: { status: 403 } });
    expect(err.message).toBe(
      'App Store Connect does not let API key ABC123DEFG do this (Apple said: "This request is forbidden for security reasons - The API key in use does not allow this request"). Give the key the Admin role in App Store Connect (Users and Access > Integrations).',
    );
  });

  it('a private key that is no .p8, refused before any request', async () => {
    await start();
    const err = await failure(
      createAscClient({ key: { ...KEY, privateKeyPem: 'not a key' }, baseUrl: server.url }).listDevices(),
    );
    expect(err.kind).toBe('KEY_REJECTED');
    expect(err.message).toBe(
      'ASC_PRIVATE_KEY is not an App Store Connect key: expected the AuthKey .p8 file (a PEM "PRIVATE KEY" on the P-256 curve).',
    );
    expect(server.requests).toEqual([]);
  });

  it('a key pasted with literal \\n line breaks still works', async () => {
    await start();
    await createAscClient({
      key: { ...KEY, privateKeyPem: KEY.privateKeyPem.replace(/\n/g, '\\n') },
      baseUrl: server.url,
      clock,
    }).listDevices();
    expect(server.authFailures).toEqual([]);
  });

  it('unavailable', async () => {
    await start();
    server.failNext('UNAVAILABLE');
    const err = await failure(client().listDevices());
    expect(err).toMatchObject({ kind: 'UNAVAILABLE', status: 503 });
    expect(err.message).toMatch(/^App Store Connect is unavailable right now \(HTTP 503/);
  });

  it('no answer within the timeout', async () => {
    await start();
    server.failNext('HANG');
    const err = await failure(client({ timeoutMs: 200 }).listDevices());
    expect(err).toMatchObject({ kind: 'UNAVAILABLE' });
    expect(err.message).toBe(
      'App Store Connect did not answer within 200 ms (GET /v1/devices). Please retry later.',
    );
  });

  it('unreachable', async () => {
    await start();
    const closedPort = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const err = await failure(client({ baseUrl: `http://127.0.0.1:${closedPort}` }).listDevices());
    expect(err.kind).toBe('UNAVAILABLE');
    expect(err.message).toBe(
      `App Store Connect could not be reached at http://127.0.0.1:${closedPort} (GET /v1/devices). Please retry later.`,
    );
  });
});

describe('the recorded answers (fastlane’s) parse', () => {
  const fixture = (name: string): unknown =>
    JSON.parse(readFileSync(path.join(fixturesDir, 'appstoreconnect', name), 'utf8'));

  it('devices', () => {
    const page = parseDevicesResponse(fixture('fastlane_asc_devices.json'));
    expect(page.next).toBeUndefined();
    expect(page.data.map((d) => [d.id, d.udid, d.status, d.platform])).toEqual([
      ['123456789', '184098239048390489012849018', 'ENABLED', 'IOS'],
      ['13371337', '5233342324433534345354534', 'DISABLED', 'IOS'],
      ['987654321', '5843758273957239847298374982', 'ENABLED', 'IOS'],
    ]);
    expect(page.data[0]).toMatchObject({
      name: "Josh's iPhone",
      deviceClass: 'IPHONE',
      model: 'iPhone 8',
      addedDate: new Date('2018-10-10T01:43:27Z'),
    });
  });

  it('one device enabled, disabled, renamed', () => {
    expect(parseDeviceResponse(fixture('fastlane_asc_device_enable.json'))).toMatchObject({
      id: '13371337',
      status: 'ENABLED',
    });
    expect(parseDeviceResponse(fixture('fastlane_asc_device_disable.json'))).toMatchObject({
      id: '123456789',
      status: 'DISABLED',
    });
    expect(parseDeviceResponse(fixture('fastlane_asc_device_rename.json'))).toMatchObject({
      name: 'renamed device',
      deviceClass: 'APPLE_TV',
    });
  });

  it('profiles', () => {
    const page = parseProfilesResponse(fixture('fastlane_asc_profiles.json'));
    expect(page.data.map((p) => [p.id, p.uuid, p.profileType, p.profileState])).toEqual([
      ['123456789', '7ecd2cf1-3eb1-48b5-94e3-eb60eeaf5ad6', 'IOS_APP_STORE', 'ACTIVE'],
      ['34Y84C7ZQX', '4634f1d2-af15-4ad7-8682-dc3d01a36526', 'IOS_APP_STORE', expect.any(String)],
    ]);
    expect(page.data[0]!.expirationDate).toEqual(new Date('2020-05-01T15:18:38Z'));
    expect(page.data[0]!.content).toBeInstanceOf(Buffer);
  });

  it('certificates', () => {
    const page = parseCertificatesResponse(fixture('fastlane_asc_certificates.json'));
    expect(page.data.map((c) => c.certificateType)).toEqual([
      'IOS_DEVELOPMENT',
      'IOS_DISTRIBUTION',
      'IOS_DEVELOPMENT',
      'IOS_DISTRIBUTION',
      'DEVELOPER_ID_APPLICATION_G2',
    ]);
    expect(page.data[1]).toMatchObject({
      id: '987654321',
      name: 'iOS Distribution: Josh Holtz',
      serialNumber: '5CF4E617EE678ABF',
    });
  });

  it('bundle ids', () => {
    expect(
      parseBundleIdsResponse(fixture('fastlane_asc_bundle_ids.json')).data.map((b) => b.identifier),
    ).toEqual(['com.joshholtz.FastlaneApp', 'com.joshholtz.circle.Example']);
    expect(parseBundleIdResponse(fixture('fastlane_asc_bundle_id.json'))).toMatchObject({
      id: '123456789',
      identifier: 'com.joshholtz.circle.Example',
      seedId: '972KS36P2U',
    });
  });

  it('and an answer of another shape is refused with a sentence', () => {
    expect(() =>
      parseDevicesResponse({ data: [{ type: 'devices', id: '1', attributes: { name: 'x' } }] }),
    ).toThrow(
      /^App Store Connect answered in a shape Sideport does not read \(at data\.0\.attributes\.udid\)\.$/,
    );
  });
});
