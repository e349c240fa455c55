import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../test/harness.js';
import { rawRequest } from '../test/raw-http.js';

describe('malformed HTTP', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await createTestApp('pglite');
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
  });
  afterAll(() => t.close());

  it.each([
    [
      'a Content-Length that is not a number',
      'POST /api/sign-in HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
      400,
      'The Content-Length header is not valid.',
    ],
    [
      'two different Content-Lengths',
      'POST /api/sign-in HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
      400,
      'The Content-Length header is not valid.',
    ],
    ['a request line that is not HTTP', 'HELLO\r\n\r\n', 400, 'The request is not valid HTTP.'],
    [
      'a header without a colon',
      'GET /healthz HTTP/1.1\r\nHost: x\r\nbroken header\r\n\r\n',
      400,
      'The request is not valid HTTP.',
    ],
    [
      'headers past the size limit',
      `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
      'The request headers are too large.',
    ],
  ])('answers %s with a text/plain sentence', async (_what, bytes, status, sentence) => {
    const answer = await rawRequest(port, bytes);
    expect(answer.status).toBe(status);
    expect(answer.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(answer.body).toBe(sentence);
  });
});
