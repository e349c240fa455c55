import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SignEvent } from '@sideport/contracts';
import { check, parsePlist, parseProfile, type PlistObject } from '@sideport/ipa';
import { buildDylib, objdumpHeaders } from '@sideport/ipa/test-support/toolchain';
import {
  opensslVerifies,
  pageHashesMatch,
  readSignatures,
} from '@sideport/ipa/test-support/verify-signature';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { buildIpa, storeApp, storeWith } from '../../test/decrypt-support.js';
import { createTestApp, databaseKinds, signedInUser, WEB_CLIENT, type TestApp } from '../../test/harness.js';
import { and, eq } from 'drizzle-orm';
import * as schema from '../../db/schema/index.js';
import { until } from '../../test/agent-process.js';
import { deviceInfo, enrollDevice, payForDevice } from '../../test/device-flow.js';
import { missingTools } from '@sideport/ipa/test-support/system-tools';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl', 'unzip', 'llvm-objdump');

const APP_ID = 6100;
const APP_VER_ID = 861000001;
const BUNDLE_ID = 'com.example.signme';
const APP_NAME = `App ${APP_ID}`;
const UDID_A = '00008110-000A1B2C3D4E5F60';
const UDID_B = '00008120-001122334455667A';
const MODES = [0, 1, 2, 3, 4] as const;
const PUBLIC_URL = 'https://sideport.example';
const VERSION = { appId: APP_ID, appVerId: APP_VER_ID };
/** A second app's version, for the test that removes one. */
const OTHER_VERSION = { appId: APP_ID + 1, appVerId: 861000002 };

interface User {
  id: string;
  cookie: string;
}

const work = mkdtempSync(path.join(tmpdir(), 'sideport-sign-test-'));
// The operator's dylibs, built as packages/ipa's tests build them.
const iapDylib = path.join(work, 'libiap.dylib');
const iggDylib = path.join(work, 'libigg.dylib');
writeFileSync(
  iapDylib,
  readFileSync(buildDylib(work, 'iap', 'int iap(void) { return 1; }\n', '@rpath/libiap.dylib')),
);
writeFileSync(
  iggDylib,
  readFileSync(buildDylib(work, 'igg', 'int igg(void) { return 2; }\n', '@rpath/libigg.dylib')),
);
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The path and query of an absolute URL the server made, for inject. */
const local = (url: string) => {
  const u = new URL(url);
  expect(u.origin).toBe(PUBLIC_URL);
  return `${u.pathname}${u.search}`;
};

/** The same link with one character of its signature changed. */
const tamperSignature = (url: string) =>
  url.replace(/sig=([0-9a-f])/, (_, c: string) => `sig=${c === '0' ? '1' : '0'}`);

/** The manifest URL inside an itms-services link. */
function manifestUrlOf(link: string) {
  const match = /^itms-services:\/\/\?action=download-manifest&url=(.+)$/.exec(link);
  expect(match, link).not.toBeNull();
  return decodeURIComponent(match![1]!);
}

/** An IPA unzipped into a fresh folder: its app folder and every Mach-O's path. */
async function unpack(ipa: Buffer, name: string) {
  const file = path.join(work, `${name}.ipa`);
  writeFileSync(file, ipa);
  const report = await check(file);
  const dir = path.join(work, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  execFileSync('unzip', ['-q', file, '-d', dir]);
  const appDir = path.join(dir, path.dirname(report.machOs[0]!.path));
  return { report, dir, appDir, machOs: report.machOs.map((m) => path.join(dir, m.path)) };
}

/** Every slice of every Mach-O carries a signature whose pages match and whose CMS openssl verifies. */
function expectEverySignatureVerifies(machOs: string[], caPem: string) {
  expect(machOs.length).toBeGreaterThan(0);
  for (const file of machOs) {
    const bytes = readFileSync(file);
    for (const signature of readSignatures(bytes)) {
      expect(pageHashesMatch(bytes, signature), file).toBe(true);
      expect(opensslVerifies(signature, caPem).ok, file).toBe(true);
    }
  }
}

describe.skipIf(skip).each(databaseKinds)('sign service on %s', (kind) => {
  let store: ItunesServer;
  let t: TestApp;
  let now = Date.now();
  /**
   * alice has one Registered device (UDID_A) and the version signed in all five modes, made once in
   * beforeAll; the tests only read what she has. A test that changes a user's devices or signs, or
   * removes a version, makes a user (and a version) of its own.
   */
  let alice: User;
  let bob: User;
  let caPem: string;
  /** What alice's five sign requests answered and the sign events they made. */
  let aliceSigns: { answers: Array<[number, unknown]>; events: SignEvent[] };
  /** Every user's sign events, as each owner's live stream gets them. */
  const events = new Map<string, SignEvent[]>();
  const eventsOf = (userId: string) => {
    if (!events.has(userId)) events.set(userId, []);
    return events.get(userId)!;
  };
  let seq = 0;
  async function newUser(name: string): Promise<User> {
    const id = `${name}_${kind}_${++seq}`;
    return { id, cookie: await signedInUser(t, id) };
  }

  const get = (url: string, cookie?: string) =>
    t.app.inject({ url, headers: cookie ? { cookie, ...WEB_CLIENT } : {} });
  const put = (url: string, payload: unknown, cookie: string) =>
    t.app.inject({ method: 'PUT', url, payload: payload as object, headers: { cookie, ...WEB_CLIENT } });
  const requestSign = (type: number, cookie = alice.cookie, version = VERSION) =>
    put(`/api/sign/${version.appId}/${version.appVerId}`, { type }, cookie);

  /** Resolves when `userId`'s sign of the version in `type` reaches `status`, as the owner's live events tell it. */
  function reached(userId: string, type: number, status: SignEvent['status'], from = 0) {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `sign ${type} did not reach ${status}: ${JSON.stringify(eventsOf(userId).slice(from))}`,
            ),
          ),
        60_000,
      );
      const poll = setInterval(() => {
        if (
          eventsOf(userId)
            .slice(from)
            .some((e) => e.sign_type === type && e.status === status)
        ) {
          clearInterval(poll);
          clearTimeout(timer);
          resolve();
        }
      }, 20);
    });
  }

  /** The user's way to a Registered device: enrolled as a device answers, paid in test mode, registered by the dev identity. */
  async function registerDevice(user: User, udid: string, product: string) {
    await enrollDevice(t, user.cookie, { UDID: udid, PRODUCT: product });
    const index = (await deviceInfo(t, user.cookie)).findIndex((d) => d.UDID === udid);
    await payForDevice(t, user.cookie, index);
    // until, not expect.poll: beforeAll registers alice's device too.
    await until(`${udid} to be Registered`, async () =>
      (await deviceInfo(t, user.cookie))[index]?.status === 'Registered' ? true : undefined,
    );
  }

  /** Requests `user`'s signs of `version` in `modes` and waits until each is Done; returns each answer. */
  async function signModes(user: User, modes: readonly number[], version = VERSION) {
    const from = eventsOf(user.id).length;
    const answers: Array<[number, unknown]> = [];
    for (const type of modes) {
      const res = await requestSign(type, user.cookie, version);
      answers.push([res.statusCode, res.json()]);
    }
    await Promise.all(modes.map((type) => reached(user.id, type, 'Done', from)));
    return answers;
  }

  async function signedIpa(type: number, cookie = alice.cookie, version = VERSION) {
    const install = await get(`/api/install/${version.appId}/${version.appVerId}/${type}`, cookie);
    expect(install.statusCode, install.body).toBe(200);
    const manifestUrl = manifestUrlOf((install.json() as { url: string }).url);
    expect(manifestUrl.startsWith(`${PUBLIC_URL}/files/sign/`)).toBe(true);
    // iOS fetches the manifest and the IPA with no cookie.
    const manifest = await get(local(manifestUrl));
    expect(manifest.statusCode, manifest.body).toBe(200);
    expect(manifest.headers['content-type']).toMatch(/^text\/xml/);
    const [item] = (parsePlist(Buffer.from(manifest.body)) as { items: PlistObject[] }).items;
    const asset = (item!.assets as PlistObject[])[0]!;
    expect(asset.kind).toBe('software-package');
    const ipa = await get(local(asset.url as string));
    expect(ipa.statusCode).toBe(200);
    return {
      manifestUrl,
      metadata: item!.metadata as PlistObject,
      ipaUrl: asset.url as string,
      ipa: ipa.rawPayload,
    };
  }

  beforeAll(async () => {
    store = await storeWith([
      storeApp(APP_ID, BUNDLE_ID),
      storeApp(OTHER_VERSION.appId, `${BUNDLE_ID}.other`),
    ]);
    const feather = await buildIpa({
      bundleId: 'kh.crysalis.feather',
      version: '2.0',
      displayName: 'Feather',
    });
    t = await createTestApp(kind, {
      env: {
        ITUNES_BASE_URL: store.url,
        PUBLIC_URL,
        SIGN_DYLIBS_IAP: iapDylib,
        SIGN_DYLIBS_IGG: iggDylib,
        FEATHER_IPA: feather,
        SIGN_IN_LIMIT_PER_ADDRESS: '10000',
      },
      clock: () => new Date(now),
    });
    t.services.bus.subscribe((message) => {
      if (message.kind === 'live' && message.event.type === 'sign' && message.userId !== undefined)
        eventsOf(message.userId).push(message.event);
    });
    alice = { id: `alice_${kind}`, cookie: await signedInUser(t, `alice_${kind}`) };
    bob = { id: `bob_${kind}`, cookie: await signedInUser(t, `bob_${kind}`) };
    const ipa = await buildIpa({ bundleId: BUNDLE_ID, version: '1.0', appVerId: String(APP_VER_ID) });
    await t.services.jobs.importIpa(ipa, { country: 'KR', appId: APP_ID });
    await registerDevice(alice, UDID_A, 'iPhone15,2');
    // The dev identity's CA: what every user's signatures chain to.
    caPem = (await t.services.signing.signingMaterial(alice.id))!.identity.chain![0]!.toString('utf8');
    const answers = await signModes(alice, MODES);
    aliceSigns = { answers, events: [...eventsOf(alice.id)] };
  });
  afterAll(async () => {
    await t?.close();
    await store?.close();
  });

  it("fills the version's digest cache when it becomes Done, for the normal modes and DUP", () => {
    const folder = path.join(
      t.dataDir,
      'sign-cache',
      'versions',
      `${APP_ID}-${APP_VER_ID}`,
      'resource-digests',
    );
    expect(readdirSync(folder).filter((n) => n.endsWith('.json'))).toHaveLength(2);
  });

  it('asks for a Registered device first, and changes nothing', async () => {
    const { cookie } = await newUser('deviceless');
    const res = await requestSign(0, cookie);
    expect(res.statusCode).toBe(403);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toBe('Register a device first on My Page.');
    expect((await get(`/api/check/sign/${APP_ID}/${APP_VER_ID}/0`, cookie)).statusCode).toBe(404);
    const feather = await get('/api/feather/install', cookie);
    expect([feather.statusCode, feather.body]).toEqual([403, 'Register a device first on My Page.']);
  });

  it('signs in each of the five modes once a device is enrolled, paid and Registered: Pending, Process, Done, live', async () => {
    // alice's signs, requested in beforeAll: what each request answered and the events each made.
    expect(aliceSigns.answers).toEqual(
      MODES.map((type) => [
        200,
        { app_id: String(APP_ID), app_ver_id: String(APP_VER_ID), type, status: 'Pending' },
      ]),
    );
    for (const type of MODES) {
      expect(aliceSigns.events.filter((e) => e.sign_type === type).map((e) => e.status)).toEqual([
        'Pending',
        'Process',
        'Done',
      ]);
    }
    const list = await get(`/api/version/KR/${APP_ID}`, alice.cookie);
    expect(list.json()).toEqual([
      expect.objectContaining({
        app_ver_id: String(APP_VER_ID),
        normal_sign: 'Done',
        iap_sign: 'Done',
        igg_sign: 'Done',
        both_sign: 'Done',
        dup_sign: 'Done',
      }),
    ]);
    // Sign statuses are the caller's own.
    expect((await get(`/api/version/KR/${APP_ID}`, bob.cookie)).json()).toEqual([
      expect.objectContaining({ normal_sign: 'No', dup_sign: 'No' }),
    ]);
  });

  it('serves each mode through its manifest: signed for the UDID, every Mach-O verified, the dylibs loaded, DUP renamed', async () => {
    const dupIds: string[] = [];
    for (const type of MODES) {
      const checked = await get(`/api/check/sign/${APP_ID}/${APP_VER_ID}/${type}`, alice.cookie);
      expect(checked.statusCode, checked.body).toBe(200);
      expect(checked.json()).toMatchObject({ status: 'Done', udids: [UDID_A] });
      const { metadata, ipa } = await signedIpa(type);
      const { appDir, machOs, report } = await unpack(ipa, `mode-${type}-${kind}`);
      expect(
        parseProfile(readFileSync(path.join(appDir, 'embedded.mobileprovision'))).provisionedDevices,
      ).toEqual([UDID_A]);
      expectEverySignatureVerifies(machOs, caPem);
      expect(metadata).toEqual({
        'bundle-identifier': report.bundleId,
        'bundle-version': '1.0',
        kind: 'software',
        title: APP_NAME,
      });
      if (type === 4) dupIds.push(report.bundleId);
      else expect(report.bundleId).toBe(BUNDLE_ID);
      const headers = objdumpHeaders(path.join(appDir, report.executable));
      const loads = (name: string) =>
        new RegExp(
          `cmd LC_LOAD_DYLIB[\\s\\S]*?name @executable_path/Frameworks/${name.replace('.', '\\.')}`,
        ).test(headers);
      expect([loads('libiap.dylib'), loads('libigg.dylib')], `mode ${type}`).toEqual([
        type === 1 || type === 3,
        type === 2 || type === 3,
      ]);
    }
    // DUP: a bundle id of its own, stable for this user and app.
    expect(dupIds[0]).not.toBe(BUNDLE_ID);
    expect(dupIds[0]!.startsWith(`${BUNDLE_ID}.dup`)).toBe(true);
  });

  it('answers Done without signing again while the artifact lists every device', async () => {
    const before = await get(`/api/install/${APP_ID}/${APP_VER_ID}/0`, alice.cookie);
    const from = eventsOf(alice.id).length;
    const res = await requestSign(0);
    expect(res.json()).toMatchObject({ status: 'Done' });
    const after = await get(`/api/install/${APP_ID}/${APP_VER_ID}/0`, alice.cookie);
    // The same artifact: its manifest path has not changed.
    expect(new URL(manifestUrlOf(after.json().url)).pathname).toBe(
      new URL(manifestUrlOf(before.json().url)).pathname,
    );
    expect(eventsOf(alice.id).slice(from)).toEqual([]);
  });

  it('answers 406 once a second device is registered, and a new sign lists both', async () => {
    const user = await newUser('resigner');
    await registerDevice(user, UDID_A, 'iPhone15,2');
    await signModes(user, [0, 4]);
    now += 1000;
    await registerDevice(user, UDID_B, 'iPad13,1');
    for (const type of [0, 4]) {
      const stale = await get(`/api/check/sign/${APP_ID}/${APP_VER_ID}/${type}`, user.cookie);
      expect([stale.statusCode, stale.body]).toEqual([
        406,
        'This app was signed before Registered on one of your devices.',
      ]);
    }
    const { ipaUrl: oldIpa } = await signedIpa(4, user.cookie);
    const from = eventsOf(user.id).length;
    expect((await requestSign(4, user.cookie)).json()).toMatchObject({ status: 'Pending' });
    await reached(user.id, 4, 'Done', from);
    const checked = await get(`/api/check/sign/${APP_ID}/${APP_VER_ID}/4`, user.cookie);
    expect(checked.statusCode).toBe(200);
    expect(checked.json()).toMatchObject({ udids: [UDID_A, UDID_B].sort() });
    const { ipa, metadata } = await signedIpa(4, user.cookie);
    const { appDir, machOs, report } = await unpack(ipa, `resigned-${kind}`);
    expect(
      [
        ...parseProfile(readFileSync(path.join(appDir, 'embedded.mobileprovision'))).provisionedDevices,
      ].sort(),
    ).toEqual([UDID_A, UDID_B].sort());
    expectEverySignatureVerifies(machOs, caPem);
    // The same DUP id as before: it is the user's copy of this app.
    expect(metadata['bundle-identifier']).toBe(report.bundleId);
    expect(report.bundleId.startsWith(`${BUNDLE_ID}.dup`)).toBe(true);
    // The replaced artifact is gone; its old links find nothing.
    expect((await get(local(oldIpa))).statusCode).toBe(404);
    // The registration time counts too: a device re-registered after the sign makes it stale again.
    await t.database.db
      .update(schema.devices)
      .set({ registeredAt: new Date(now + 5000) })
      .where(and(eq(schema.devices.userId, user.id), eq(schema.devices.udid, UDID_B)));
    expect((await get(`/api/check/sign/${APP_ID}/${APP_VER_ID}/4`, user.cookie)).statusCode).toBe(406);
  });

  it("keeps a user's artifacts from everyone else, and refuses tampered or expired links", async () => {
    for (const url of [
      `/api/check/sign/${APP_ID}/${APP_VER_ID}/0`,
      `/api/install/${APP_ID}/${APP_VER_ID}/0`,
    ]) {
      const res = await get(url, bob.cookie);
      expect([res.statusCode, res.body]).toEqual([
        404,
        'This app is not signed for your devices yet. Request a sign first.',
      ]);
    }
    const { manifestUrl, ipaUrl } = await signedIpa(0);
    const manifestPath = local(manifestUrl);
    // Another artifact's id under this signature, a changed signature, a changed expiry.
    const otherManifest = local(
      manifestUrlOf((await get(`/api/install/${APP_ID}/${APP_VER_ID}/1`, alice.cookie)).json().url),
    );
    expect((await get(otherManifest)).statusCode).toBe(200);
    const artifactOf = (url: string) => /\/files\/sign\/([^/]+)\//.exec(url)![1]!;
    const [artifact, otherArtifact] = [artifactOf(manifestPath), artifactOf(otherManifest)];
    const tampered = [
      manifestPath.replace(artifact, otherArtifact),
      tamperSignature(manifestPath),
      manifestPath.replace(/expires=(\d+)/, (_, e: string) => `expires=${Number(e) + 1}`),
      local(ipaUrl).replace('/app.ipa', '/manifest.plist'),
      manifestPath.split('?')[0]!,
    ];
    for (const url of tampered) {
      const res = await get(url, alice.cookie);
      expect([res.statusCode, res.body], url).toEqual([
        403,
        'This download link is not valid or has expired. Ask for a new one.',
      ]);
    }
    const saved = now;
    try {
      now += 3600_000;
      for (const url of [manifestPath, local(ipaUrl)]) expect((await get(url)).statusCode).toBe(403);
    } finally {
      now = saved;
    }
  });

  it('refuses bad input with a sentence and changes nothing', async () => {
    const cases: Array<[string, unknown, number, string]> = [
      [
        `/api/sign/${APP_ID}/${APP_VER_ID}`,
        { type: 5 },
        400,
        'type must be 0 normal, 1 IAP, 2 IGG, 3 IAP+IGG or 4 DUP.',
      ],
      [
        `/api/sign/${APP_ID}/${APP_VER_ID}`,
        { type: '0' },
        400,
        'type must be 0 normal, 1 IAP, 2 IGG, 3 IAP+IGG or 4 DUP.',
      ],
      [
        `/api/sign/${APP_ID}/${APP_VER_ID}`,
        [],
        400,
        'Send a JSON object with type: 0 normal, 1 IAP, 2 IGG, 3 IAP+IGG or 4 DUP.',
      ],
      [`/api/sign/${APP_ID}/999`, { type: 0 }, 404, 'This version is not decrypted yet.'],
      [
        `/api/sign/${APP_ID}/x`,
        { type: 0 },
        400,
        'app_ver_id must be a whole number from 0 to 9007199254740991.',
      ],
    ];
    const from = eventsOf(alice.id).length;
    for (const [url, payload, status, body] of cases) {
      const res = await put(url, payload, alice.cookie);
      expect([res.statusCode, res.body], JSON.stringify(payload)).toEqual([status, body]);
    }
    const badType = await get(`/api/check/sign/${APP_ID}/${APP_VER_ID}/9`, alice.cookie);
    expect([badType.statusCode, badType.body]).toEqual([400, 'Sign type must be one of 0, 1, 2, 3, 4.']);
    expect(eventsOf(alice.id).slice(from)).toEqual([]);
  });

  it("signs the operator's Feather for the user's devices, and hands out a certificate with a fresh password", async () => {
    const user = await newUser('featherer');
    await registerDevice(user, UDID_A, 'iPhone15,2');
    await registerDevice(user, UDID_B, 'iPad13,1');
    const res = await get('/api/feather/install', user.cookie);
    expect(res.statusCode, res.body).toBe(200);
    const manifest = await get(local(manifestUrlOf(res.json().url)));
    const [item] = (parsePlist(Buffer.from(manifest.body)) as { items: PlistObject[] }).items;
    expect(item!.metadata).toMatchObject({ 'bundle-identifier': 'kh.crysalis.feather', title: 'Feather' });
    const ipa = await get(local((item!.assets as PlistObject[])[0]!.url as string));
    const { appDir, machOs } = await unpack(ipa.rawPayload, `feather-${kind}`);
    expect(
      [
        ...parseProfile(readFileSync(path.join(appDir, 'embedded.mobileprovision'))).provisionedDevices,
      ].sort(),
    ).toEqual([UDID_A, UDID_B].sort());
    expectEverySignatureVerifies(machOs, caPem);

    const first = await get('/api/feather/cert', user.cookie);
    const second = await get('/api/feather/cert', user.cookie);
    expect(first.statusCode, first.body).toBe(200);
    const { url, password } = first.json() as { url: string; password: string };
    expect(password).toMatch(/^[A-Za-z0-9]{16}$/);
    expect(second.json().password).not.toBe(password);
    const zip = await get(local(url));
    expect(zip.statusCode).toBe(200);
    expect(zip.headers['content-type']).toBe('application/zip');
    const dir = path.join(work, `cert-${kind}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'cert.zip'), zip.rawPayload);
    execFileSync('unzip', ['-q', '-o', 'cert.zip'], { cwd: dir });
    // A profile of the Feather certificate (not the signing one) for the user's devices.
    const featherProfile = parseProfile(readFileSync(path.join(dir, 'sideport.mobileprovision')));
    expect([...featherProfile.provisionedDevices].sort()).toEqual([UDID_A, UDID_B].sort());
    // openssl opens the .p12 with the password it came with, and with no other.
    const certs = execFileSync(
      'openssl',
      ['pkcs12', '-in', 'sideport.p12', '-nokeys', '-passin', `pass:${password}`],
      { cwd: dir, encoding: 'utf8' },
    );
    expect(certs).toContain('BEGIN CERTIFICATE');
    expect(() =>
      execFileSync(
        'openssl',
        ['pkcs12', '-in', 'sideport.p12', '-nokeys', '-passin', `pass:${second.json().password}`],
        { cwd: dir, stdio: 'pipe' },
      ),
    ).toThrow();
    // The link is the owner's: changed, it is refused.
    expect((await get(tamperSignature(local(url)))).statusCode).toBe(403);
  });

  it("removes a version's signs and their files with the version", async () => {
    const admin = await signedInUser(t, `admin_${kind}`, 1);
    // A version and a signer of its own: the other tests' version stays.
    const ipa = await buildIpa({
      bundleId: `${BUNDLE_ID}.other`,
      version: '1.0',
      appVerId: String(OTHER_VERSION.appVerId),
    });
    await t.services.jobs.importIpa(ipa, { country: 'KR', appId: OTHER_VERSION.appId });
    const user = await newUser('remover');
    await registerDevice(user, UDID_A, 'iPhone15,2');
    await signModes(user, [0], OTHER_VERSION);
    const { manifestUrl } = await signedIpa(0, user.cookie, OTHER_VERSION);
    const cache = path.join(
      t.dataDir,
      'sign-cache',
      'versions',
      `${OTHER_VERSION.appId}-${OTHER_VERSION.appVerId}`,
    );
    expect(existsSync(cache)).toBe(true);
    const rows = await t.database.db
      .select()
      .from(schema.signRequests)
      .where(eq(schema.signRequests.appVerId, OTHER_VERSION.appVerId));
    expect(rows.length).toBeGreaterThan(0);
    const removed = await t.app.inject({
      method: 'DELETE',
      url: `/api/app/${OTHER_VERSION.appId}/${OTHER_VERSION.appVerId}`,
      headers: { cookie: admin, ...WEB_CLIENT },
    });
    expect(removed.statusCode, removed.body).toBe(204);
    expect(
      (await get(`/api/check/sign/${OTHER_VERSION.appId}/${OTHER_VERSION.appVerId}/0`, user.cookie))
        .statusCode,
    ).toBe(404);
    expect((await get(local(manifestUrl))).statusCode).toBe(404);
    for (const row of rows)
      expect(existsSync(path.join(t.dataDir, 'files', row.fileKey!)), row.fileKey!).toBe(false);
    expect(existsSync(cache)).toBe(false);
  });
});

describe.skipIf(skip)('sign service without dylibs or Feather', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp('pglite');
  });
  afterAll(() => t.close());

  it('refuses the injection modes and Feather with a sentence', async () => {
    const cookie = await signedInUser(t, 'plain_user');
    const sign = (type: number) =>
      t.app.inject({
        method: 'PUT',
        url: '/api/sign/1/2',
        payload: { type },
        headers: { cookie, ...WEB_CLIENT },
      });
    expect([(await sign(1)).statusCode, (await sign(1)).body]).toEqual([
      403,
      'IAP signing is not offered on this server.',
    ]);
    expect((await sign(2)).body).toBe('IGG signing is not offered on this server.');
    expect((await sign(3)).body).toBe('IAP + IGG signing is not offered on this server.');
    for (const url of ['/api/feather/install', '/api/feather/cert']) {
      const res = await t.app.inject({ url, headers: { cookie, ...WEB_CLIENT } });
      expect([res.statusCode, res.body]).toEqual([404, 'Feather is not offered on this server.']);
    }
  });
});
