/**
 * The pool of developer accounts, end to end: the real server against a local App Store Connect
 * that holds several accounts (each key its own devices, certificates and profiles, Apple's limit
 * per device family) and checks every request against Apple's OpenAPI document.
 */
import { createPrivateKey, generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eq, inArray } from 'drizzle-orm';
import { parseProfile } from '@sideport/ipa';
import { afterEach, describe, expect, it } from 'vitest';
import {
  auditLog,
  developerAccounts,
  devices,
  signRequests,
  userProfiles,
  users,
} from '../../../db/schema/index.js';
import { startAscServer, type AscDeviceClass, type AscServer } from '../../../test/asc-server.js';
import { changedTables, snapshotDatabase } from '../../../test/db-snapshot.js';
import { enrollDevice } from '../../../test/device-flow.js';
import {
  createTestApp,
  databaseKinds,
  signedInUser,
  type DatabaseKind,
  type TestApp,
} from '../../../test/harness.js';
import * as deviceQueries from '../../devices/queries.js';
import * as signQueries from '../../sign/queries.js';
import { createAccountPool } from './account-pool.js';
import { createAscClient } from '../asc-client.js';

const SAME_ORIGIN = { 'sec-fetch-site': 'same-origin' };
const newP8 = () =>
  generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
/** Three teams' keys: the first is ASC_KEY_ID's, the others ASC_ACCOUNTS_FILE's (or added in the console). */
const KEYS = [1, 2, 3].map((n) => ({
  keyId: `POOLKEY00${n}`,
  issuerId: `69a6de70-000${n}-47e3-e053-5b8c7c11a4d1`,
  keyPem: newP8(),
  teamId: `POOLTEAM0${n}`,
}));
const CLASS_OF: Record<string, AscDeviceClass> = { iPhone: 'IPHONE', iPad: 'IPAD', AppleTV: 'APPLE_TV' };

interface Pool {
  t: TestApp;
  asc: AscServer;
  dir: string;
  /** Apple's account of a row of developer_accounts. */
  ascOf(accountId: number): AscServer['accounts'][number];
  accountIds(): Promise<Record<string, number>>;
}

let now = new Date(Math.floor(Date.now() / 1000) * 1000);
let open: Pool | undefined;
afterEach(async () => {
  await open?.t.close();
  await open?.asc.close();
  if (open) rmSync(open.dir, { recursive: true, force: true });
  open = undefined;
});

/**
 * The server with `configured` accounts (the first from ASC_KEY_ID, the rest from ASC_ACCOUNTS_FILE)
 * on an App Store Connect holding `onApple` accounts, each taking `limit` devices per family.
 */
async function startPool(
  kind: DatabaseKind,
  options: { configured: number; onApple?: number; limit?: number },
): Promise<Pool> {
  const limit = options.limit ?? 100;
  const onApple = KEYS.slice(0, options.onApple ?? options.configured);
  const asc = await startAscServer({
    ...onApple[0]!,
    deviceLimit: limit,
    clock: () => now,
    accounts: onApple.slice(1).map((k) => ({ ...k, deviceLimit: limit })),
  });
  const dir = mkdtempSync(path.join(tmpdir(), 'sideport-pool-'));
  const listed = KEYS.slice(1, options.configured).map((k, i) => {
    writeFileSync(path.join(dir, `AuthKey_${k.keyId}.p8`), k.keyPem);
    return {
      keyId: k.keyId,
      issuerId: k.issuerId,
      privateKeyFile: `AuthKey_${k.keyId}.p8`,
      name: `Team ${i + 2}`,
    };
  });
  writeFileSync(path.join(dir, 'accounts.json'), JSON.stringify(listed));
  const t = await createTestApp(kind, {
    env: {
      ASC_KEY_ID: KEYS[0]!.keyId,
      ASC_ISSUER_ID: KEYS[0]!.issuerId,
      ASC_PRIVATE_KEY: KEYS[0]!.keyPem,
      ASC_BASE_URL: asc.url,
      ASC_ACCOUNTS_FILE: path.join(dir, 'accounts.json'),
      ASC_DEVICES_PER_FAMILY: String(limit),
      REGISTRATION_INTERVAL_SECONDS: '0',
      // Signs stay queued where the tests can see them.
      SIGN_WORKERS: '0',
      SIGN_IN_LIMIT_PER_ADDRESS: '100000',
    },
    clock: () => now,
  });
  const accountIds = async () =>
    Object.fromEntries((await t.database.db.select().from(developerAccounts)).map((r) => [r.keyId, r.id]));
  const pool: Pool = {
    t,
    asc,
    dir,
    accountIds,
    ascOf: (accountId) => {
      throw new Error(`call accountIds first (${accountId})`);
    },
  };
  const byId = Object.fromEntries(Object.entries(await accountIds()).map(([keyId, id]) => [id, keyId]));
  pool.ascOf = (accountId) => asc.account(byId[accountId]!);
  open = pool;
  return pool;
}

let serial = 0;
/** A user (made directly: sign-in is not what is tested) with paid devices of these models. */
async function paidDevices(pool: Pool, userId: string, products: string[]) {
  await pool.t.database.db
    .insert(users)
    .values({ id: userId, passwordHash: 'not used' })
    .onConflictDoNothing();
  const made = [];
  for (const product of products) {
    const udid = `00008120-${(++serial).toString(16).toUpperCase().padStart(16, '0')}`;
    // Apple knows what hardware a UDID is.
    pool.asc.setDeviceClass(udid, CLASS_OF[product.replace(/\d.*$/, '')] ?? 'IPHONE');
    const row = await deviceQueries.insertDevice(pool.t.database.db, { userId, product, udid });
    await deviceQueries.markDevicePaid(pool.t.database.db, userId, row.id);
    made.push(row);
  }
  return made;
}

/** Registration passes until nothing is waiting and nobody is left on an account out of use. */
async function settle(pool: Pool, outOfUse: number[] = []) {
  for (let pass = 0; pass < 40; pass++) {
    await pool.t.services.registration.runPass();
    const rows = await pool.t.database.db.select().from(devices);
    const waiting = rows.filter((d) => d.status === 'Pending' || d.status === 'Process');
    const stranded = rows.filter(
      (d) => d.status === 'Registered' && d.accountId !== null && outOfUse.includes(d.accountId),
    );
    if (waiting.length === 0 && stranded.length === 0) return rows;
  }
  throw new Error('registration did not settle');
}

const familyOfClass = (c: string) => (c === 'IPOD' ? 'IPHONE' : c);

/** Apple's count of each account's devices per family. */
function appleCounts(asc: AscServer) {
  return asc.accounts.map((a) => {
    const counts: Record<string, number> = {};
    for (const d of a.devices)
      counts[familyOfClass(d.deviceClass)] = (counts[familyOfClass(d.deviceClass)] ?? 0) + 1;
    return counts;
  });
}

async function adminCookie(t: TestApp) {
  const id = `pool_admin_${++serial}`;
  return signedInUser(t, id, 1);
}

async function doneSign(t: TestApp, userId: string, appId: number) {
  const at = new Date(now.getTime() - 60_000);
  return signQueries.insertSign(t.database.db, {
    userId,
    source: 'version',
    appId,
    appVerId: appId * 10,
    signType: 0,
    status: 'Done',
    state: 'idle',
    title: `App ${appId}`,
    requestedAt: at,
    updatedAt: at,
    artifactId: randomUUID(),
    fileKey: `signed/${appId}/${randomUUID()}.ipa`,
    signedAt: at,
    udids: [],
  });
}

describe.each(databaseKinds)('a pool of developer accounts on %s', (kind) => {
  it(
    'places 250 devices over three accounts within Apple’s limit of each family, each user’s devices together',
    { timeout: 240_000 },
    async () => {
      const pool = await startPool(kind, { configured: 3 });
      // 225 iPhones: more than two accounts hold. 100 people with two iPhones, 25 with an iPhone and an iPad.
      const people: Array<{ id: string; products: string[] }> = [];
      for (let i = 0; i < 125; i++) {
        people.push({
          id: `placed_${kind}_${i}`,
          products: i < 100 ? ['iPhone15,2', 'iPhone14,5'] : ['iPhone16,1', 'iPad13,1'],
        });
      }
      for (const person of people) await paidDevices(pool, person.id, person.products);

      const rows = await settle(pool);
      expect(rows).toHaveLength(250);
      expect(rows.filter((d) => d.status !== 'Registered')).toEqual([]);
      // Apple took every registration, and no account has more of a family than its limit.
      const counts = appleCounts(pool.asc);
      expect(counts.map((c) => c.IPHONE ?? 0).reduce((a, b) => a + b)).toBe(225);
      expect(counts.map((c) => c.IPAD ?? 0).reduce((a, b) => a + b)).toBe(25);
      for (const c of counts) for (const n of Object.values(c)) expect(n).toBeLessThanOrEqual(100);
      expect(counts.every((c) => (c.IPHONE ?? 0) > 0)).toBe(true);
      // Each person's devices are on one account, the one Apple has them on.
      for (const person of people) {
        const theirs = rows.filter((d) => d.userId === person.id);
        const accounts = new Set(theirs.map((d) => d.accountId));
        expect(accounts.size, person.id).toBe(1);
        const onApple = pool.ascOf(theirs[0]!.accountId!).devices;
        for (const device of theirs) {
          expect(onApple.find((d) => d.udid === device.udid)?.id).toBe(device.appleDeviceId);
        }
      }
      // The console counts what Apple counts.
      const admin = await adminCookie(pool.t);
      const listed = await pool.t.app.inject({
        url: '/api/admin/accounts',
        headers: { cookie: admin, ...SAME_ORIGIN },
      });
      expect(listed.statusCode).toBe(200);
      const views = listed.json() as Array<{
        key_id: string;
        primary: boolean;
        slots: Array<{ family: string; used: number; free: number }>;
      }>;
      expect(views.map((v) => [v.key_id, v.primary])).toEqual([
        [KEYS[0]!.keyId, true],
        [KEYS[1]!.keyId, false],
        [KEYS[2]!.keyId, false],
      ]);
      for (const [i, view] of views.entries()) {
        const iPhones = view.slots.find((s) => s.family === 'iPhone')!;
        expect(iPhones).toEqual({
          family: 'iPhone',
          used: counts[i]!.IPHONE ?? 0,
          free: 100 - (counts[i]!.IPHONE ?? 0),
          limit: 100,
        });
        expect(view.slots.find((s) => s.family === 'iPad')!.used).toBe(counts[i]!.IPAD ?? 0);
      }
      expect(pool.asc.violations).toEqual([]);
      expect(pool.asc.authFailures).toEqual([]);
    },
  );

  it(
    'moves the devices of an account an admin disables, and of one whose key stops working mid-run, and signs their apps again',
    { timeout: 120_000 },
    async () => {
      const pool = await startPool(kind, { configured: 3 });
      const ids = await pool.accountIds();
      const [first, second, third] = KEYS.map((k) => ids[k.keyId]!);
      const people = Array.from({ length: 24 }, (_, i) => `moved_${kind}_${i}`);
      for (const person of people.slice(0, 12)) await paidDevices(pool, person, ['iPhone15,2', 'iPad13,1']);
      await settle(pool);
      for (const [i, person] of people.slice(0, 12).entries()) await doneSign(pool.t, person, 900 + i);
      const placed = await pool.t.database.db.select().from(devices);
      const userOn = (accountId: number) => [
        ...new Set(placed.filter((d) => d.accountId === accountId).map((d) => d.userId)),
      ];
      const [onFirst, onSecond, onThird] = [userOn(first!), userOn(second!), userOn(third!)];
      expect([onFirst.length, onSecond.length, onThird.length]).toEqual([4, 4, 4]);

      // An admin takes the third account out; the second's key stops working while people still pay.
      const admin = await adminCookie(pool.t);
      const disabled = await pool.t.app.inject({
        method: 'POST',
        url: `/api/admin/accounts/${third}/disable`,
        headers: { cookie: admin, ...SAME_ORIGIN },
      });
      expect(disabled.statusCode).toBe(200);
      expect(disabled.json()).toMatchObject({
        state: 'disabled',
        reason: expect.stringMatching(/^Disabled by pool_admin_\d+ on \d{4}-\d{2}-\d{2}\.$/),
      });
      pool.asc.account(KEYS[1]!.keyId).revokeKey();
      for (const person of people.slice(12)) await paidDevices(pool, person, ['iPhone15,2', 'iPad13,1']);
      const rows = await settle(pool, [second!, third!]);

      // Everyone is Registered on the one account left, where Apple has every device.
      expect(rows.filter((d) => d.status !== 'Registered')).toEqual([]);
      expect(new Set(rows.map((d) => d.accountId))).toEqual(new Set([first]));
      const firstOnApple = pool.asc.account(KEYS[0]!.keyId).devices;
      for (const device of rows)
        expect(firstOnApple.find((d) => d.udid === device.udid)?.id).toBe(device.appleDeviceId);
      // Removed devices still count on the accounts they left (Apple frees no slot until the membership renews).
      const views = (
        await pool.t.app.inject({ url: '/api/admin/accounts', headers: { cookie: admin, ...SAME_ORIGIN } })
      ).json() as Array<{
        key_id: string;
        state: string;
        reason: string | null;
        users: number;
        slots: Array<{ family: string; used: number }>;
      }>;
      const viewOf = (keyId: string) => views.find((v) => v.key_id === keyId)!;
      expect(viewOf(KEYS[1]!.keyId)).toMatchObject({
        state: 'rejected',
        users: 0,
        reason: expect.stringMatching(
          /^Apple refused its key on \d{4}-\d{2}-\d{2}: App Store Connect refused API key POOLKEY002/,
        ),
      });
      expect(viewOf(KEYS[1]!.keyId).slots.find((s) => s.family === 'iPhone')!.used).toBeGreaterThanOrEqual(
        onSecond.length,
      );
      expect(viewOf(KEYS[2]!.keyId)).toMatchObject({ state: 'disabled', users: 0 });
      expect(viewOf(KEYS[2]!.keyId).slots.find((s) => s.family === 'iPad')!.used).toBe(onThird.length);
      expect(viewOf(KEYS[0]!.keyId)).toMatchObject({ state: 'enabled', users: 24 });

      // The apps of those who moved are queued to be signed again; the others' stay as they were.
      const signs = await pool.t.database.db.select().from(signRequests);
      const moved = new Set([...onSecond, ...onThird]);
      for (const sign of signs) {
        expect([sign.userId, sign.status, sign.state]).toEqual(
          moved.has(sign.userId) ? [sign.userId, 'Pending', 'queued'] : [sign.userId, 'Done', 'idle'],
        );
      }
      // What the sign worker reads next: a profile the first account made, listing the person's devices.
      const person = onThird[0]!;
      const material = (await pool.t.services.signing.signingMaterial(person))!;
      const theirs = rows
        .filter((d) => d.userId === person)
        .map((d) => d.udid)
        .sort();
      expect(material.udids).toEqual(theirs);
      expect([...parseProfile(material.profile).provisionedDevices].sort()).toEqual(theirs);
      expect(pool.asc.account(KEYS[0]!.keyId).profiles.map((p) => p.uuid.toLowerCase())).toContain(
        material.profileUuid.toLowerCase(),
      );
      const [profileRow] = await pool.t.database.db
        .select()
        .from(userProfiles)
        .where(eq(userProfiles.userId, person));
      expect(profileRow!.accountId).toBe(first);

      const audit = await pool.t.database.db
        .select()
        .from(auditLog)
        .where(inArray(auditLog.action, ['disable-account', 'reject-account', 'move-devices']));
      expect(audit.filter((a) => a.action === 'disable-account').map((a) => a.actor)).toEqual([
        expect.stringMatching(/^pool_admin_/),
      ]);
      expect(audit.filter((a) => a.action === 'reject-account').map((a) => a.actor)).toEqual([
        'sideport (account pool)',
      ]);
      expect(audit.filter((a) => a.action === 'move-devices')).toHaveLength(moved.size);
      expect(pool.asc.violations).toEqual([]);
      expect(new Set(pool.asc.authFailures)).toEqual(new Set(['the key is revoked']));
    },
  );

  it('notices a key Apple stopped taking when it signs, and the next pass moves the person', async () => {
    const pool = await startPool(kind, { configured: 2 });
    const people = [`signer_${kind}_0`, `signer_${kind}_1`];
    for (const person of people) await paidDevices(pool, person, ['iPhone15,2']);
    await settle(pool);
    const ids = await pool.accountIds();
    const onSecond = (await pool.t.database.db.select().from(devices)).find(
      (d) => d.accountId === ids[KEYS[1]!.keyId],
    )!;
    pool.asc.account(KEYS[1]!.keyId).revokeKey();
    // Its first sign: the certificate is made under a lock, where Apple refuses the key.
    await expect(pool.t.services.signing.signingMaterial(onSecond.userId)).rejects.toThrow(
      /^App Store Connect refused API key POOLKEY002/,
    );
    await expect
      .poll(
        async () =>
          (
            await pool.t.database.db
              .select()
              .from(developerAccounts)
              .where(eq(developerAccounts.id, ids[KEYS[1]!.keyId]!))
          )[0]!.state,
      )
      .toBe('rejected');
    const rows = await settle(pool, [ids[KEYS[1]!.keyId]!]);
    expect(rows.find((d) => d.id === onSecond.id)!.accountId).toBe(ids[KEYS[0]!.keyId]);
    const material = (await pool.t.services.signing.signingMaterial(onSecond.userId))!;
    expect(material.udids).toEqual([onSecond.udid]);
    expect(pool.asc.account(KEYS[0]!.keyId).certificates.map((c) => c.id)).toHaveLength(1);
    expect(pool.asc.violations).toEqual([]);
  });

  it('leaves the devices of an account whose key a process lacks where they are, and says so', async () => {
    const pool = await startPool(kind, { configured: 2 });
    const people = [`kept_${kind}_0`, `kept_${kind}_1`];
    for (const person of people) await paidDevices(pool, person, ['iPhone15,2']);
    const before = await settle(pool);
    const ids = await pool.accountIds();
    const onSecond = before.find((d) => d.accountId === ids[KEYS[1]!.keyId])!;
    // Another process, started without ASC_ACCOUNTS_FILE: it knows the first key only.
    const { t } = pool;
    const partial = createAccountPool({
      db: t.database.db,
      secrets: t.services.secrets,
      clock: () => now,
      bus: t.services.bus,
      devices: t.services.devices,
      resign: { resignArtifacts: async () => 0 },
      audit: t.services.audit.record,
      configured: [{ keyId: KEYS[0]!.keyId, issuerId: KEYS[0]!.issuerId, privateKeyPem: KEYS[0]!.keyPem }],
      client: (key) => createAscClient({ key, baseUrl: pool.asc.url, clock: () => now }),
      slotsPerFamily: 100,
      log: { info() {}, warn() {} },
    });
    await partial.registrar.beforePass();
    expect(await t.database.db.select().from(devices)).toEqual(before);
    await expect(partial.identityOf(onSecond.userId)).rejects.toThrow(
      `This process has no key for developer account ${KEYS[1]!.keyId}, which signs for this person: give it the configuration the servers have (ASC_ACCOUNTS_FILE).`,
    );
    const second = (await partial.list()).find((a) => a.key_id === KEYS[1]!.keyId)!;
    expect(second).toMatchObject({ state: 'enabled', users: 1 });
    expect(second.reason).toBe(
      "This server's configuration (ASC_KEY_ID or ASC_ACCOUNTS_FILE) has no key for it, so no device goes to it; disable it to move its devices.",
    );
  });

  it('refuses a device’s payment before the checkout when no account can take it, and still takes another family’s', async () => {
    const pool = await startPool(kind, { configured: 2, limit: 2 });
    const ids = await pool.accountIds();
    // Both accounts' two iPhone slots taken.
    const owners = [];
    for (let i = 0; i < 4; i++) owners.push(`full_${kind}_${i}`);
    for (const owner of owners) await paidDevices(pool, owner, ['iPhone15,2']);
    await settle(pool);
    expect(appleCounts(pool.asc)).toEqual([{ IPHONE: 2 }, { IPHONE: 2 }]);
    const admin = await adminCookie(pool.t);
    const renews = new Date(now.getTime() + 30 * 86_400_000).toISOString().slice(0, 10);
    const patched = await pool.t.app.inject({
      method: 'PATCH',
      url: `/api/admin/accounts/${ids[KEYS[1]!.keyId]}`,
      headers: { cookie: admin, ...SAME_ORIGIN },
      payload: { membership_renews_at: renews },
    });
    expect(patched.json()).toMatchObject({ membership_renews_at: renews });

    const buyer = `buyer_${kind}`;
    const cookie = await signedInUser(pool.t, buyer);
    await enrollDevice(pool.t, cookie, { UDID: '00008120-00000000000B0001', PRODUCT: 'iPhone15,2' });
    await enrollDevice(pool.t, cookie, { UDID: '00008120-00000000000B0002', PRODUCT: 'iPad13,1' });
    pool.asc.setDeviceClass('00008120-00000000000B0002', 'IPAD');
    const before = await snapshotDatabase(pool.t.database.db);
    const refused = await pool.t.app.inject({
      url: '/api/pay/device/0',
      headers: { cookie, ...SAME_ORIGIN },
    });
    expect(refused.statusCode).toBe(409);
    expect(refused.headers['content-type']).toMatch(/^text\/plain/);
    expect(refused.body).toBe(
      `Every Apple developer account of this server is full for iPhones this membership year, so this iPhone cannot be registered now. Nothing was charged; please try again after ${renews}.`,
    );
    expect(changedTables(before, await snapshotDatabase(pool.t.database.db))).toEqual({});

    // An iPad is another family: it pays, and is registered.
    const started = await pool.t.app.inject({
      url: '/api/pay/device/1',
      headers: { cookie, ...SAME_ORIGIN },
    });
    expect(started.statusCode).toBe(200);
    const checkout = new URL((started.json() as { url: string }).url).pathname;
    const paid = await pool.t.app.inject({
      method: 'POST',
      url: `${checkout}/pay`,
      headers: { cookie, ...SAME_ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
      payload: '',
    });
    expect(paid.statusCode).toBe(303);
    const rows = await settle(pool);
    expect(rows.filter((d) => d.userId === buyer).map((d) => [d.product, d.status])).toEqual([
      ['iPhone15,2', 'Add'],
      ['iPad13,1', 'Registered'],
    ]);
    expect(
      appleCounts(pool.asc)
        .map((c) => c.IPAD ?? 0)
        .reduce((a, b) => a + b),
    ).toBe(1);
  });

  it('moves a person whose account is full in a family, every device, to an account an admin added with room for them all', async () => {
    const pool = await startPool(kind, { configured: 1, onApple: 2, limit: 3 });
    const [mover, stayer] = [`mover_${kind}`, `stayer_${kind}`];
    await paidDevices(pool, mover, ['iPhone15,2', 'iPhone14,5']);
    await paidDevices(pool, stayer, ['iPhone16,1']);
    await settle(pool);
    await doneSign(pool.t, mover, 700);
    const admin = await adminCookie(pool.t);
    const asAdmin = { cookie: admin, ...SAME_ORIGIN };

    // A key Apple does not take is refused, and nothing is stored.
    const before = await snapshotDatabase(pool.t.database.db);
    const stranger = await pool.t.app.inject({
      method: 'POST',
      url: '/api/admin/accounts',
      headers: asAdmin,
      payload: { key_id: KEYS[1]!.keyId, issuer_id: KEYS[1]!.issuerId, private_key: newP8() },
    });
    expect(stranger.statusCode).toBe(400);
    expect(stranger.body).toMatch(
      /^App Store Connect refused this key \(Apple said: ".*"\)\. Check the key id, the issuer id and the \.p8 text, and that the key has the Admin role\.$/,
    );
    expect(changedTables(before, await snapshotDatabase(pool.t.database.db))).toEqual({});

    const added = await pool.t.app.inject({
      method: 'POST',
      url: '/api/admin/accounts',
      headers: asAdmin,
      // As a one-line field holds it.
      payload: {
        name: 'Second team',
        key_id: KEYS[1]!.keyId,
        issuer_id: KEYS[1]!.issuerId,
        private_key: KEYS[1]!.keyPem.replace(/\n/g, '\\n'),
      },
    });
    expect(added.statusCode).toBe(201);
    expect(added.json()).toMatchObject({
      name: 'Second team',
      source: 'console',
      primary: false,
      state: 'enabled',
      users: 0,
    });
    const [stored] = await pool.t.database.db
      .select()
      .from(developerAccounts)
      .where(eq(developerAccounts.keyId, KEYS[1]!.keyId));
    expect(stored!.sealedPrivateKey).toMatch(/^v1\./);
    expect(stored!.sealedPrivateKey).not.toContain('PRIVATE KEY');
    const again = await pool.t.app.inject({
      method: 'POST',
      url: '/api/admin/accounts',
      headers: asAdmin,
      payload: {
        key_id: 'OTHERKEY01',
        issuer_id: KEYS[1]!.issuerId.toUpperCase(),
        private_key: KEYS[1]!.keyPem,
      },
    });
    expect(again.statusCode).toBe(409);
    expect(again.body).toBe(
      `This team is already in the pool with key ${KEYS[1]!.keyId} (Second team): one key per team, since its devices count once.`,
    );

    // The first account's three iPhone slots are taken; the mover's third iPhone takes them all to the second.
    const [third] = await paidDevices(pool, mover, ['iPhone17,1']);
    const rows = await settle(pool);
    const ids = await pool.accountIds();
    const moverRows = rows.filter((d) => d.userId === mover);
    expect(moverRows.map((d) => [d.status, d.accountId])).toEqual(
      moverRows.map(() => ['Registered', ids[KEYS[1]!.keyId]]),
    );
    expect(
      pool.asc
        .account(KEYS[1]!.keyId)
        .devices.map((d) => d.udid)
        .sort(),
    ).toEqual(moverRows.map((d) => d.udid).sort());
    expect(moverRows.find((d) => d.id === third!.id)!.appleDeviceId).toBe(
      pool.asc.account(KEYS[1]!.keyId).devices.find((d) => d.udid === third!.udid)!.id,
    );
    expect(rows.find((d) => d.userId === stayer)!.accountId).toBe(ids[KEYS[0]!.keyId]);
    const [sign] = await pool.t.database.db.select().from(signRequests).where(eq(signRequests.userId, mover));
    expect([sign!.status, sign!.state]).toEqual(['Pending', 'queued']);

    // The devices that left still hold their slots until the membership renews; then only the stayer's does.
    const iPhonesOfFirst = async () => {
      const views = (
        await pool.t.app.inject({ url: '/api/admin/accounts', headers: asAdmin })
      ).json() as Array<{
        key_id: string;
        users: number;
        membership_renews_at: string | null;
        slots: Array<{ family: string; used: number; free: number }>;
      }>;
      const view = views.find((v) => v.key_id === KEYS[0]!.keyId)!;
      return {
        users: view.users,
        renews: view.membership_renews_at,
        ...view.slots.find((slot) => slot.family === 'iPhone')!,
      };
    };
    expect(await iPhonesOfFirst()).toMatchObject({ users: 1, used: 3, free: 0, renews: null });
    const tomorrow = new Date(now.getTime() + 86_400_000).toISOString().slice(0, 10);
    const set = await pool.t.app.inject({
      method: 'PATCH',
      url: `/api/admin/accounts/${ids[KEYS[0]!.keyId]}`,
      headers: asAdmin,
      payload: { membership_renews_at: tomorrow },
    });
    expect(set.statusCode).toBe(200);
    const farOff = await pool.t.app.inject({
      method: 'PATCH',
      url: `/api/admin/accounts/${ids[KEYS[0]!.keyId]}`,
      headers: asAdmin,
      payload: {
        membership_renews_at: new Date(now.getTime() + 500 * 86_400_000).toISOString().slice(0, 10),
      },
    });
    expect(farOff.statusCode).toBe(400);
    expect(farOff.body).toBe(
      'The membership renewal date is at most a year away: give the next renewal, as Apple shows it on the membership page.',
    );
    expect(await iPhonesOfFirst()).toMatchObject({ used: 3, free: 0, renews: tomorrow });
    now = new Date(now.getTime() + 2 * 86_400_000);
    const nextYear = new Date(`${tomorrow}T00:00:00Z`);
    nextYear.setUTCFullYear(nextYear.getUTCFullYear() + 1);
    expect(await iPhonesOfFirst()).toMatchObject({
      used: 1,
      free: 2,
      renews: nextYear.toISOString().slice(0, 10),
    });
    const audit = await pool.t.database.db
      .select()
      .from(auditLog)
      .where(inArray(auditLog.action, ['add-account', 'move-devices', 'set-account-renewal']));
    expect(audit.map((a) => a.action).sort()).toEqual(['add-account', 'move-devices', 'set-account-renewal']);
    expect(pool.asc.violations).toEqual([]);
  });

  it(
    'keeps a past renewal date as the next renewal it rolls to, and audits that date',
    { timeout: 120_000 },
    async () => {
      const pool = await startPool(kind, { configured: 1 });
      const id = (await pool.accountIds())[KEYS[0]!.keyId]!;
      const asAdmin = { cookie: await adminCookie(pool.t), ...SAME_ORIGIN };
      const past = new Date(now.getTime() - 30 * 86_400_000).toISOString().slice(0, 10);
      const rolled = new Date(`${past}T00:00:00Z`);
      rolled.setUTCFullYear(rolled.getUTCFullYear() + 1);
      const next = rolled.toISOString().slice(0, 10);

      const set = await pool.t.app.inject({
        method: 'PATCH',
        url: `/api/admin/accounts/${id}`,
        headers: asAdmin,
        payload: { membership_renews_at: past },
      });
      expect(set.statusCode).toBe(200);
      expect(set.json()).toMatchObject({ membership_renews_at: next });
      const [row] = await pool.t.database.db
        .select()
        .from(developerAccounts)
        .where(eq(developerAccounts.id, id));
      expect(row!.membershipRenewsAt!.toISOString().slice(0, 10)).toBe(next);
      const audit = await pool.t.database.db
        .select()
        .from(auditLog)
        .where(eq(auditLog.action, 'set-account-renewal'));
      expect(audit.map((a) => a.subject)).toEqual([
        { id: String(id), key_id: KEYS[0]!.keyId, renews_at: next },
      ]);
    },
  );

  it(
    'takes a key in SEC1 form as the PKCS#8 Apple issues, and says only what Apple said as Apple',
    { timeout: 120_000 },
    async () => {
      const pool = await startPool(kind, { configured: 1, onApple: 2 });
      const asAdmin = { cookie: await adminCookie(pool.t), ...SAME_ORIGIN };
      const add = (privateKey: string) =>
        pool.t.app.inject({
          method: 'POST',
          url: '/api/admin/accounts',
          headers: asAdmin,
          payload: { key_id: KEYS[1]!.keyId, issuer_id: KEYS[1]!.issuerId, private_key: privateKey },
        });
      // Not a P-256 key at all: refused here, before App Store Connect is asked.
      const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
        .privateKey.export({ type: 'pkcs8', format: 'pem' })
        .toString();
      const refused = await add(rsa);
      expect([refused.statusCode, refused.body]).toEqual([
        400,
        'The private key must be the text of the AuthKey .p8 file (a PEM PRIVATE KEY on the P-256 curve).',
      ]);
      // Apple does not know this key: its own words are quoted as Apple's, nothing else is.
      const unknown = await add(newP8());
      expect(unknown.statusCode).toBe(400);
      expect(unknown.body).toMatch(
        /^App Store Connect refused this key \(Apple said: "[^"]+"\)\. Check the key id/,
      );
      expect(unknown.body).not.toContain('ASC_PRIVATE_KEY');

      const sec1 = createPrivateKey(KEYS[1]!.keyPem).export({ type: 'sec1', format: 'pem' }).toString();
      expect(sec1).toContain('-----BEGIN EC PRIVATE KEY-----');
      const added = await add(sec1);
      expect([added.statusCode, added.json()]).toEqual([201, expect.objectContaining({ state: 'enabled' })]);
      const [stored] = await pool.t.database.db
        .select()
        .from(developerAccounts)
        .where(eq(developerAccounts.keyId, KEYS[1]!.keyId));
      expect(
        pool.t.services.secrets.open(stored!.sealedPrivateKey!, 'asc-private-key').toString('utf8'),
      ).toBe(KEYS[1]!.keyPem.trim());
    },
  );
});

describe.each(databaseKinds)('the dev identity on %s', (kind) => {
  it('is one identity with no accounts and no device limits', async () => {
    const t = await createTestApp(kind);
    try {
      const admin = await adminCookie(t);
      const listed = await t.app.inject({
        url: '/api/admin/accounts',
        headers: { cookie: admin, ...SAME_ORIGIN },
      });
      expect(listed.json()).toEqual([]);
      const added = await t.app.inject({
        method: 'POST',
        url: '/api/admin/accounts',
        headers: { cookie: admin, ...SAME_ORIGIN },
        payload: { key_id: KEYS[0]!.keyId, issuer_id: KEYS[0]!.issuerId, private_key: KEYS[0]!.keyPem },
      });
      expect(added.statusCode).toBe(409);
      expect(added.body).toBe(
        'The dev identity signs on this server: one identity with no device limits. Set ASC_KEY_ID, ASC_ISSUER_ID and ASC_PRIVATE_KEY to sign with Apple developer accounts, then add more here.',
      );
    } finally {
      await t.close();
    }
  });
});
