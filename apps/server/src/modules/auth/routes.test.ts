import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { users } from '../../db/schema/index.js';
import { createTestApp, databaseKinds, sessionCookie, WEB_CLIENT, type TestApp } from '../../test/harness.js';

const md5 = (s: string) => createHash('md5').update(s).digest('hex');
const PW = md5('correct horse');

describe.each(databaseKinds)('accounts on %s', (kind) => {
  let t: TestApp;
  let seq = 0;
  const freshId = () => `user${++seq}_${kind}`;
  const post = (url: string, payload: unknown, headers: Record<string, string> = {}) =>
    t.app.inject({ method: 'POST', url, payload: payload as object, headers });
  const userCount = async () => (await t.database.db.select({ n: sql<number>`count(*)::int` }).from(users))[0]!.n;

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
      const [row] = await t.database.db.select().from(users).where(sql`${users.id} = ${id}`);
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
      ['non-hex pw', { id: 'abcd', pw: 'z'.repeat(32) }, 'Password must be sent as an MD5 hash (32 hex characters).'],
      ['plain-text pw', { id: 'abcd', pw: 'password123' }, 'Password must be sent as an MD5 hash (32 hex characters).'],
      ['an array body', [1, 2], 'Send a JSON object with id and pw.'],
      ['the id __proto__', { id: '__proto__', pw: PW }, 'This id is reserved; please choose another.'],
      ['the id constructor', { id: 'constructor', pw: PW }, 'This id is reserved; please choose another.'],
      ['the id Prototype', { id: 'Prototype', pw: PW }, 'This id is reserved; please choose another.'],
      ['the id hasOwnProperty', { id: 'hasOwnProperty', pw: PW }, 'This id is reserved; please choose another.'],
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

    it('limits attempts per id, even with the right password', async () => {
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
      const out = await t.app.inject({ method: 'POST', url: '/api/sign-out', headers: { cookie, ...WEB_CLIENT } });
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
      expect((await post('/api/sign-in', { id: 'abcd', pw: PW }, { 'sec-fetch-site': 'same-site' })).statusCode).toBe(403);
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
      const sameOrigin = await post('/api/sign-up', { id: freshId(), pw: PW }, { 'sec-fetch-site': 'same-origin' });
      expect(sameOrigin.statusCode).toBe(200);
      const viaOrigin = await post('/api/sign-up', { id: freshId(), pw: PW }, { origin: 'http://localhost:80', host: 'localhost:80' });
      expect(viaOrigin.statusCode).toBe(200);
    });

    it('allows a typed-in address only for reading', async () => {
      expect((await t.app.inject({ url: '/api/config', headers: { 'sec-fetch-site': 'none' } })).statusCode).toBe(200);
      const post_ = await post('/api/sign-up', { id: freshId(), pw: PW }, { 'sec-fetch-site': 'none' });
      expect(post_.statusCode).toBe(403);
    });

    it('leaves the self-authenticating endpoints to their own checks', async () => {
      const res = await t.app.inject({ url: '/api/webhooks/nothing', headers: { 'sec-fetch-site': 'cross-site' } });
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
      const signIn = (id: string) => t.app.inject({ method: 'POST', url: '/api/sign-in', payload: { id, pw: PW } });
      for (const id of ['aaaa', 'bbbb', 'cccc']) expect((await signIn(id)).statusCode).toBe(401);
      expect((await signIn('dddd')).statusCode).toBe(429);
      const signUp = (id: string) => t.app.inject({ method: 'POST', url: '/api/sign-up', payload: { id, pw: PW } });
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

describe('session expiry', () => {
  it('signs the user out once the session is older than SESSION_TTL_DAYS', async () => {
    let now = new Date('2026-01-01T00:00:00Z');
    const t = await createTestApp('pglite', { env: { SESSION_TTL_DAYS: '2' }, clock: () => now });
    try {
      const res = await t.app.inject({ method: 'POST', url: '/api/sign-up', payload: { id: 'expiring', pw: PW } });
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
      const doc = (await t.app.inject({ url: '/api/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> };
      const documented = new Set(
        Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`)),
      );
      const api = t.routes.filter(
        (r) => r.url.startsWith('/api/') && r.method !== 'HEAD' && !(r.schema as { hide?: boolean } | undefined)?.hide,
      );
      const missing = api
        .map((r) => `${r.method} ${r.url.replace(/:([A-Za-z_]+)/g, '{$1}').replace(/\*$/, '{*}')}`)
        .filter((key) => !documented.has(key));
      expect(missing).toEqual([]);
      for (const key of ['POST /api/agent/claim', 'PUT /api/agent/jobs/{id}/ipa', 'POST /api/admin/agents', 'GET /api/admin/queue/{page}']) {
        expect(documented).toContain(key);
      }
    } finally {
      await t.close();
    }
  });
});
