import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../test/harness.js';

/** The directives of a Content-Security-Policy header, by name. */
const directives = (header: unknown) =>
  Object.fromEntries(
    String(header)
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .map(([name, ...values]) => [name!, values]),
  );

describe('security headers', () => {
  let plain: TestApp;
  let https: TestApp;
  beforeAll(async () => {
    plain = await createTestApp('pglite', { web: true });
    https = await createTestApp('pglite', { web: true, env: { PUBLIC_URL: 'https://sideport.example' } });
  });
  afterAll(async () => {
    await plain.close();
    await https.close();
  });

  it('sends a Content-Security-Policy with the web app, its API answers and its errors', async () => {
    for (const url of ['/', '/latest', '/api/latest/0', '/api/info', '/api/nothing']) {
      const res = await plain.app.inject({ url });
      const csp = directives(res.headers['content-security-policy']);
      expect(csp['default-src'], url).toEqual(["'self'"]);
      expect(csp['script-src'], url).toEqual(["'self'"]);
      expect(csp['style-src'], url).toEqual(["'self'"]);
      expect(csp['object-src'], url).toEqual(["'none'"]);
      expect(csp['frame-ancestors'], url).toEqual(["'none'"]);
      // The app card's flags (apps/web flagUrl) and the store's icons, on its current and older hosts.
      expect(csp['img-src'], url).toEqual([
        "'self'",
        'data:',
        'https://flagcdn.com',
        'https://*.mzstatic.com',
        'https://*.phobos.apple.com',
      ]);
      expect(res.headers['x-frame-options'], url).toBe('DENY');
      expect(res.headers['x-content-type-options'], url).toBe('nosniff');
      expect(res.headers['referrer-policy'], url).toBe('same-origin');
    }
  });

  it('sends HSTS and upgrades requests only when PUBLIC_URL is https', async () => {
    const overHttp = await plain.app.inject({ url: '/' });
    expect(overHttp.headers['strict-transport-security']).toBeUndefined();
    expect(directives(overHttp.headers['content-security-policy'])['upgrade-insecure-requests']).toBeUndefined();

    const overHttps = await https.app.inject({ url: '/' });
    expect(overHttps.headers['strict-transport-security']).toBe('max-age=31536000');
    expect(directives(overHttps.headers['content-security-policy'])['upgrade-insecure-requests']).toEqual([]);
  });

  it('keeps the test-mode checkout page on its own stricter policy', async () => {
    const res = await plain.app.inject({ url: '/billing/dev-portal' });
    expect(res.statusCode).toBe(401);
    expect(directives(res.headers['content-security-policy'])['default-src']).toEqual(["'none'"]);
  });
});
