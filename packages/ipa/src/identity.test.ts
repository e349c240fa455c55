import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type forge from 'node-forge';
import { afterAll, describe, expect, it } from 'vitest';
import { IpaError } from './errors.js';
import { loadIdentity } from './identity.js';
import { fixturesDir } from './test-support/fixtures.js';

// Real exports made by OpenSSL: its default (AES-256-CBC, PBKDF2, SHA-256 MAC) and -legacy
// (RC2/3DES, SHA-1 MAC, what older Keychain exports use).
const dir = mkdtempSync(join(tmpdir(), 'ipa-identity-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const openssl = (...args: string[]): void => {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
};
openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'key.pem', '-out', 'cert.pem', '-days', '30',
  '-subj', '/CN=Apple Development: Test (ABCDE12345)/OU=TEAM123456');
openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca-key.pem', '-out', 'ca.pem', '-days', '30', '-subj', '/CN=Test CA');
openssl('pkcs12', '-export', '-in', 'cert.pem', '-inkey', 'key.pem', '-certfile', 'ca.pem', '-out', 'modern.p12', '-passout', 'pass:secret');
// An Apple-shaped hierarchy: root, a WWDR-like intermediate, and a developer certificate it issued,
// exported without its issuers as Keychain does.
writeFileSync(join(dir, 'ca.ext'), 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n');
openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'root-key.pem', '-out', 'root.pem', '-days', '30', '-subj', '/CN=Test Root/O=Test Inc.',
  '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'wwdr-key.pem', '-out', 'wwdr.csr', '-subj', '/CN=Test WWDR/O=Test Inc.');
openssl('x509', '-req', '-in', 'wwdr.csr', '-CA', 'root.pem', '-CAkey', 'root-key.pem', '-CAcreateserial', '-out', 'wwdr.pem', '-days', '30', '-extfile', 'ca.ext');
openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'dev-key.pem', '-out', 'dev.csr', '-subj', '/CN=Apple Development: Dev (TEAM123456)');
openssl('x509', '-req', '-in', 'dev.csr', '-CA', 'wwdr.pem', '-CAkey', 'wwdr-key.pem', '-CAcreateserial', '-out', 'dev.pem', '-days', '30');
openssl('x509', '-in', 'root.pem', '-outform', 'DER', '-out', 'root.der');
openssl('pkcs12', '-export', '-in', 'dev.pem', '-inkey', 'dev-key.pem', '-out', 'dev.p12', '-passout', 'pass:secret');
openssl('pkcs12', '-export', '-in', 'dev.pem', '-inkey', 'dev-key.pem', '-certfile', 'wwdr.pem', '-out', 'dev-wwdr.p12', '-passout', 'pass:secret');
openssl('pkcs12', '-export', '-legacy', '-in', 'cert.pem', '-inkey', 'key.pem', '-out', 'legacy.p12', '-passout', 'pass:secret');
const file = (name: string): Buffer => readFileSync(join(dir, name));
const subjectOf = (identity: ReturnType<typeof loadIdentity>): string => identity.certificate.subject.getField('CN').value as string;

describe('loadIdentity', () => {
  it('opens an OpenSSL 3 default PKCS#12 and separates the leaf from the chain', () => {
    const identity = loadIdentity({ p12: file('modern.p12'), password: 'secret' });
    expect(subjectOf(identity)).toBe('Apple Development: Test (ABCDE12345)');
    // The self-signed leaf has no issuer to carry; the unrelated CA in the export is left out.
    expect(identity.chain).toEqual([]);
    expect(identity.privateKey.n.equals((identity.certificate.publicKey as forge.pki.rsa.PublicKey).n)).toBe(true);
  });

  it("completes a Keychain-style export's chain from the operator's files, nearest issuer first", () => {
    const identity = loadIdentity({ p12: file('dev.p12'), password: 'secret', chain: [file('root.der'), file('wwdr.pem')] });
    expect(identity.chain.map((cert) => cert.subject.getField('CN').value)).toEqual(['Test WWDR', 'Test Root']);
    const fromBundle = loadIdentity({ p12: file('dev-wwdr.p12'), password: 'secret', chain: [file('root.der')] });
    expect(fromBundle.chain.map((cert) => cert.subject.getField('CN').value)).toEqual(['Test WWDR', 'Test Root']);
    const pemBundle = Buffer.concat([file('wwdr.pem'), file('root.pem')]);
    const fromPem = loadIdentity({ certPem: file('dev.pem').toString(), keyPem: file('dev-key.pem').toString(), chain: [pemBundle] });
    expect(fromPem.chain.map((cert) => cert.subject.getField('CN').value)).toEqual(['Test WWDR', 'Test Root']);
  });

  it('refuses a chain file that issued nothing in the chain, such as an Apple profile-signing CA: IDENTITY_INVALID', () => {
    // Apple iPhone Certification Authority, taken from a real Apple-signed provisioning profile.
    const profile = join(fixturesDir, 'mobileprovision/fastlane_appstore_tools.fastlane.app_apple_signed.mobileprovision');
    const appleCerts = execFileSync('openssl', ['pkcs7', '-inform', 'DER', '-in', profile, '-print_certs']);
    expect(() => loadIdentity({ p12: file('dev.p12'), password: 'secret', chain: [file('wwdr.pem'), appleCerts] })).toThrow(
      /Expected the chain files to hold issuers of "Apple Development: Dev \(TEAM123456\)", found "Apple .+", which issued none of its chain\./,
    );
  });

  it('refuses a chain file that is not a certificate: IDENTITY_INVALID', () => {
    expect(() => loadIdentity({ p12: file('dev.p12'), password: 'secret', chain: [Buffer.from('not a certificate')] })).toThrow(
      /Expected chain file 1 to be a certificate in PEM or DER, found one that does not parse/,
    );
  });

  it('opens a legacy PKCS#12', () => {
    const identity = loadIdentity({ p12: file('legacy.p12'), password: 'secret' });
    expect(subjectOf(identity)).toBe('Apple Development: Test (ABCDE12345)');
    expect(identity.chain).toEqual([]);
  });

  it('refuses a wrong password with a sentence: P12_INVALID', () => {
    expect(() => loadIdentity({ p12: file('modern.p12'), password: 'wrong' })).toThrow(
      new IpaError('P12_INVALID', 'The PKCS#12 file could not be opened with this password: check the password it was exported with.'),
    );
  });

  it('refuses a file that is not PKCS#12: P12_INVALID', () => {
    let error: unknown;
    try {
      loadIdentity({ p12: Buffer.from('hello world'), password: '' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(IpaError);
    expect((error as IpaError).code).toBe('P12_INVALID');
  });

  it('loads a PEM certificate and key', () => {
    const identity = loadIdentity({ certPem: file('cert.pem').toString(), keyPem: file('key.pem').toString() });
    expect(subjectOf(identity)).toBe('Apple Development: Test (ABCDE12345)');
  });

  it('refuses a key that does not belong to the certificate: IDENTITY_INVALID', () => {
    expect(() => loadIdentity({ certPem: file('cert.pem').toString(), keyPem: file('ca-key.pem').toString() })).toThrow(
      new IpaError('IDENTITY_INVALID', 'Expected a certificate matching the private key, found 1 certificate(s) for other keys.'),
    );
  });
});
