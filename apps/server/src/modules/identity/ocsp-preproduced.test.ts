/**
 * Apple's OCSP responders answer as RFC 5019 (the lightweight profile) allows: answers produced
 * ahead of time and served from caches, the same bytes to every asker, with no nonce echoed. The
 * test responder (openssl ocsp) echoes the nonce of every request; here its answer to a request
 * without one is served, as a cache would, to the client's own request (docs/reality.md).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOcspResponder, type OcspResponder } from '../../test/ocsp-responder.js';
import { createDevIdentity, type DevIdentity } from './dev-identity.js';
import { askResponder } from './ocsp.js';
import { missingTools } from '@sideport/ipa/test-support/system-tools';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl');

describe.skipIf(skip)('an OCSP answer produced ahead of time (RFC 5019)', () => {
  let identity: DevIdentity;
  let responder: OcspResponder;
  let cache: Server;
  let cacheUrl: string;
  let dir: string;
  /** What the cache serves to whoever asks, whatever they send. */
  let served = Buffer.alloc(0);
  let asked = 0;

  beforeAll(async () => {
    identity = createDevIdentity();
    responder = await startOcspResponder({
      caPem: identity.caCertPem,
      caKeyPem: identity.caKeyPem,
      nextUpdateMinutes: 60,
    });
    dir = mkdtempSync(path.join(tmpdir(), 'sideport-ocsp-cache-'));
    cache = createServer((req, res) => {
      asked++;
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/ocsp-response' }).end(served));
    });
    await new Promise<void>((resolve) => cache.listen(0, '127.0.0.1', resolve));
    cacheUrl = `http://127.0.0.1:${(cache.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    await responder?.close();
    await new Promise<void>((resolve) => (cache ? cache.close(() => resolve()) : resolve()));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The responder's answer to a request without a nonce, made as `openssl ocsp -no_nonce` makes it. */
  async function preproduced() {
    writeFileSync(path.join(dir, 'ca.pem'), identity.caCertPem);
    writeFileSync(path.join(dir, 'cert.pem'), identity.certPem);
    const request = path.join(dir, 'request.der');
    execFileSync('openssl', [
      'ocsp',
      '-issuer',
      path.join(dir, 'ca.pem'),
      '-cert',
      path.join(dir, 'cert.pem'),
      '-no_nonce',
      '-reqout',
      request,
    ]);
    const res = await fetch(responder.url, {
      method: 'POST',
      headers: { 'content-type': 'application/ocsp-request' },
      body: new Uint8Array(readFileSync(request)),
    });
    return Buffer.from(await res.arrayBuffer());
  }

  const ask = () =>
    askResponder({
      url: cacheUrl,
      certPem: identity.certPem,
      issuerPem: identity.caCertPem,
      now: new Date(),
      timeoutMs: 5000,
    });

  it('reads good and revoked from an answer that echoes no nonce, with the nextUpdate it gives', async () => {
    await responder.setStatus(identity.certPem, 'good');
    served = await preproduced();
    const good = await ask();
    expect(good.status).toBe('good');
    expect(good.nextUpdate!.getTime() - good.thisUpdate.getTime()).toBe(60 * 60_000);

    const revokedAt = new Date('2026-03-04T05:06:07Z');
    await responder.setStatus(identity.certPem, 'revoked', revokedAt);
    served = await preproduced();
    expect(await ask()).toMatchObject({ status: 'revoked', revokedAt });
    expect(asked).toBe(2);
  });
});
