import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../test/harness.js';
import { rawRequest, type RawAnswer } from '../test/raw-http.js';

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
    expect(
      directives(overHttp.headers['content-security-policy'])['upgrade-insecure-requests'],
    ).toBeUndefined();

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

/** Headers that describe one answer (its body, its connection), not the site's policy. */
const PER_ANSWER = new Set([
  'content-type',
  'content-length',
  'date',
  'connection',
  'keep-alive',
  'x-request-id',
  'cache-control',
  'vary',
]);
const policyHeaders = (answer: RawAnswer) =>
  Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !PER_ANSWER.has(name)));

describe.each([
  ['plain http', {}],
  ['PUBLIC_URL https', { PUBLIC_URL: 'https://sideport.example' }],
])('security headers of answers made before or outside routing (%s)', (_name, env) => {
  let t: TestApp;
  let port: number;
  let normal: Record<string, string>;
  beforeAll(async () => {
    t = await createTestApp('pglite', { env });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
    normal = policyHeaders(
      await rawRequest(port, 'GET /api/latest/0 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    );
  });
  afterAll(() => t.close());

  it('has a normal answer to compare with', () => {
    expect(normal['content-security-policy']).toContain("default-src 'self'");
    expect(normal['x-frame-options']).toBe('DENY');
    if ('PUBLIC_URL' in env) expect(normal['strict-transport-security']).toBe('max-age=31536000');
  });

  it.each([
    [
      'an address the router cannot decode',
      'GET /api/%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      400,
      'This address is not valid.',
    ],
    [
      'a Content-Length Node refuses',
      'POST /api/sign-in HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
      400,
      'The Content-Length header is not valid.',
    ],
    ['a request that is not HTTP', 'HELLO\r\n\r\n', 400, 'The request is not valid HTTP.'],
    [
      'headers past the size limit',
      `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
      'The request headers are too large.',
    ],
    [
      'an unknown API route',
      'GET /api/nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      404,
      'There is no GET /api/nothing here.',
    ],
    [
      'a body past the limit',
      'POST /api/sign-in HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\nConnection: close\r\n\r\n',
      413,
      'The request body is too large.',
    ],
  ])(
    'answers %s with the same security headers as any other answer',
    async (_what, bytes, status, sentence) => {
      const answer = await rawRequest(port, bytes);
      expect(answer.status).toBe(status);
      expect(answer.body).toBe(sentence);
      expect(answer.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(policyHeaders(answer)).toEqual(normal);
    },
  );
});
