/**
 * Installs that do not fail in silence, in the browser: the server (as built) signs with a dev
 * identity seeded here, whose CA a real OCSP responder (openssl ocsp) answers for at OCSP_URL.
 * Revoking the certificate there is what Apple's revocation is to a real account.
 */
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../apps/server/src/db/client.js';
import { startItunesServer, type ItunesServer } from '../../apps/server/src/dev/itunes-server.js';
import { createDevIdentity } from '../../apps/server/src/modules/identity/dev-identity.js';
import { saveDevIdentity } from '../../apps/server/src/modules/identity/dev-identity-provider.js';
import { createSecretBox } from '../../apps/server/src/platform/secrets.js';
import { startOcspResponder, type OcspResponder } from '../../apps/server/src/test/ocsp-responder.js';
import { agentClient, caller, createAgent, sessionCookie, storeRecord } from './api-client.js';
import { registeredDevice } from './device-client.js';
import {
  IPHONE_USER_AGENT,
  IPHONE_VIEWPORT,
  launchBrowser,
  newDataDir,
  openSession,
  recordLabels,
  startServer,
  submitSignIn,
  type RunningServer,
  type Session,
} from './harness.js';

const ADMIN = { id: 'operator', password: 'operator password' };
const APP = { id: 852, name: 'Recoverable App', bundleId: 'com.example.recoverable', appVerId: '8521' };
const SECRET_KEY = 'e2e-recovery-secret-key-of-enough-length';

let server: RunningServer;
let store: ItunesServer;
let responder: OcspResponder;
let browser: Browser;
let adminCookie: string;
let udidSeq = 0;

beforeAll(async () => {
  store = await startItunesServer({ records: [storeRecord(APP.id, APP.name, APP.bundleId)] });
  // The dev identity, made here and stored as the server would: the responder signs for its CA.
  const dataDir = newDataDir();
  const identity = createDevIdentity();
  const database = await openDatabase({ pgliteDir: path.join(dataDir, 'db') });
  try {
    await database.migrate();
    await saveDevIdentity(database.db, createSecretBox(SECRET_KEY), identity);
  } finally {
    await database.close();
  }
  responder = await startOcspResponder({ caPem: identity.caCertPem, caKeyPem: identity.caKeyPem });
  await responder.setStatus(identity.certPem, 'good');
  server = await startServer(dataDir, {
    ITUNES_BASE_URL: store.url,
    ADMIN_ID: ADMIN.id,
    ADMIN_PASSWORD: ADMIN.password,
    SECRET_KEY,
    OCSP_URL: responder.url,
    // Asked at every check: a revocation counts at once.
    OCSP_CACHE_MINUTES: '0',
  });
  browser = await launchBrowser();
  adminCookie = await sessionCookie(server, ADMIN.id, { password: ADMIN.password, signIn: true });
  const agent = agentClient(server, (await createAgent(server, adminCookie, 'e2e agent')).token);
  await caller(server, await sessionCookie(server, 'requester')).json('GET', `/api/decrypt/KR/${APP.id}`);
  const job = await agent.claim();
  await agent.upload(job!, { bundleId: APP.bundleId, version: '1.0', appVerId: APP.appVerId });
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await responder?.close();
  await store?.close();
});

/** A person with a Registered iPhone and a Done normal sign of the app. */
async function signedPerson(id: string) {
  const cookie = await sessionCookie(server, id);
  await registeredDevice(server, cookie, {
    PRODUCT: 'iPhone15,2',
    UDID: `00008120-00E2E0000000${String(++udidSeq).padStart(4, '0')}`,
  });
  await caller(server, cookie).json('PUT', `/api/sign/${APP.id}/${APP.appVerId}`, { type: 0 });
  await expect
    .poll(
      async () =>
        (await caller(server, cookie).call('GET', `/api/check/sign/${APP.id}/${APP.appVerId}/0`)).status,
      { timeout: 120_000 },
    )
    .toBe(200);
  return cookie;
}

/** Revokes the certificate the server signs with now, at the responder; answers the day it says. */
async function revokeCurrentCertificate() {
  const identity = await caller(server, adminCookie).json<{ certificate_serial: string }>(
    'GET',
    '/api/admin/identity',
  );
  const revokedAt = new Date(Date.now() - 86_400_000);
  await responder.setStatus({ serial: identity.certificate_serial }, 'revoked', revokedAt);
  return revokedAt.toISOString().slice(0, 10);
}

async function versionsPage(id: string, { onIphone = false } = {}) {
  const s = onIphone
    ? await openSession(browser, server.url, IPHONE_VIEWPORT, undefined, { userAgent: IPHONE_USER_AGENT })
    : await openSession(browser, server.url);
  await submitSignIn(s, id);
  await s.page.waitForURL((u) => u.pathname === '/');
  await s.page
    .getByTestId('app-card')
    .filter({ hasText: APP.name })
    .getByRole('button', { name: 'View' })
    .click();
  await expect.poll(() => s.page.getByTestId('version-card').count()).toBe(1);
  return s;
}

const normalMode = (s: Session) =>
  s.page.getByTestId('version-card').first().getByRole('group', { name: 'Normal' });

describe('installs that do not fail in silence', () => {
  it("says why an install of a revoked app is refused, and 'Sign again' asks for a new sign", async () => {
    await signedPerson('revokee');
    const s = await versionsPage('revokee', { onIphone: true });
    const mode = normalMode(s);
    expect(await mode.getByRole('button').first().innerText()).toBe('Install');
    const revokedOn = await revokeCurrentCertificate();

    await mode.getByRole('button', { name: 'Install' }).click();
    const notice = mode.getByRole('alert', { name: 'Normal install refused' });
    await expect
      .poll(() => notice.innerText())
      .toContain(
        `The certificate that signed this app was revoked by the dev identity's CA on ${revokedOn}; it is being signed again.`,
      );
    expect(s.dialogs).toEqual([]);

    const request = s.page.waitForRequest(
      (r) => r.method() === 'PUT' && r.url().endsWith(`/api/sign/${APP.id}/${APP.appVerId}`),
    );
    await notice.getByRole('button', { name: 'Sign again' }).click();
    expect((await request).postDataJSON()).toEqual({ type: 0 });
    await expect.poll(() => notice.count()).toBe(0);
    // Signed again with a certificate that is not revoked: Install works.
    await expect
      .poll(() => mode.getByRole('button').first().innerText(), { timeout: 120_000 })
      .toBe('Install');
    const installAnswer = s.page.waitForResponse((r) => r.url().includes('/api/install/'));
    await mode.getByRole('button', { name: 'Install' }).click();
    expect((await installAnswer).status()).toBe(200);
    await s.context.close();
  });

  it("shows admins the certificate's revocation status and when it was checked", async () => {
    const cookie = await signedPerson('checker');
    const { certificate_serial: serial } = await caller(server, adminCookie).json<{
      certificate_serial: string;
    }>('GET', '/api/admin/identity');
    await responder.setStatus({ serial }, 'good');
    // An install's check asks the responder (OCSP_CACHE_MINUTES=0: every time).
    expect(
      (await caller(server, cookie).call('GET', `/api/check/sign/${APP.id}/${APP.appVerId}/0`)).status,
    ).toBe(200);
    const s = await openSession(browser, server.url);
    await submitSignIn(s, ADMIN.id, ADMIN.password);
    await s.page.waitForURL((u) => u.pathname === '/');
    await s.page.getByRole('link', { name: 'Admin' }).click();
    await s.page.getByRole('tab', { name: 'Devices' }).click();
    const status = s.page.getByTestId('signing-identity').getByTestId('certificate-status');
    await expect.poll(() => status.innerText()).toMatch(/^ · Status: good, checked [A-Z][a-z]{2} \d/);
    await s.context.close();
  });

  it("shows an app recovery signs again as 'Re-signing', then Install, without a reload", async () => {
    const cookie = await signedPerson('watcher');
    const s = await versionsPage('watcher');
    const button = normalMode(s).getByRole('button').first();
    expect(await button.innerText()).toBe('Install');
    const recording = await recordLabels(s.page, button);

    await revokeCurrentCertificate();
    // Someone's install checks it (here the person's own, from another device): recovery starts.
    const refused = await caller(server, cookie).call('GET', `/api/check/sign/${APP.id}/${APP.appVerId}/0`);
    expect(refused.status).toBe(409);
    await expect
      .poll(() => recording.labels(), { timeout: 120_000 })
      .toEqual(['Install', 'Re-signing', 'Install']);
    expect(await recording.isSamePage()).toBe(true);
    expect(await button.isEnabled()).toBe(true);
    await s.context.close();
  });
});
