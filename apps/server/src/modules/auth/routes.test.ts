import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateLimits, users } from '../../db/schema/index.js';
import { createTestApp, databaseKinds, sessionCookie, WEB_CLIENT, type TestApp } from '../../test/harness.js';

const md5 = (s: string) => createHash('md5').update(s).digest('hex');
const PW = md5('correct horse');

describe.each(databaseKinds)('accounts on %s', (kind) => {
  let t: TestApp;
  let seq = 0;
  const freshId = () => `user${++seq}_${kind}`;
  const post = (url: string, payload: unknown, headers: Record<string, string> = {}) =>
    t.app.inject({ method: 'POST', url, payload: payload as object, headers });
  const userCount = async () =>
    (await t.database.db.select({ n: sql<number>`count(*)::int` }).from(users))[0]!.n;

  beforeAll(async () => {
    // Every inject comes from 127.0.0.1: lift the per-address cap here; its own test below sets it low.
    t = await createTestApp(kind, { env: { SIGN_IN_LIMIT_PER_ADDRESS: '10000' } });
  });
  afterAll(() => t.close());

  describe('sign-up', () => {
    it('creates the account, answers {"grade":0} and opens a session', async () => {
      const id = freshId();
      const res = await post('/api/sign-up', { id, pw: PW });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ grade: 0 });
      const cookie = res.cookies.find((c) => c.name === 'sideport_session');
      expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
      const info = await t.app.inject({ url: '/api/info', headers: { cookie: sessionCookie(res) } });
      expect(info.statusCode).toBe(200);
      expect(info.json()).toMatchObject({ Id: id, premium: false, expired_date: null, device_info: [] });
    });

    it('stores only argon2id of the md5, never the md5 itself', async () => {
      const id = freshId();
      await post('/api/sign-up', { id, pw: PW });
      const [row] = await t.database.db
        .select()
        .from(users)
        .where(sql`${users.id} = ${id}`);
      expect(row!.passwordHash).toMatch(/^\$argon2id\$/);
      expect(row!.passwordHash).not.toContain(PW);
    });

    it('refuses a taken id, whatever its case, with 409 and a sentence', async () => {
      const id = freshId();
      await post('/api/sign-up', { id, pw: PW });
      const before = await userCount();
      const res = await post('/api/sign-up', { id: id.toUpperCase(), pw: md5('other password') });
      expect(res.statusCode).toBe(409);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      expect(res.body).toBe('This id is already taken.');
      expect(await userCount()).toBe(before);
    });

    const badBodies: Array<[string, unknown, string]> = [
      ['missing id', { pw: PW }, 'Id is required.'],
      ['missing pw', { id: 'abcd' }, 'Password is required.'],
      ['id of the wrong type', { id: 1234, pw: PW }, 'Id must be a string.'],
      ['pw of the wrong type', { id: 'abcd', pw: 12345678 }, 'Password must be a string.'],
      ['id shorter than 4', { id: 'abc', pw: PW }, 'Please enter at least 4 characters for ID'],
      ['overlong id', { id: 'a'.repeat(33), pw: PW }, 'Id must be at most 32 characters.'],
      ['id with spaces', { id: 'ab cd', pw: PW }, 'Id may contain only letters, digits and . _ @ -'],
      [
        'non-hex pw',
        { id: 'abcd', pw: 'z'.repeat(32) },
        'Password must be sent as an MD5 hash (32 hex characters).',
      ],
      [
        'plain-text pw',
        { id: 'abcd', pw: 'password123' },
        'Password must be sent as an MD5 hash (32 hex characters).',
      ],
      ['an array body', [1, 2], 'Send a JSON object with id and pw.'],
      ['the id __proto__', { id: '__proto__', pw: PW }, 'This id is reserved; please choose another.'],
      ['the id constructor', { id: 'constructor', pw: PW }, 'This id is reserved; please choose another.'],
      ['the id Prototype', { id: 'Prototype', pw: PW }, 'This id is reserved; please choose another.'],
      [
        'the id hasOwnProperty',
        { id: 'hasOwnProperty', pw: PW },
        'This id is reserved; please choose another.',
      ],
    ];
    it.each(badBodies)('answers 400 for %s and stores nothing', async (_name, payload, message) => {
      const before = await userCount();
      const res = await post('/api/sign-up', payload);
      expect(res.statusCode).toBe(400);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      expect(res.body).toBe(message.endsWith('.') ? message : `${message}.`);
      expect(await userCount()).toBe(before);
    });

    it('answers 400 for a body that is not JSON', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/sign-up',
        headers: { 'content-type': 'application/json' },
        payload: '{"id": "abcd",',
      });
      expect(res.statusCode).toBe(400);
      expect(res.body).toBe('The request body is not valid JSON.');
    });

    it('answers 415 for a form-encoded body', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/sign-up',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'id=abcd&pw=x',
      });
      expect(res.statusCode).toBe(415);
      expect(res.body).toBe('Send the request body as JSON (Content-Type: application/json).');
    });

    it('answers 413 for an oversized body and stores nothing', async () => {
      const before = await userCount();
      const res = await post('/api/sign-up', { id: freshId(), pw: PW, padding: 'x'.repeat(70 * 1024) });
      expect(res.statusCode).toBe(413);
      expect(res.body).toBe('The request body is too large.');
      expect(await userCount()).toBe(before);
    });
  });

  describe('sign-in', () => {
    it('answers the grade and opens a session', async () => {
      const id = freshId();
      await post('/api/sign-up', { id, pw: PW });
      await t.services.auth.setGrade(id, 3);
      const res = await post('/api/sign-in', { id, pw: PW.toUpperCase() });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ grade: 3 });
      const info = await t.app.inject({ url: '/api/info', headers: { cookie: sessionCookie(res) } });
      expect(info.json()).toMatchObject({ Id: id });
    });

    it('gives one sentence for a wrong password and an unknown id alike', async () => {
      const id = freshId();
      await post('/api/sign-up', { id, pw: PW });
      const wrongPw = await post('/api/sign-in', { id, pw: md5('wrong') });
      const unknownId = await post('/api/sign-in', { id: freshId(), pw: PW });
      expect(wrongPw.statusCode).toBe(401);
      expect(unknownId.statusCode).toBe(401);
      expect(wrongPw.body).toBe('The id or password is not correct.');
      expect(unknownId.body).toBe(wrongPw.body);
      expect(wrongPw.cookies).toHaveLength(0);
    });

    it('limits attempts on an id from one address, even with the right password', async () => {
      const id = freshId();
      await post('/api/sign-up', { id, pw: PW });
      for (let i = 0; i < 10; i++) {
        expect((await post('/api/sign-in', { id, pw: md5(`guess ${i}`) })).statusCode).toBe(401);
      }
      const blocked = await post('/api/sign-in', { id, pw: PW });
      expect(blocked.statusCode).toBe(429);
      expect(blocked.body).toBe('Too many sign-in attempts. Please wait a few minutes and try again.');
    });
  });

  describe('sessions', () => {
    it('answers 401 on a protected route without a session or with a made-up one', async () => {
      const none = await t.app.inject({ url: '/api/info' });
      expect(none.statusCode).toBe(401);
      expect(none.body).toBe('Please sign in.');
      const forged = await t.app.inject({ url: '/api/info', headers: { cookie: 'sideport_session=forged' } });
      expect(forged.statusCode).toBe(401);
    });

    it('sign-out revokes the session on the server', async () => {
      const res = await post('/api/sign-up', { id: freshId(), pw: PW });
      const cookie = sessionCookie(res);
      const out = await t.app.inject({
        method: 'POST',
        url: '/api/sign-out',
        headers: { cookie, ...WEB_CLIENT },
      });
      expect(out.statusCode).toBe(204);
      expect(out.cookies.find((c) => c.name === 'sideport_session')?.value).toBe('');
      expect((await t.app.inject({ url: '/api/info', headers: { cookie } })).statusCode).toBe(401);
    });
  });

  describe('cross-site protection', () => {
    it('refuses a cross-site request and changes nothing', async () => {
      const before = await userCount();
      const res = await post('/api/sign-up', { id: freshId(), pw: PW }, { 'sec-fetch-site': 'cross-site' });
      expect(res.statusCode).toBe(403);
      expect(res.body).toBe('Cross-site requests are not allowed.');
      expect(await userCount()).toBe(before);
    });

    it('refuses a same-site (sibling subdomain) request and a foreign Origin', async () => {
      expect(
        (await post('/api/sign-in', { id: 'abcd', pw: PW }, { 'sec-fetch-site': 'same-site' })).statusCode,
      ).toBe(403);
      const foreign = await post('/api/sign-in', { id: 'abcd', pw: PW }, { origin: 'https://evil.example' });
      expect(foreign.statusCode).toBe(403);
    });

    it('refuses a state-changing GET sent cross-site, with a session cookie', async () => {
      const res = await post('/api/sign-up', { id: freshId(), pw: PW });
      const info = await t.app.inject({
        url: '/api/info',
        headers: { cookie: sessionCookie(res), 'sec-fetch-site': 'cross-site' },
      });
      expect(info.statusCode).toBe(403);
    });

    it('lets the site itself through', async () => {
      const sameOrigin = await post(
        '/api/sign-up',
        { id: freshId(), pw: PW },
        { 'sec-fetch-site': 'same-origin' },
      );
      expect(sameOrigin.statusCode).toBe(200);
      const viaOrigin = await post(
        '/api/sign-up',
        { id: freshId(), pw: PW },
        { origin: 'http://localhost:80', host: 'localhost:80' },
      );
      expect(viaOrigin.statusCode).toBe(200);
    });

    it('allows a typed-in address only for reading', async () => {
      expect(
        (await t.app.inject({ url: '/api/config', headers: { 'sec-fetch-site': 'none' } })).statusCode,
      ).toBe(200);
      const post_ = await post('/api/sign-up', { id: freshId(), pw: PW }, { 'sec-fetch-site': 'none' });
      expect(post_.statusCode).toBe(403);
    });

    it('leaves the self-authenticating endpoints to their own checks', async () => {
      const res = await t.app.inject({
        url: '/api/webhooks/nothing',
        headers: { 'sec-fetch-site': 'cross-site' },
      });
      expect(res.statusCode).toBe(404);
    });
  });

  it('answers an unknown API route with 404 and a sentence', async () => {
    const res = await t.app.inject({ url: '/api/nope?x=1' });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toBe('There is no GET /api/nope here.');
  });

  it('answers a malformed address with 400 and a sentence', async () => {
    const res = await t.app.inject({ url: '/api/search/kr/100%' });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toBe('This address is not valid.');
  });

  it('reports health with the database reachable', async () => {
    const res = await t.app.inject({ url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok', database: kind });
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('per-address limits', () => {
  it('limits sign-in attempts from one address across ids, and sign-ups too', async () => {
    const t = await createTestApp('pglite', { env: { SIGN_IN_LIMIT_PER_ADDRESS: '3' } });
    try {
      const signIn = (id: string) =>
        t.app.inject({ method: 'POST', url: '/api/sign-in', payload: { id, pw: PW } });
      for (const id of ['aaaa', 'bbbb', 'cccc']) expect((await signIn(id)).statusCode).toBe(401);
      expect((await signIn('dddd')).statusCode).toBe(429);
      const signUp = (id: string) =>
        t.app.inject({ method: 'POST', url: '/api/sign-up', payload: { id, pw: PW } });
      for (const id of ['eeee', 'ffff', 'gggg']) expect((await signUp(id)).statusCode).toBe(200);
      const fourth = await signUp('hhhh');
      expect(fourth.statusCode).toBe(429);
      expect(fourth.body).toBe('Too many accounts were created from this address. Please try again later.');
      expect(await t.services.auth.findUser('hhhh')).toBeUndefined();
    } finally {
      await t.close();
    }
  });
});

describe.each(databaseKinds)('sign-in limits on %s', (kind) => {
  let t: TestApp;
  let seq = 0;
  const TOO_MANY = 'Too many sign-in attempts. Please wait a few minutes and try again.';
  const signIn = (id: string, pw: string, remoteAddress: string) =>
    t.app.inject({ method: 'POST', url: '/api/sign-in', payload: { id, pw }, remoteAddress });
  /** A new account (made through the service, so no address is counted) of `grade`. */
  const account = async (grade: number) => {
    const id = `limited${++seq}_${kind}`;
    await t.services.auth.ensureUser(id, PW, grade);
    return id;
  };
  /** SIGN_IN_LIMIT_PER_ID (10) wrong passwords for `id` from `address`, each refused as wrong. */
  const guessTenTimes = async (id: string, address: string) => {
    for (let i = 0; i < 10; i++) {
      const res = await signIn(id, md5(`guess ${i}`), address);
      expect(res.statusCode).toBe(401);
      expect(res.body).toBe('The id or password is not correct.');
    }
  };

  // The defaults: SIGN_IN_LIMIT_PER_ID 10, SIGN_IN_LIMIT_PER_ADDRESS 30, a 15-minute window.
  beforeAll(async () => {
    t = await createTestApp(kind);
  });
  afterAll(() => t.close());

  it.each([
    ['a user', 0],
    ['the admin', 1],
  ])(
    'ten wrong passwords from one address do not lock %s out: the right one from another address signs in',
    async (_who, grade) => {
      const id = await account(grade);
      await guessTenTimes(id, '198.51.100.7');
      const guesser = await signIn(id, PW, '198.51.100.7');
      expect(guesser.statusCode).toBe(429);
      expect(guesser.body).toBe(TOO_MANY);
      expect(guesser.cookies).toHaveLength(0);

      const owner = await signIn(id, PW, '203.0.113.20');
      expect(owner.statusCode).toBe(200);
      expect(owner.json()).toEqual({ grade });
      const info = await t.app.inject({ url: '/api/info', headers: { cookie: sessionCookie(owner) } });
      expect(info.json()).toMatchObject({ Id: id });
      // The guessing address stays refused after the owner signed in.
      expect((await signIn(id, md5('guess 11'), '198.51.100.7')).statusCode).toBe(429);
    },
  );

  it('gives each other address one guess at an id that has had ten wrong passwords', async () => {
    const id = await account(0);
    await guessTenTimes(id, '198.51.100.8');
    const checked: number[] = [];
    for (let n = 1; n <= 5; n++) {
      const address = `192.0.2.${n}`;
      const first = await signIn(id, md5(`spray ${n}`), address);
      checked.push(first.statusCode);
      // Its second try is refused before the password is looked at, even the right one.
      const second = await signIn(id, PW, address);
      expect(second.statusCode).toBe(429);
      expect(second.body).toBe(TOO_MANY);
    }
    expect(checked).toEqual([401, 401, 401, 401, 401]);
    // The owner, from an address that has not guessed, is still let in.
    expect((await signIn(id, PW, '203.0.113.21')).statusCode).toBe(200);
  });

  it('lets the owner mistype on a quiet id and still sign in from the same address', async () => {
    const id = await account(0);
    for (let i = 0; i < 5; i++)
      expect((await signIn(id, md5(`typo ${i}`), '203.0.113.22')).statusCode).toBe(401);
    expect((await signIn(id, PW, '203.0.113.22')).statusCode).toBe(200);
    // A success gives that address its tries back: 5 + 1 + 4 + 1 attempts would be past 10 otherwise.
    for (let i = 0; i < 4; i++)
      expect((await signIn(id, md5(`typo again ${i}`), '203.0.113.22')).statusCode).toBe(401);
    expect((await signIn(id, PW, '203.0.113.22')).statusCode).toBe(200);
  });

  it('forgets the counters of ended windows at the hourly purge', async () => {
    let now = new Date('2026-03-01T10:00:00Z');
    const clocked = await createTestApp(kind, { clock: () => now });
    try {
      const count = async () =>
        (await clocked.database.db.select({ n: sql<number>`count(*)::int` }).from(rateLimits))[0]!.n;
      const from = (remoteAddress: string) =>
        clocked.app.inject({
          method: 'POST',
          url: '/api/sign-in',
          payload: { id: 'nobody', pw: PW },
          remoteAddress,
        });
      await from('198.51.100.30');
      await from('198.51.100.31');
      expect(await count()).toBeGreaterThan(0);
      now = new Date('2026-03-01T10:14:00Z');
      await clocked.services.auth.purgeExpiredSessions();
      expect(await count()).toBeGreaterThan(0);
      now = new Date('2026-03-01T10:15:00Z');
      await clocked.services.auth.purgeExpiredSessions();
      expect(await count()).toBe(0);
    } finally {
      await clocked.close();
    }
  });

  it('counts an IPv6 client by its /64, and an IPv4-mapped address as the IPv4 one', async () => {
    const limited = await createTestApp(kind, { env: { SIGN_IN_LIMIT_PER_ADDRESS: '3' } });
    try {
      const from = (remoteAddress: string) =>
        limited.app.inject({
          method: 'POST',
          url: '/api/sign-in',
          payload: { id: 'nobody', pw: PW },
          remoteAddress,
        });
      for (const address of ['2001:db8:1:2::a', '2001:db8:1:2:ffff:1:2:3', '2001:0db8:0001:0002::9']) {
        expect((await from(address)).statusCode).toBe(401);
      }
      expect((await from('2001:db8:1:2::b')).statusCode).toBe(429);
      expect((await from('2001:db8:1:3::a')).statusCode).toBe(401);

      for (const address of ['198.51.100.9', '::ffff:198.51.100.9', '198.51.100.9']) {
        expect((await from(address)).statusCode).toBe(401);
      }
      expect((await from('::ffff:198.51.100.9')).statusCode).toBe(429);
    } finally {
      await limited.close();
    }
  });
});

describe.each(databaseKinds)('behind a reverse proxy (TRUST_PROXY) on %s', (kind) => {
  const TOO_MANY = 'Too many sign-in attempts. Please wait a few minutes and try again.';
  const counterKeys = async (t: TestApp) =>
    (await t.database.db.select({ key: rateLimits.key }).from(rateLimits)).map((row) => row.key);
  /**
   * `attempts` wrong passwords on one id from one client, each with a new made-up address as the
   * X-Forwarded-For entry the client wrote itself, followed by what the proxies appended.
   */
  async function guessWithForgedAddresses(t: TestApp, appended: string, peer: string, attempts: number) {
    const statuses: number[] = [];
    const forged: string[] = [];
    for (let i = 0; i < attempts; i++) {
      forged.push(`203.0.113.${i + 1}`);
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/sign-in',
        payload: { id: `guessed_${kind}`, pw: md5(`guess ${i}`) },
        headers: { 'x-forwarded-for': `${forged.at(-1)}, ${appended}` },
        remoteAddress: peer,
      });
      statuses.push(res.statusCode);
      if (res.statusCode === 429) expect(res.body).toBe(TOO_MANY);
    }
    return { statuses, forged };
  }

  it.each([
    // nginx's $proxy_add_x_forwarded_for on this machine: the client's own header, then its address.
    ['true (one proxy)', 'true', '198.51.100.7', '127.0.0.1'],
    // A load balancer (10.0.0.2) in front of nginx: two hops.
    ['a count of two', '2', '198.51.100.7, 10.0.0.2', '127.0.0.1'],
    ["the proxies' ranges", '127.0.0.1,10.0.0.0/8', '198.51.100.7, 10.0.0.2', '127.0.0.1'],
  ])(
    'with TRUST_PROXY as %s, a forged left X-Forwarded-For entry does not escape the sign-in limit',
    // Ten argon2 checks and a server of its own each.
    { timeout: 180_000 },
    async (_how, trust, appended, peer) => {
      const t = await createTestApp(kind, { env: { TRUST_PROXY: trust } });
      try {
        const { statuses, forged } = await guessWithForgedAddresses(t, appended, peer, 60);
        // SIGN_IN_LIMIT_PER_ID (10) tries on the id from the one real address, then 429 to the end.
        expect(statuses).toEqual([...Array<number>(10).fill(401), ...Array<number>(50).fill(429)]);
        const keys = await counterKeys(t);
        expect(keys.filter((key) => forged.some((address) => key.includes(address)))).toEqual([]);
        expect(keys.filter((key) => key.includes('198.51.100.7')).length).toBeGreaterThan(0);
      } finally {
        await t.close();
      }
    },
  );
});

describe('session expiry', () => {
  it('signs the user out once the session is older than SESSION_TTL_DAYS', async () => {
    let now = new Date('2026-01-01T00:00:00Z');
    const t = await createTestApp('pglite', { env: { SESSION_TTL_DAYS: '2' }, clock: () => now });
    try {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/sign-up',
        payload: { id: 'expiring', pw: PW },
      });
      const cookie = sessionCookie(res);
      now = new Date('2026-01-02T23:00:00Z');
      expect((await t.app.inject({ url: '/api/info', headers: { cookie } })).statusCode).toBe(200);
      now = new Date('2026-01-03T00:00:01Z');
      expect((await t.app.inject({ url: '/api/info', headers: { cookie } })).statusCode).toBe(401);
    } finally {
      await t.close();
    }
  });
});

describe('OpenAPI', () => {
  it('documents the routes with the schemas that validate them', async () => {
    const t = await createTestApp('pglite');
    try {
      const res = await t.app.inject({ url: '/api/openapi.json' });
      expect(res.statusCode).toBe(200);
      const doc = res.json();
      expect(doc.openapi).toMatch(/^3\./);
      const signIn = doc.paths['/api/sign-in'].post;
      expect(signIn.requestBody.content['application/json'].schema.required).toEqual(['id', 'pw']);
      expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/api/latest/{page}', '/api/info']));
    } finally {
      await t.close();
    }
  });

  it('documents every API route, the agent protocol and the admin console included', async () => {
    const t = await createTestApp('pglite');
    try {
      const doc = (await t.app.inject({ url: '/api/openapi.json' })).json() as {
        paths: Record<string, Record<string, unknown>>;
      };
      const documented = new Set(
        Object.entries(doc.paths).flatMap(([path, methods]) =>
          Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`),
        ),
      );
      const api = t.routes.filter(
        (r) =>
          r.url.startsWith('/api/') &&
          r.method !== 'HEAD' &&
          !(r.schema as { hide?: boolean } | undefined)?.hide,
      );
      const missing = api
        .map((r) => `${r.method} ${r.url.replace(/:([A-Za-z_]+)/g, '{$1}').replace(/\*$/, '{*}')}`)
        .filter((key) => !documented.has(key));
      expect(missing).toEqual([]);
      for (const key of [
        'POST /api/agent/claim',
        'PUT /api/agent/jobs/{id}/ipa',
        'POST /api/admin/agents',
        'GET /api/admin/queue/{page}',
      ]) {
        expect(documented).toContain(key);
      }
    } finally {
      await t.close();
    }
  });
});
