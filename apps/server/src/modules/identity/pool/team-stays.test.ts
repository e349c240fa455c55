/**
 * The team stays (issue 30): through the local App Store Connect with two accounts, a person's
 * devices stay on their team when a new device comes, even where the other account has more room,
 * and through a recovery (their certificate revoked: a new one on the same account, profiles made
 * again, their apps re-signed there); they move only when their account is disabled, the move is kept per person and in the audit log
 * with its reason, and before the first install from the new team the person reads, app by app,
 * what stays with the old one.
 */
import { createHash, generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missingTools } from '@sideport/ipa/test-support/system-tools';
import {
  auditLog,
  developerAccounts,
  devices,
  signRequests,
  teamMoves,
  userProfiles,
} from '../../../db/schema/index.js';
import { startAscServer, type AscServer } from '../../../test/asc-server.js';
import { startOcspResponder, type OcspResponder } from '../../../test/ocsp-responder.js';
import {
  createTestApp,
  databaseKinds,
  signedInUser,
  WEB_CLIENT,
  type TestApp,
} from '../../../test/harness.js';
import * as deviceQueries from '../../devices/queries.js';
import * as signQueries from '../../sign/queries.js';

const newP8 = () =>
  generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
const KEYS = [1, 2].map((n) => ({
  keyId: `STAYKEY00${n}`,
  issuerId: `79a6de70-000${n}-47e3-e053-5b8c7c11a4d1`,
  keyPem: newP8(),
  teamId: `STAYTEAM0${n}`,
}));

/** Outside CI a machine without openssl (the OCSP responders) skips this file with one line. */
const skip = missingTools('openssl');

describe.skipIf(skip).each(databaseKinds)('the team stays on %s', (kind) => {
  let asc: AscServer;
  /** Each account's OCSP responder, named in the AIA of the certificates it issues, by key id. */
  const responders = new Map<string, OcspResponder>();
  let t: TestApp;
  let dir: string;
  let ids: Record<string, number>;
  let serial = 0;
  let now = new Date(Math.floor(Date.now() / 1000) * 1000);
  const later = (ms: number) => (now = new Date(now.getTime() + ms));

  beforeAll(async () => {
    asc = await startAscServer({ ...KEYS[0]!, clock: () => now, accounts: [{ ...KEYS[1]! }] });
    for (const account of asc.accounts) {
      const responder = await startOcspResponder({ caPem: account.caPem, caKeyPem: account.caKeyPem });
      account.setOcspResponder(responder.url);
      responders.set(account.keyId, responder);
    }
    dir = mkdtempSync(path.join(tmpdir(), 'sideport-team-stays-'));
    writeFileSync(path.join(dir, `AuthKey_${KEYS[1]!.keyId}.p8`), KEYS[1]!.keyPem);
    writeFileSync(
      path.join(dir, 'accounts.json'),
      JSON.stringify([
        {
          keyId: KEYS[1]!.keyId,
          issuerId: KEYS[1]!.issuerId,
          privateKeyFile: `AuthKey_${KEYS[1]!.keyId}.p8`,
          name: 'Team B',
        },
      ]),
    );
    t = await createTestApp(kind, {
      env: {
        ASC_KEY_ID: KEYS[0]!.keyId,
        ASC_ISSUER_ID: KEYS[0]!.issuerId,
        ASC_PRIVATE_KEY: KEYS[0]!.keyPem,
        ASC_BASE_URL: asc.url,
        ASC_ACCOUNTS_FILE: path.join(dir, 'accounts.json'),
        REGISTRATION_INTERVAL_SECONDS: '0',
        SIGN_WORKERS: '0',
        SIGN_IN_LIMIT_PER_ADDRESS: '100000',
        // Asked at every look: the responder's index is the truth at once.
        OCSP_CACHE_MINUTES: '0',
      },
      clock: () => now,
    });
    ids = Object.fromEntries(
      (await t.database.db.select().from(developerAccounts)).map((r) => [r.keyId, r.id]),
    );
  });
  afterAll(async () => {
    await t?.close();
    for (const responder of responders.values()) await responder.close();
    await asc?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function paidDevice(userId: string, product = 'iPhone15,2') {
    const udid = `00008120-${(++serial).toString(16).toUpperCase().padStart(16, '0')}`;
    asc.setDeviceClass(udid, product.startsWith('iPad') ? 'IPAD' : 'IPHONE');
    const row = await deviceQueries.insertDevice(t.database.db, { userId, product, udid });
    await deviceQueries.markDevicePaid(t.database.db, userId, row.id);
  }

  /** Registration passes until nothing waits and nobody is left on `outOfUse`. */
  async function settle(outOfUse: number[] = []) {
    for (let pass = 0; pass < 20; pass++) {
      await t.services.registration.runPass();
      const rows = await t.database.db.select().from(devices);
      if (
        rows.every((d) => d.status === 'Registered') &&
        !rows.some((d) => d.accountId !== null && outOfUse.includes(d.accountId))
      )
        return rows;
    }
    throw new Error('registration did not settle');
  }

  /** A Done sign of an app, signed at `signedAt` (the sign worker is not what is tested). */
  async function doneSign(userId: string, appId: number, signedAt: Date) {
    await signQueries.insertSign(t.database.db, {
      userId,
      source: 'version',
      appId,
      appVerId: appId * 10,
      signType: 0,
      status: 'Done',
      state: 'idle',
      title: `App ${appId}`,
      requestedAt: signedAt,
      updatedAt: signedAt,
      artifactId: randomUUID(),
      fileKey: `signed/${appId}/${randomUUID()}.ipa`,
      signedAt,
      udids: [],
    });
  }

  it('keeps a person on their team, moves them only when it is disabled, and warns before the first install from the new one', async () => {
    const ana = `ana_${kind}`;
    const cookie = await signedInUser(t, ana);
    const install = (appId: number) =>
      t.app.inject({ url: `/api/install/${appId}/${appId * 10}/0`, headers: { cookie, ...WEB_CLIENT } });
    await paidDevice(ana);
    let rows = await settle();
    const onAccount = () => new Set(rows.filter((d) => d.userId === ana).map((d) => d.accountId));
    const first = [...onAccount()][0]!;
    const other = first === ids[KEYS[0]!.keyId] ? ids[KEYS[1]!.keyId]! : ids[KEYS[0]!.keyId]!;

    // Facebook was installed from the first team.
    await doneSign(ana, 901, new Date(now.getTime() - 120_000));
    expect((await install(901)).statusCode).toBe(200);
    later(60_000);

    // A new device joins the person's team, not the other account, which has more room.
    await paidDevice(ana, 'iPad13,1');
    rows = await settle();
    expect(onAccount()).toEqual(new Set([first]));
    expect(rows.filter((d) => d.accountId === other)).toEqual([]);
    expect(await t.database.db.select().from(teamMoves).where(eq(teamMoves.userId, ana))).toEqual([]);

    // The account is disabled: the person moves, every device.
    const admin = await signedInUser(t, `stay_admin_${kind}`, 1);
    const disabled = await t.app.inject({
      method: 'POST',
      url: `/api/admin/accounts/${first}/disable`,
      headers: { cookie: admin, ...WEB_CLIENT },
    });
    expect(disabled.statusCode, disabled.body).toBe(200);
    rows = await settle([first]);
    expect(onAccount()).toEqual(new Set([other]));
    later(60_000);

    const [move] = await t.database.db.select().from(teamMoves).where(eq(teamMoves.userId, ana));
    expect(move).toMatchObject({ fromAccountId: first, toAccountId: other, acknowledgedAt: null });
    expect(move!.reason).toMatch(/is disabled$/);
    const audit = await t.database.db.select().from(auditLog).where(eq(auditLog.action, 'move-devices'));
    expect(audit.map((a) => a.subject)).toContainEqual(
      expect.objectContaining({ user: ana, why: move!.reason }),
    );

    // The first app signed by the new team: the person is told what stays with the old one first.
    await doneSign(ana, 902, new Date(now.getTime() + 1000));
    const refused = await install(902);
    expect(refused.statusCode).toBe(409);
    expect(refused.headers['sideport-remedy']).toBe('acknowledge-team-move');
    expect(refused.body).toBe(
      "Your apps are now signed by another Apple developer team: the one that signed them before is no longer in this server's use. " +
        'After this update, App 901 will ask you to sign in again. ' +
        'Saved logins and the data an app shares with its extensions stay with the old team.',
    );
    const acknowledged = await t.app.inject({
      method: 'POST',
      url: '/api/team-move/acknowledge',
      headers: { cookie, ...WEB_CLIENT },
    });
    expect(acknowledged.statusCode).toBe(204);
    expect((await install(902)).statusCode).toBe(200);
    const [after] = await t.database.db.select().from(teamMoves).where(eq(teamMoves.userId, ana));
    expect(after!.acknowledgedAt).not.toBeNull();
  });

  it('keeps a person on their team through a recovery: a new certificate there, their profile made again there, their apps re-signed there', async () => {
    const bo = `bo_${kind}`;
    await signedInUser(t, bo);
    await paidDevice(bo);
    const rows = await settle();
    const accountId = rows.find((d) => d.userId === bo)!.accountId!;
    const keyId = Object.entries(ids).find(([, id]) => id === accountId)![0];
    const account = asc.account(keyId);
    const material = (await t.services.signing.signingMaterial(bo))!;
    const [profileBefore] = await t.database.db
      .select()
      .from(userProfiles)
      .where(eq(userProfiles.userId, bo));
    expect(profileBefore!.accountId).toBe(accountId);
    await doneSign(bo, 911, new Date(now.getTime() - 60_000));

    // Apple revokes the certificate bo's apps are signed with.
    const certificate = account.certificates.find(
      (c) => createHash('sha256').update(c.der).digest('hex') === material.certificate.fingerprint,
    )!;
    await responders.get(keyId)!.setStatus(account.revokeCertificate(certificate.id), 'revoked', now);
    const report = await t.services.recovery.runPass();
    expect(report).toMatchObject({ replaced: true });

    // The same team signs: a new certificate on the same account, the profile made again there.
    const after = (await t.services.signing.signingMaterial(bo))!;
    expect(after.certificate.fingerprint).not.toBe(material.certificate.fingerprint);
    expect(account.certificates.map((c) => createHash('sha256').update(c.der).digest('hex'))).toContain(
      after.certificate.fingerprint,
    );
    const [profileAfter] = await t.database.db.select().from(userProfiles).where(eq(userProfiles.userId, bo));
    expect(profileAfter).toMatchObject({ accountId, certificateFingerprint: after.certificate.fingerprint });
    expect(account.profiles.some((p) => p.uuid === profileAfter!.uuid)).toBe(true);
    // Bo's app is signed again, and nothing moved: no device, no record, no move in the audit log.
    const [resign] = await t.database.db.select().from(signRequests).where(eq(signRequests.userId, bo));
    expect(resign!.resigning).toBe(true);
    const devicesAfter = await t.database.db.select().from(devices).where(eq(devices.userId, bo));
    expect(devicesAfter.map((d) => d.accountId)).toEqual([accountId]);
    expect(await t.database.db.select().from(teamMoves).where(eq(teamMoves.userId, bo))).toEqual([]);
    const audit = await t.database.db.select().from(auditLog);
    expect(audit.map((a) => a.action)).toContain('certificate-replaced');
    expect(
      audit.filter((a) => a.action === 'move-devices' && (a.subject as { user?: string }).user === bo),
    ).toEqual([]);
  });
});
