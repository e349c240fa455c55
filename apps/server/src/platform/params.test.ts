import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changedTables, snapshotDatabase } from '../test/db-snapshot.js';
import { createTestApp, databaseKinds, signedInUser, type TestApp } from '../test/harness.js';
import { MAX_ID, idParam } from './params.js';

describe('idParam', () => {
  const appId = idParam('app_id');
  it('takes whole numbers up to what a bigint column and a JavaScript number both hold', () => {
    expect(appId.parse('0')).toBe(0);
    expect(appId.parse('284882215')).toBe(284882215);
    expect(appId.parse(String(MAX_ID))).toBe(MAX_ID);
  });
  it.each([
    '9007199254740992',
    '9223372036854775807',
    '9223372036854775808',
    '18446744073709551616',
    '1e3',
    '-1',
    '1.5',
    ' 1',
    '',
    '\u0000',
  ])('refuses %j with one sentence', (raw) => {
    const result = appId.safeParse(raw);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toBe(`app_id must be a whole number from 0 to ${MAX_ID}.`);
  });
});

describe.each(databaseKinds)('bad path parameters on %s', (kind) => {
  let t: TestApp;
  let user: string;
  let admin: string;
  beforeAll(async () => {
    t = await createTestApp(kind, { env: { ITUNES_BASE_URL: 'http://127.0.0.1:9' } });
    user = await signedInUser(t, `params_user_${kind}`);
    admin = await signedInUser(t, `params_admin_${kind}`, 1);
  });
  afterAll(() => t.close());

  const request = (method: 'GET' | 'POST' | 'DELETE', url: string, cookie: string) =>
    t.app.inject({ method, url, headers: { cookie, 'sec-fetch-site': 'same-origin' } });

  it.each([
    ['GET', '/api/search/kr/%00', 'user', 'Keywords may not contain control characters.'],
    ['GET', '/api/search/kr/a%01b', 'user', 'Keywords may not contain control characters.'],
    ['GET', '/api/search/kr/%7F', 'user', 'Keywords may not contain control characters.'],
    ['GET', '/billing/dev-checkout/%00', 'user', 'This checkout id may not contain control characters.'],
    ['POST', '/billing/dev-checkout/%00/pay', 'user', 'This checkout id may not contain control characters.'],
    [
      'DELETE',
      '/api/queue/9223372036854775808/1',
      'admin',
      `app_id must be a whole number from 0 to ${MAX_ID}.`,
    ],
    [
      'DELETE',
      '/api/app/1/9223372036854775807',
      'admin',
      `app_ver_id must be a whole number from 0 to ${MAX_ID}.`,
    ],
    [
      'DELETE',
      '/api/queue/black/9007199254740992/0',
      'admin',
      `app_id must be a whole number from 0 to ${MAX_ID}.`,
    ],
    [
      'GET',
      '/api/latest/0?anchor=9223372036854775808',
      'user',
      `anchor must be a whole number from 0 to ${MAX_ID}.`,
    ],
  ] as const)('%s %s answers 400 with a sentence and changes nothing', async (method, url, who, sentence) => {
    const before = await snapshotDatabase(t.database.db);
    const res = await request(method, url, who === 'admin' ? admin : user);
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.body).toBe(sentence);
    expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
  });

  it('still looks up the largest id it takes', async () => {
    const res = await request('DELETE', `/api/queue/${MAX_ID}/${MAX_ID}`, admin);
    expect(res.statusCode).toBe(404);
    expect(res.body).toBe('This queue entry was not found.');
  });
});
