/**
 * Recovery with the Apple identity: the real server against the local App Store Connect (every
 * request held to Apple's OpenAPI document) whose certificates name a real OCSP responder in their
 * AIA, as Apple's name ocsp.apple.com. A certificate Apple revokes is found by preflight, and a new
 * one is made on the same account, with new profiles, without an admin.
 */
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import forge from 'node-forge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry, SignEvent } from '@sideport/contracts';
import { check, codesignOrder, nameOf, parsePlist, parseProfile, type PlistObject } from '@sideport/ipa';
import {
  cmsCertificateNames,
  opensslVerifies,
  readSignatures,
} from '@sideport/ipa/test-support/verify-signature';
import { createCoreServices } from '../../services.js';
import * as schema from '../../db/schema/index.js';
import { loadConfig } from '../../platform/config.js';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { startAscServer, type AscServer } from '../../test/asc-server.js';
import { buildIpa, storeApp, storeWith } from '../../test/decrypt-support.js';
import { createTestApp, databaseKinds, sessionCookie, signedInUser, WEB_CLIENT } from '../../test/harness.js';
import { startOcspResponder, type OcspResponder } from '../../test/ocsp-responder.js';
import * as devices from '../devices/queries.js';
import { createAscClient } from './asc-client.js';
import { certificateFingerprint } from './certificate-details.js';
import { missingTools } from '@sideport/ipa/test-support/system-tools';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl', 'unzip');

const KEY_ID = 'KEY7654321';
const ISSUER_ID = '69a6de70-0000-47e3-e053-5b8c7c11a4d2';
const keyPem = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();
const APP_ID = 6300;
const APP_VER_ID = 863000001;
const BUNDLE_ID = 'com.example.applerecover';
const PUBLIC_URL = 'https://sideport.example';
const PASSWORD = 'a'.repeat(32);
const work = mkdtempSync(path.join(tmpdir(), 'sideport-apple-recovery-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const day = (date: Date) => date.toISOString().slice(0, 10);
const local = (url: string) => `${new URL(url).pathname}${new URL(url).search}`;

describe.skipIf(skip).each(databaseKinds)('recovery with the Apple identity on %s', (kind) => {
  let asc: AscServer;
  let responder: OcspResponder;
  let store: ItunesServer;
  let ipa: string;
  let seq = 0;
  const env = (extra: Record<string, string> = {}) => ({
    ASC_KEY_ID: KEY_ID,
    ASC_ISSUER_ID: ISSUER_ID,
    ASC_PRIVATE_KEY: keyPem,
    ASC_BASE_URL: asc.url,
    ITUNES_BASE_URL: store.url,
    PUBLIC_URL,
    // Asked at every preflight: the responder's index is the truth at once.
    OCSP_CACHE_MINUTES: '0',
    RECOVERY_CHECK_MINUTES: '0',
    REGISTRATION_INTERVAL_SECONDS: '0',
    SIGN_IN_LIMIT_PER_ADDRESS: '10000',
    ...extra,
  });

  beforeAll(async () => {
    asc = await startAscServer({ keyId: KEY_ID, issuerId: ISSUER_ID, keyPem });
    responder = await startOcspResponder({ caPem: asc.caPem, caKeyPem: asc.caKeyPem });
    asc.setOcspResponder(responder.url);
    store = await storeWith([storeApp(APP_ID, BUNDLE_ID)]);
    ipa = await buildIpa({ bundleId: BUNDLE_ID, version: '1.0', appVerId: String(APP_VER_ID) });
  });
  afterAll(async () => {
    await responder?.close();
    await asc?.close();
    await store?.close();
  });

  /** A server, its admin, a user with a Registered device and a Done sign of the version; its live sign events. */
  async function signedServer(extraEnv: Record<string, string> = {}) {
    const t = await createTestApp(kind, { env: env(extraEnv) });
    const events: SignEvent[] = [];
    t.services.bus.subscribe((m) => {
      if (m.kind === 'live' && m.event.type === 'sign') events.push(m.event);
    });
    await t.services.jobs.importIpa(ipa, { country: 'KR', appId: APP_ID });
    const user = `apple_recover_${kind}_${++seq}`;
    const admin = `apple_admin_${kind}_${seq}`;
    await signedInUser(t, user);
    await signedInUser(t, admin, 1);
    await devices.insertDevice(t.database.db, {
      userId: user,
      product: 'iPhone15,2',
      udid: `00008120-20${String(seq).padStart(14, '0')}`,
      status: 'Registered',
    });
    const as = async (id: string) => ({
      cookie: sessionCookie(
        await t.app.inject({ method: 'POST', url: '/api/sign-in', payload: { id, pw: PASSWORD } }),
      ),
      ...WEB_CLIENT,
    });
    const get = async (url: string, id?: string) => t.app.inject({ url, headers: id ? await as(id) : {} });
    const signed = await t.app.inject({
      method: 'PUT',
      url: `/api/sign/${APP_ID}/${APP_VER_ID}`,
      payload: { type: 0 },
      headers: await as(user),
    });
    expect(signed.statusCode, signed.body).toBe(200);
    const doneAfter = async (from: number) =>
      expect
        .poll(() => events.slice(from).some((e) => e.status === 'Done'), { timeout: 120_000, interval: 50 })
        .toBe(true);
    await doneAfter(0);
    return { t, user, admin, events, get, doneAfter };
  }

  /** The certificate that signed the user's artifact now, as its install's embedded profile names it. */
  async function installedCertificate(s: Awaited<ReturnType<typeof signedServer>>) {
    const install = await s.get(`/api/install/${APP_ID}/${APP_VER_ID}/0`, s.user);
    expect(install.statusCode, install.body).toBe(200);
    const manifest = await s.get(
      local(decodeURIComponent(/url=(.+)$/.exec((install.json() as { url: string }).url)![1]!)),
    );
    const [item] = (parsePlist(Buffer.from(manifest.body)) as { items: PlistObject[] }).items;
    const bytes = (await s.get(local((item!.assets as PlistObject[])[0]!.url as string))).rawPayload;
    const dir = mkdtempSync(path.join(work, 'ipa-'));
    writeFileSync(path.join(dir, 'app.ipa'), bytes);
    const report = await check(path.join(dir, 'app.ipa'));
    execFileSync('unzip', ['-q', 'app.ipa', '-d', 'x'], { cwd: dir });
    const appDir = path.join(dir, 'x', path.dirname(report.machOs[0]!.path));
    const profile = parseProfile(readFileSync(path.join(appDir, 'embedded.mobileprovision')));
    // Every Mach-O carries the certificate App Store Connect issued, the test intermediate and its
    // root (found at their CA Issuers addresses), in codesign's order; the root alone verifies it.
    const leaf = new X509Certificate(profile.developerCertificates[0]!.der);
    const expected = codesignOrder([
      leaf.raw,
      new X509Certificate(asc.caPem).raw,
      new X509Certificate(asc.rootPem).raw,
    ]).map((der) => nameOf(new X509Certificate(der)));
    expect([...expected].sort()).toEqual([
      `Apple Distribution: Sideport Test Team (${asc.teamId})`,
      'Test Root CA (not Apple)',
      'Test Worldwide Developer Relations CA (not Apple)',
    ]);
    for (const m of report.machOs) {
      for (const signature of readSignatures(readFileSync(path.join(dir, 'x', m.path)))) {
        expect(cmsCertificateNames(signature), m.path).toEqual(expected);
        const verified = opensslVerifies(signature, asc.rootPem);
        expect(verified.ok, verified.output).toBe(true);
      }
    }
    return profile.developerCertificates.map((c) => c.der);
  }

  it('makes a new certificate on the account when Apple revokes the one it made, with new profiles, and signs again', async () => {
    const s = await signedServer();
    try {
      const [made] = asc.certificates;
      const oldPem = forge.pki.certificateToPem(
        forge.pki.certificateFromAsn1(forge.asn1.fromDer(made!.der.toString('binary'))),
      );
      await responder.setStatus(oldPem, 'good');
      expect((await s.get(`/api/check/sign/${APP_ID}/${APP_VER_ID}/0`, s.user)).statusCode).toBe(200);
      // Asked at the responder its AIA names, about a certificate checked against the issuer its AIA names.
      const [row] = await s.t.database.db
        .select()
        .from(schema.signingCertificates)
        .where(eq(schema.signingCertificates.fingerprint, certificateFingerprint(made!.der)));
      expect(row).toMatchObject({
        identityKind: 'apple',
        ocspStatus: 'good',
        issuerPem: expect.stringContaining('BEGIN CERTIFICATE'),
      });

      const revokedAt = new Date(Date.now() - 3_600_000);
      await responder.setStatus(asc.revokeCertificate(made!.id), 'revoked', revokedAt);
      const from = s.events.length;
      const refused = await s.get(`/api/check/sign/${APP_ID}/${APP_VER_ID}/0`, s.user);
      expect([refused.statusCode, refused.body, refused.headers['sideport-remedy']]).toEqual([
        409,
        `The certificate that signed this app was revoked by Apple on ${day(revokedAt)}; it is being signed again.`,
        'sign-again',
      ]);
      await s.doneAfter(from);

      // A new certificate on the same account; the user's profile names it, the old profile is gone.
      expect(asc.certificates).toHaveLength(1);
      const [renewed] = asc.certificates;
      expect(renewed!.id).not.toBe(made!.id);
      const profiles = asc.profiles.filter((p) => p.name.startsWith(`Sideport ${s.user.replace(/_/g, ' ')}`));
      expect(profiles.map((p) => p.certificateIds)).toEqual([[renewed!.id]]);
      expect((await s.get(`/api/check/sign/${APP_ID}/${APP_VER_ID}/0`, s.user)).statusCode).toBe(200);
      expect((await installedCertificate(s)).map((der) => certificateFingerprint(der))).toEqual([
        certificateFingerprint(renewed!.der),
      ]);
      const audit = (await (await s.get('/api/admin/audit/0', s.admin)).json()) as AuditEntry[];
      expect(
        audit
          .filter((e) => e.actor === 'system (recovery)')
          .map((e) => e.action)
          .reverse(),
      ).toEqual(['certificate-replace', 'certificate-replaced', 'profiles-made-again', 'resign-queued']);
      expect((await s.get('/api/admin/identity', s.admin)).json()).toMatchObject({
        certificate_serial: new X509Certificate(renewed!.der).serialNumber.toUpperCase(),
      });
    } finally {
      await s.t.close();
    }
  });

  it("falls back to a certificate made through the API when SIGN_P12's is revoked, and says so", async () => {
    const dir = mkdtempSync(path.join(work, 'p12-'));
    const client = createAscClient({
      key: { keyId: KEY_ID, issuerId: ISSUER_ID, privateKeyPem: keyPem },
      baseUrl: asc.url,
    });
    const issued = await client.createDistributionCertificate({ commonName: 'Operator' });
    const p12 = forge.pkcs12.toPkcs12Asn1(
      forge.pki.privateKeyFromPem(issued.privateKeyPem),
      [forge.pki.certificateFromPem(issued.certificatePem)],
      'p12-pass',
      { algorithm: '3des' },
    );
    writeFileSync(path.join(dir, 'operator.p12'), Buffer.from(forge.asn1.toDer(p12).getBytes(), 'binary'));
    const s = await signedServer({ SIGN_P12: path.join(dir, 'operator.p12'), SIGN_P12_PASSWORD: 'p12-pass' });
    try {
      const operatorSerial = new X509Certificate(issued.certificatePem).serialNumber.toUpperCase();
      expect((await installedCertificate(s)).map((der) => certificateFingerprint(der))).toEqual([
        certificateFingerprint(new X509Certificate(issued.certificatePem).raw),
      ]);
      const before = asc.certificates.map((c) => c.id);
      await responder.setStatus(asc.revokeCertificate(issued.certificate.id), 'revoked', new Date());
      const from = s.events.length;
      // Noticed by a process started after the revocation (its periodic check), which Apple's list
      // no longer tells of SIGN_P12's certificate.
      const config = loadConfig({
        LOG_LEVEL: 'silent',
        DATA_DIR: s.t.dataDir,
        ...env({ SIGN_P12: path.join(dir, 'operator.p12'), SIGN_P12_PASSWORD: 'p12-pass' }),
      });
      const later = await createCoreServices({
        config,
        database: s.t.database,
        clock: () => new Date(),
        log: { info() {}, warn() {} },
      });
      try {
        expect(await later.recovery.runPass()).toMatchObject({ replaced: true });
      } finally {
        await later.bus.close();
      }
      await s.doneAfter(from);
      expect((await s.get(`/api/check/sign/${APP_ID}/${APP_VER_ID}/0`, s.user)).statusCode).toBe(200);
      const made = asc.certificates.find((c) => !before.includes(c.id))!;
      expect((await installedCertificate(s)).map((der) => certificateFingerprint(der))).toEqual([
        certificateFingerprint(made.der),
      ]);
      const replaced = ((await (await s.get('/api/admin/audit/0', s.admin)).json()) as AuditEntry[]).find(
        (e) => e.action === 'certificate-replaced',
      )!;
      expect(replaced.subject).toMatchObject({
        old_serial: operatorSerial,
        note: `The certificate in SIGN_P12 (serial ${operatorSerial}) no longer signs: a certificate made through App Store Connect does from now on. Put a new .p12 in SIGN_P12 to sign with your own again.`,
      });
      expect((await s.get('/api/admin/identity', s.admin)).json()).toMatchObject({
        certificate_serial: new X509Certificate(made.der).serialNumber.toUpperCase(),
      });
    } finally {
      await s.t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('shows the chain on the admin identity card, and refuses a certificate or SIGN_P12 whose issuer is nowhere instead of signing with the leaf alone', async () => {
    const s = await signedServer();
    try {
      const card = (await s.get('/api/admin/identity', s.admin)).json() as {
        certificate_chain: { name: string; expires_at: string }[];
      };
      expect(card.certificate_chain.map((c) => c.name)).toEqual([
        `Apple Distribution: Sideport Test Team (${asc.teamId})`,
        'Test Worldwide Developer Relations CA (not Apple)',
        'Test Root CA (not Apple)',
      ]);
      expect(card.certificate_chain[2]!.expires_at).toBe(
        new Date(new X509Certificate(asc.rootPem).validTo).toISOString(),
      );
    } finally {
      await s.t.close();
    }

    const dir = mkdtempSync(path.join(work, 'lost-'));
    const client = createAscClient({
      key: { keyId: KEY_ID, issuerId: ISSUER_ID, privateKeyPem: keyPem },
      baseUrl: asc.url,
    });
    const issued = await client.createDistributionCertificate({ commonName: 'Operator' });
    const p12 = forge.pkcs12.toPkcs12Asn1(
      forge.pki.privateKeyFromPem(issued.privateKeyPem),
      [forge.pki.certificateFromPem(issued.certificatePem)],
      'p12-pass',
      { algorithm: '3des' },
    );
    writeFileSync(path.join(dir, 'leaf.p12'), Buffer.from(forge.asn1.toDer(p12).getBytes(), 'binary'));
    const issuerUrl = `${asc.url}/wwdr-${asc.teamId}.cer`;
    const sentence = (origin: string) =>
      `The issuer of the signing certificate "Apple Distribution: Sideport Test Team (${asc.teamId})", "Test Worldwide Developer Relations CA (not Apple)", is not ${origin}, nor at its CA Issuers address ${issuerUrl} (HTTP 404), nor among Apple's CA certificates shipped with Sideport: a signature without it fails on the device. Export the .p12 with its issuer's certificate (and the root above it).`;
    asc.setIssuerServed(false);
    try {
      // At configuration: SIGN_P12 of the leaf alone, its issuer at no address, stops the start.
      await expect(
        createTestApp(kind, {
          env: env({ SIGN_P12: path.join(dir, 'leaf.p12'), SIGN_P12_PASSWORD: 'p12-pass' }),
        }),
      ).rejects.toThrow(sentence('in SIGN_P12'));
      // At creation: the certificate App Store Connect issues is refused, not kept, nothing signed.
      const t = await createTestApp(kind, { env: env() });
      try {
        await expect(t.services.signing.currentCertificate()).rejects.toThrow(
          sentence('among the certificates App Store Connect returned with it'),
        );
      } finally {
        await t.close();
      }
    } finally {
      asc.setIssuerServed(true);
    }
  });

  it("kept to Apple's published API", () => {
    expect(asc.violations).toEqual([]);
  });
});
