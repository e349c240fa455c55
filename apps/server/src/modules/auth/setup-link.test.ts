import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { rateLimits, sessions, settings, users } from '../../db/schema/index.js';
import {
  createTestApp,
  databaseKinds,
  sessionCookie,
  signedInUser,
  type TestApp,
} from '../../test/harness.js';

const md5 = (s: string) => createHash('md5').update(s).digest('hex');
const SAME_ORIGIN = { 'sec-fetch-site': 'same-origin' };

describe.each(databaseKinds)('the first admin with a setup link on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(kind);
  });
  afterAll(() => t.close());
  // Each test starts as a fresh installation: no account, no link.
  beforeEach(async () => {
    const { db } = t.database;
    await db.delete(sessions);
    await db.delete(users);
    await db.delete(settings).where(sql`${settings.key} like 'setup%'`);
    await db.delete(rateLimits);
  });

  const createAdmin = (token: string, id: string, headers: Record<string, string> = SAME_ORIGIN) =>
    t.app.inject({
      method: 'POST',
      url: `/api/setup/${token}`,
      headers,
      payload: { id, pw: md5('a long password') },
    });
  const check = (token: string) => t.app.inject({ url: `/api/setup/${token}`, headers: SAME_ORIGIN });
  const admins = async () =>
    (
      await t.database.db
        .select({ id: users.id })
        .from(users)
        .where(sql`${users.grade} > 0`)
    ).map((u) => u.id);

  it('creates the admin once: signed in with grade 1, and the link then says an admin exists', async () => {
    const token = (await t.services.setup.issue())!;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await check(token)).statusCode).toBe(204);

    const created = await createAdmin(token, 'operator');
    expect(created.statusCode).toBe(200);
    expect(created.json()).toEqual({ grade: 1 });
    const console = await t.app.inject({
      url: '/api/admin/setup',
      headers: { cookie: sessionCookie(created), ...SAME_ORIGIN },
    });
    expect(console.statusCode).toBe(200);

    const again = await createAdmin(token, 'intruder');
    expect(again.statusCode).toBe(410);
    expect(again.body).toBe('An admin account exists, so this setup link no longer works. Sign in instead.');
    expect((await check(token)).statusCode).toBe(410);
    expect(await admins()).toEqual(['operator']);
    expect(await t.services.auth.findUser('intruder')).toBeUndefined();
  });

  it('keeps only the hash of the token', async () => {
    const token = (await t.services.setup.issue())!;
    const stored = await t.database.db.select().from(settings);
    expect(JSON.stringify(stored)).not.toContain(token);
    expect(stored.map((row) => row.value)).toContain(createHash('sha256').update(token).digest('hex'));
  });

  it('refuses another token and a link an earlier start printed, changing nothing', async () => {
    const old = (await t.services.setup.issue())!;
    const current = (await t.services.setup.issue())!;
    for (const token of [old, 'B'.repeat(43)]) {
      const res = await createAdmin(token, 'guesser');
      expect(res.statusCode).toBe(404);
      expect(res.body).toBe('This setup link is not valid. Use the link the server printed last at start.');
    }
    expect((await check('short')).statusCode).toBe(400);
    expect(await admins()).toEqual([]);
    expect((await createAdmin(current, 'operator')).statusCode).toBe(200);
  });

  it('leaves the link usable after a taken id or a cross-site attempt', async () => {
    await signedInUser(t, 'taken');
    const token = (await t.services.setup.issue())!;
    const taken = await createAdmin(token, 'TAKEN');
    expect(taken.statusCode).toBe(409);
    expect(taken.body).toBe('This id is already taken.');
    const crossSite = await createAdmin(token, 'operator', { 'sec-fetch-site': 'cross-site' });
    expect(crossSite.statusCode).toBe(403);
    expect(await admins()).toEqual([]);
    expect((await createAdmin(token, 'operator')).statusCode).toBe(200);
  });

  it('makes no link once an admin exists, however it was made, and closes an open one', async () => {
    const token = (await t.services.setup.issue())!;
    await signedInUser(t, 'cli-admin', 1);
    expect((await createAdmin(token, 'operator')).statusCode).toBe(410);
    expect(await t.services.setup.issue()).toBeUndefined();
    expect(
      await t.database.db
        .select()
        .from(settings)
        .where(sql`${settings.key} like 'setup%'`),
    ).toEqual([]);
  });
});

describe('setup link attempts', () => {
  it('are limited per address like sign-ups', async () => {
    const t = await createTestApp('pglite', { env: { SIGN_IN_LIMIT_PER_ADDRESS: '2' } });
    try {
      const token = (await t.services.setup.issue())!;
      const attempt = () =>
        t.app.inject({
          method: 'POST',
          url: `/api/setup/${'C'.repeat(43)}`,
          payload: { id: 'guesser', pw: md5('x') },
        });
      expect((await attempt()).statusCode).toBe(404);
      expect((await attempt()).statusCode).toBe(404);
      const blocked = await attempt();
      expect(blocked.statusCode).toBe(429);
      expect(blocked.body).toBe('Too many attempts from this address. Please wait a few minutes.');
      expect(token).toBeDefined();
    } finally {
      await t.close();
    }
  });
});
