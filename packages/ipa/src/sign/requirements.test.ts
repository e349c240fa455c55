import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import forge from 'node-forge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCodeSignature } from '../macho/code-signature.js';
import { parseMachO } from '../macho/parse.js';
import { buildRequirementsBlob, requirementSubjectFor, requirementText } from './requirements.js';
import { fixtureIpa } from '../test-support/fixtures.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl', 'unzip');

const executablePath = 'Payload/very-capable-app.app/very-capable-app';
const dir = mkdtempSync(join(tmpdir(), 'ipa-requirements-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let executable: Buffer;
let signature: NonNullable<ReturnType<typeof readCodeSignature>>;
let blob: (slot: number) => Buffer;
let xcodeCertificate: forge.pki.Certificate;
beforeAll(() => {
  execFileSync('unzip', ['-q', fixtureIpa, executablePath, '-d', dir]);
  executable = readFileSync(join(dir, executablePath));
  signature = readCodeSignature(executable, parseMachO(executable).slices[0]!)!;
  blob = (slot: number): Buffer => {
    const entry = signature.blobs.find((b) => b.slot === slot)!;
    return signature.bytes.subarray(entry.offset, entry.offset + entry.length);
  };
  // The CMS blob (slot 0x10000) wraps the DER after its 8-byte header; openssl lists its certificates.
  xcodeCertificate = forge.pki.certificateFromPem(
    execFileSync('openssl', ['pkcs7', '-inform', 'DER', '-print_certs'], {
      input: blob(0x10000).subarray(8),
      encoding: 'utf8',
    }),
  );
});

function selfSigned(organization: string, commonName: string): forge.pki.Certificate {
  const keys = forge.pki.rsa.generateKeyPair(512);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  const name = [
    { name: 'commonName', value: commonName },
    { name: 'organizationName', value: organization },
  ];
  cert.setSubject(name);
  cert.setIssuer(name);
  cert.sign(keys.privateKey);
  return cert;
}

describe.skipIf(skip)('designated requirement', () => {
  it("compiles to the bytes Xcode wrote for the fixture's self-signed identity", () => {
    const subject = requirementSubjectFor('org.fastlane.very-capable-app', {
      certificate: xcodeCertificate,
      chain: [],
    });
    expect(buildRequirementsBlob(subject).equals(blob(2))).toBe(true);
    expect(requirementText(subject)).toBe(
      'identifier "org.fastlane.very-capable-app" and certificate root = H"c8d1aac67c23186501a9ddc93356d8e14ae29e14"',
    );
  });

  it('uses the anchor apple generic form for a certificate Apple issued', () => {
    const leaf = selfSigned('Apple Inc.', 'Apple Distribution: Example (TEAM123456)');
    const subject = requirementSubjectFor('com.example.app', { certificate: leaf, chain: [] });
    expect(subject).toEqual({
      identifier: 'com.example.app',
      commonName: 'Apple Distribution: Example (TEAM123456)',
    });
    expect(requirementText(subject)).toBe(
      'identifier "com.example.app" and anchor apple generic and certificate leaf[subject.CN] = "Apple Distribution: Example (TEAM123456)" and certificate 1[field.1.2.840.113635.100.6.2.1] /* exists */',
    );
    // RequirementSet { count 1, designated (3) at 20 } holding one expression-form Requirement.
    const compiled = buildRequirementsBlob(subject);
    expect(compiled.readUInt32BE(0)).toBe(0xfade0c01);
    expect(compiled.readUInt32BE(4)).toBe(compiled.length);
    expect([compiled.readUInt32BE(8), compiled.readUInt32BE(12), compiled.readUInt32BE(16)]).toEqual([
      1, 3, 20,
    ]);
    expect(compiled.readUInt32BE(20)).toBe(0xfade0c00);
    expect(compiled.subarray(28, 32).readUInt32BE(0)).toBe(1);
    // and(and(and(identifier, anchor apple generic), leaf[subject.CN]), certificate 1[...] exists)
    expect([32, 36, 40, 44].map((at) => compiled.readUInt32BE(at))).toEqual([6, 6, 6, 2]);
    expect(compiled.includes(Buffer.from('2a864886f76364060201', 'hex'))).toBe(true);
  });

  it('pins any other chain to its root', () => {
    const root = selfSigned('Example CA', 'Example Root');
    const leaf = selfSigned('Example', 'Example Signer');
    const rootDer = Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(root)).getBytes(), 'binary');
    const subject = requirementSubjectFor('com.example.app', {
      certificate: leaf,
      chain: [{ raw: rootDer }],
    });
    const sha1 = forge.md.sha1.create().update(rootDer.toString('binary')).digest().toHex();
    expect(requirementText(subject)).toBe(`identifier "com.example.app" and certificate root = H"${sha1}"`);
  });
});
