import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './test/harness.js';

// Every route that needs an account, as docs/product.md lists them (Calls) and as they exist so far.
const PROTECTED: Array<[method: 'GET' | 'POST' | 'DELETE', url: string]> = [
  ['GET', '/api/info'],
  ['GET', '/api/search/kr/anything'],
  ['GET', '/api/premium'],
  ['GET', '/api/portal'],
  ['GET', '/api/pay/service/0'],
  ['GET', '/api/pay/service/5'],
  ['GET', '/api/pay/device/0'],
  ['DELETE', '/api/app/1/2'],
  ['DELETE', '/api/queue/1/2'],
  ['DELETE', '/api/queue/black/1/2'],
];

describe('protected routes', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp('pglite');
  });
  afterAll(() => t.close());

  it.each(PROTECTED)(
    '%s %s answers 401 without a session, before looking at its input',
    async (method, url) => {
      const res = await t.app.inject({ method, url });
      expect(res.statusCode).toBe(401);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      expect(res.body).toBe('Please sign in.');
    },
  );

  it('keeps the lists public', async () => {
    for (const url of ['/api/latest/0', '/api/queue/0', '/api/config', '/healthz']) {
      expect((await t.app.inject({ url })).statusCode).toBe(200);
    }
  });
});
