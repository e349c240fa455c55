/**
 * How long an OCSP answer is kept (its nextUpdate, capped by OCSP_CACHE_MINUTES), what is kept
 * when no answer can be had, and 'not checked' when there is no responder to ask: the registry
 * over a real database and a real responder (openssl ocsp).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signingCertificates } from '../../db/schema/index.js';
import { openTestDatabase, databaseKinds, type TestDatabase } from '../../test/harness.js';
import { createFaultTracker } from '../../platform/faults.js';
import { startOcspResponder, type OcspResponder } from '../../test/ocsp-responder.js';
import { createCertificateRegistry } from './certificates.js';
import { createDevIdentity, type DevIdentity } from './dev-identity.js';
import { describeCertificate } from './certificate-details.js';
import { missingTools } from '@sideport/ipa/test-support/system-tools';

/** Outside CI a machine without these skips this file with one line saying so; each database runs it. */
const onEachDatabase = describe.skipIf(missingTools('openssl')).each(databaseKinds);

const quiet = { warn() {} };

onEachDatabase('the certificates signed with, and their OCSP answers, on %s', (kind) => {
  let db: TestDatabase;
  let identity: DevIdentity;
  let withNextUpdate: OcspResponder;
  let without: OcspResponder;
  // The responder dates its answers by the machine's clock; the registry's is moved from there.
  let offsetMs = 0;
  const clock = () => new Date(Date.now() + offsetMs);

  beforeAll(async () => {
    db = await openTestDatabase(kind);
    identity = createDevIdentity();
    withNextUpdate = await startOcspResponder({
      caPem: identity.caCertPem,
      caKeyPem: identity.caKeyPem,
      nextUpdateMinutes: 1,
    });
    without = await startOcspResponder({ caPem: identity.caCertPem, caKeyPem: identity.caKeyPem });
    for (const r of [withNextUpdate, without]) await r.setStatus(identity.certPem, 'good');
  });
  afterAll(async () => {
    await withNextUpdate?.close();
    await without?.close();
    await db?.dispose();
  });

  /** A registry that knows the dev identity's certificate. */
  async function registry(settings: { ocspUrl?: string; cacheMinutes: number }) {
    const made = createCertificateRegistry({ db: db.db, clock, settings, log: quiet });
    const certificate = describeCertificate(identity.certPem, identity.caCertPem);
    await made.remember(certificate, 'dev');
    // Each case starts from no answer kept.
    await db.db
      .update(signingCertificates)
      .set({ ocspStatus: null, checkedAt: null, nextCheckAt: null, ocspError: null, revokedAt: null });
    offsetMs = 0;
    return {
      status: () => made.status(certificate.fingerprint),
      cached: () => made.cachedStatus(certificate.fingerprint),
    };
  }

  it("is 'not checked', and stores nothing, when neither OCSP_URL nor the certificate names a responder", async () => {
    const r = await registry({ cacheMinutes: 60 });
    expect(await r.status()).toEqual({
      state: 'not checked',
      revokedAt: null,
      checkedAt: null,
      error: null,
      identityKind: 'dev',
    });
    expect(await r.cached()).toMatchObject({ state: 'not checked', checkedAt: null });
  });

  it('keeps an answer until its nextUpdate when that comes before OCSP_CACHE_MINUTES', async () => {
    const r = await registry({ ocspUrl: withNextUpdate.url, cacheMinutes: 60 });
    const asked = withNextUpdate.requestCount();
    expect(await r.status()).toMatchObject({ state: 'good', checkedAt: expect.any(Date), error: null });
    expect(await r.status()).toMatchObject({ state: 'good' });
    expect(withNextUpdate.requestCount()).toBe(asked + 1);
    offsetMs = 61_000;
    await r.status();
    expect(withNextUpdate.requestCount()).toBe(asked + 2);
  });

  it('keeps an answer without nextUpdate for OCSP_CACHE_MINUTES, and asks every time with 0', async () => {
    const r = await registry({ ocspUrl: without.url, cacheMinutes: 2 });
    const asked = without.requestCount();
    await r.status();
    offsetMs = 119_000;
    await r.status();
    expect(without.requestCount()).toBe(asked + 1);
    offsetMs = 121_000;
    await r.status();
    expect(without.requestCount()).toBe(asked + 2);

    const never = await registry({ ocspUrl: without.url, cacheMinutes: 0 });
    await never.status();
    await never.status();
    expect(without.requestCount()).toBe(asked + 4);
  });

  it('keeps a revocation for good, and the last answer when the responder is down, saying why', async () => {
    const r = await registry({ ocspUrl: without.url, cacheMinutes: 0 });
    expect(await r.status()).toMatchObject({ state: 'good' });
    await without.setStatus(identity.certPem, 'revoked', new Date('2026-01-02T03:04:05Z'));
    expect(await r.status()).toMatchObject({ state: 'revoked', revokedAt: new Date('2026-01-02T03:04:05Z') });
    const asked = without.requestCount();
    expect(await r.status()).toMatchObject({ state: 'revoked' });
    expect(without.requestCount()).toBe(asked);
    await without.setStatus(identity.certPem, 'good');

    const down = await registry({ ocspUrl: 'http://127.0.0.1:9/', cacheMinutes: 0 });
    expect(await down.status()).toEqual({
      state: 'not checked',
      revokedAt: null,
      checkedAt: null,
      error: 'The OCSP responder http://127.0.0.1:9/ could not be reached.',
      identityKind: 'dev',
    });
  });

  it('tells the fault tracker the responder is down, and up again once it answers', async () => {
    const faults = createFaultTracker(clock);
    const certificate = describeCertificate(identity.certPem, identity.caCertPem);
    const settings = { cacheMinutes: 0 };
    const down = createCertificateRegistry({
      db: db.db,
      clock,
      settings: { ...settings, ocspUrl: 'http://127.0.0.1:9/' },
      log: quiet,
      faults,
    });
    await down.remember(certificate, 'dev');
    await down.status(certificate.fingerprint);
    expect(faults.down()).toEqual([expect.objectContaining({ part: 'ocsp' })]);
    const back = createCertificateRegistry({
      db: db.db,
      clock,
      settings: { ...settings, ocspUrl: without.url },
      log: quiet,
      faults,
    });
    expect(await back.status(certificate.fingerprint)).toMatchObject({ state: 'good' });
    expect(faults.isDown('ocsp')).toBe(false);
  });
});
