/**
 * The OCSP client against a real responder (openssl ocsp with an index file): what it answers for
 * good, revoked and unknown certificates, signed by the CA or by a delegated responder, and what
 * it refuses (a responder the issuer never authorised, another request's nonce, garbage).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import forge from 'node-forge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOcspResponder, type OcspResponder } from '../../test/ocsp-responder.js';
import { createDevIdentity, type DevIdentity } from './dev-identity.js';
import { askResponder, buildOcspRequest, OcspError, readOcspResponse, responderUrl } from './ocsp.js';
import { generateRsaKeyPair } from '../../platform/pki.js';
import { missingTools } from '@sideport/ipa/test-support/system-tools';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl');

const DAY_MS = 86_400_000;

/** A certificate the dev CA issues to `subject` with `extensions` (forge's forms). */
function issue(identity: DevIdentity, subject: string, extensions: object[]) {
  const keys = generateRsaKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = `01${forge.util.bytesToHex(forge.random.getBytesSync(8))}`;
  cert.validity.notBefore = new Date(Date.now() - DAY_MS);
  cert.validity.notAfter = new Date(Date.now() + 30 * DAY_MS);
  cert.setSubject([{ name: 'commonName', value: subject }]);
  const ca = forge.pki.certificateFromPem(identity.caCertPem);
  cert.setIssuer(ca.subject.attributes);
  cert.setExtensions(extensions);
  cert.sign(forge.pki.privateKeyFromPem(identity.caKeyPem), forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.privateKeyPem };
}

describe.skipIf(skip)('OCSP', () => {
  let identity: DevIdentity;
  let other: DevIdentity;
  let responder: OcspResponder;
  let delegated: OcspResponder;
  let impostor: OcspResponder;
  let purposeless: OcspResponder;
  const now = () => new Date();
  const ask = (r: OcspResponder, certPem = identity.certPem) =>
    askResponder({ url: r.url, certPem, issuerPem: identity.caCertPem, now: now(), timeoutMs: 5000 });

  beforeAll(async () => {
    identity = createDevIdentity();
    other = createDevIdentity();
    responder = await startOcspResponder({
      caPem: identity.caCertPem,
      caKeyPem: identity.caKeyPem,
      nextUpdateMinutes: 30,
    });
    // id-kp-OCSPSigning, by its OID: forge knows it by no name.
    const signer = issue(identity, 'Test OCSP responder', [
      { name: 'extKeyUsage', '1.3.6.1.5.5.7.3.9': true },
    ]);
    delegated = await startOcspResponder({ caPem: identity.caCertPem, caKeyPem: identity.caKeyPem, signer });
    // Another CA's key answering about our CA's certificates: its word counts for nothing.
    impostor = await startOcspResponder({
      caPem: identity.caCertPem,
      caKeyPem: identity.caKeyPem,
      signer: { certPem: other.caCertPem, keyPem: other.caKeyPem },
    });
    // A certificate of our CA, but not one it made for OCSP signing.
    purposeless = await startOcspResponder({
      caPem: identity.caCertPem,
      caKeyPem: identity.caKeyPem,
      signer: issue(identity, 'Not a responder', []),
    });
  });
  afterAll(async () => {
    await responder?.close();
    await delegated?.close();
    await impostor?.close();
    await purposeless?.close();
  });

  it('reads unknown for a certificate the index does not list, then good, with the nextUpdate it gives', async () => {
    expect(await ask(responder)).toMatchObject({ status: 'unknown' });
    await responder.setStatus(identity.certPem, 'good');
    const answer = await ask(responder);
    expect(answer.status).toBe('good');
    expect(answer.nextUpdate!.getTime() - answer.thisUpdate.getTime()).toBe(30 * 60_000);
  });

  it('reads revoked and when', async () => {
    const revokedAt = new Date('2026-02-03T04:05:06Z');
    await responder.setStatus(identity.certPem, 'revoked', revokedAt);
    expect(await ask(responder)).toMatchObject({ status: 'revoked', revokedAt });
  });

  it('trusts a responder certificate its issuer made for OCSP signing', async () => {
    await delegated.setStatus(identity.certPem, 'revoked', new Date('2026-01-01T00:00:00Z'));
    expect(await ask(delegated)).toMatchObject({
      status: 'revoked',
      revokedAt: new Date('2026-01-01T00:00:00Z'),
    });
    // Its answers carry no nextUpdate: there is none to respect.
    expect((await ask(delegated)).nextUpdate).toBeUndefined();
  });

  it('refuses an answer signed by anyone else, or by a certificate of the issuer not made for OCSP', async () => {
    for (const r of [impostor, purposeless]) {
      await r.setStatus(identity.certPem, 'good');
      await expect(ask(r)).rejects.toThrow(
        new OcspError(
          "The OCSP answer is not signed by the certificate's issuer or a responder it authorised.",
        ),
      );
    }
  });

  it("refuses another request's answer, and bytes that are no answer", async () => {
    const { der } = await buildOcspRequest(identity.certPem, identity.caCertPem);
    const res = await fetch(responder.url, {
      method: 'POST',
      headers: { 'content-type': 'application/ocsp-request' },
      body: new Uint8Array(der),
    });
    const answer = Buffer.from(await res.arrayBuffer());
    const request = { certPem: identity.certPem, issuerPem: identity.caCertPem };
    await expect(readOcspResponse(answer, { ...request, nonce: Buffer.alloc(16, 7) }, now())).rejects.toThrow(
      "The OCSP answer carries another request's nonce.",
    );
    // About another certificate of the same CA.
    const stranger = issue(identity, 'Stranger', []);
    await expect(readOcspResponse(answer, { ...request, certPem: stranger.certPem }, now())).rejects.toThrow(
      'The OCSP answer is about another certificate.',
    );
    // Read a day after its nextUpdate.
    await expect(readOcspResponse(answer, request, new Date(Date.now() + DAY_MS))).rejects.toThrow(
      'The OCSP answer is out of date.',
    );
    await expect(readOcspResponse(Buffer.from('not der'), request, now())).rejects.toBeInstanceOf(OcspError);
  });

  it('says so when the responder cannot be reached or answers HTTP errors', async () => {
    const server = createServer((_req, res) => res.writeHead(503).end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      await expect(
        askResponder({
          url,
          certPem: identity.certPem,
          issuerPem: identity.caCertPem,
          now: now(),
          timeoutMs: 5000,
        }),
      ).rejects.toThrow(`The OCSP responder ${url} answered HTTP 503.`);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    await expect(
      askResponder({
        url,
        certPem: identity.certPem,
        issuerPem: identity.caCertPem,
        now: now(),
        timeoutMs: 5000,
      }),
    ).rejects.toThrow(`The OCSP responder ${url} could not be reached.`);
  });

  it("finds the responder address in a certificate's Authority Information Access", () => {
    // AuthorityInfoAccessSyntax (RFC 5280 4.2.2.1) with one OCSP accessDescription, built by hand.
    const aia = forge.asn1.create(forge.asn1.Class.UNIVERSAL, forge.asn1.Type.SEQUENCE, true, [
      forge.asn1.create(forge.asn1.Class.UNIVERSAL, forge.asn1.Type.SEQUENCE, true, [
        forge.asn1.create(
          forge.asn1.Class.UNIVERSAL,
          forge.asn1.Type.OID,
          false,
          forge.asn1.oidToDer('1.3.6.1.5.5.7.48.1').getBytes(),
        ),
        forge.asn1.create(forge.asn1.Class.CONTEXT_SPECIFIC, 6, false, 'http://ocsp.example/ocsp03'),
      ]),
    ]);
    const withAia = issue(identity, 'With AIA', [
      { id: '1.3.6.1.5.5.7.1.1', value: forge.asn1.toDer(aia).getBytes() },
    ]);
    expect(responderUrl(withAia.certPem)).toBe('http://ocsp.example/ocsp03');
    expect(responderUrl(identity.certPem)).toBeUndefined();
  });
});
