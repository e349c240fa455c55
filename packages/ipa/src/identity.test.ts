import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type forge from 'node-forge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nameOf } from './chain.js';
import { IpaError } from './errors.js';
import { loadIdentity, withNativePbkdf2 } from './identity.js';
import { fixturesDir } from './test-support/fixtures.js';
import { createTestChain } from './test-support/pki.js';
import { missingTools } from './test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl');

// Real exports made by OpenSSL: its default (AES-256-CBC, PBKDF2, SHA-256 MAC) and -legacy
// (RC2/3DES, SHA-1 MAC, what older Keychain exports use).
const dir = mkdtempSync(join(tmpdir(), 'ipa-identity-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const openssl = (...args: string[]): void => {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
};
let chain: ReturnType<typeof createTestChain>;
beforeAll(() => {
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'key.pem',
    '-out',
    'cert.pem',
    '-days',
    '30',
    '-subj',
    '/CN=Apple Development: Test (ABCDE12345)/OU=TEAM123456',
  );
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca-key.pem',
    '-out',
    'ca.pem',
    '-days',
    '30',
    '-subj',
    '/CN=Test CA',
  );
  openssl(
    'pkcs12',
    '-export',
    '-in',
    'cert.pem',
    '-inkey',
    'key.pem',
    '-certfile',
    'ca.pem',
    '-out',
    'modern.p12',
    '-passout',
    'pass:secret',
  );
  // An Apple-shaped hierarchy: root, a WWDR-like intermediate, and a developer certificate it issued.
  chain = createTestChain(dir);
  openssl(
    'pkcs12',
    '-export',
    '-legacy',
    '-in',
    'cert.pem',
    '-inkey',
    'key.pem',
    '-out',
    'legacy.p12',
    '-passout',
    'pass:secret',
  );
});
const file = (name: string): Buffer => readFileSync(join(dir, name));
const subjectOf = (identity: ReturnType<typeof loadIdentity>): string =>
  identity.certificate.subject.getField('CN').value as string;

describe.skipIf(skip)('loadIdentity', () => {
  it('opens an OpenSSL 3 default PKCS#12 and separates the leaf from the chain', () => {
    const identity = loadIdentity({ p12: file('modern.p12'), password: 'secret' });
    expect(subjectOf(identity)).toBe('Apple Development: Test (ABCDE12345)');
    // The self-signed leaf has no issuer to carry; the unrelated CA in the export is left out.
    expect(identity.chain).toEqual([]);
    expect(identity.privateKey.n.equals((identity.certificate.publicKey as forge.pki.rsa.PublicKey).n)).toBe(
      true,
    );
  });

  it("completes a Keychain-style export's chain from the operator's files, nearest issuer first", () => {
    const identity = loadIdentity({
      p12: readFileSync(chain.leafP12),
      password: 'secret',
      chain: [readFileSync(chain.rootDer), readFileSync(chain.intermediatePem)],
    });
    expect(identity.chain.map((cert) => nameOf(cert))).toEqual(['Test WWDR', 'Test Root']);
    const fromBundle = loadIdentity({
      p12: readFileSync(chain.leafWithIntermediateP12),
      password: 'secret',
      chain: [readFileSync(chain.rootDer)],
    });
    expect(fromBundle.chain.map((cert) => nameOf(cert))).toEqual(['Test WWDR', 'Test Root']);
    const pemBundle = Buffer.concat([readFileSync(chain.intermediatePem), readFileSync(chain.rootPem)]);
    const fromPem = loadIdentity({
      certPem: readFileSync(chain.leafPem, 'utf8'),
      keyPem: readFileSync(chain.leafKeyPem, 'utf8'),
      chain: [pemBundle],
    });
    expect(fromPem.chain.map((cert) => nameOf(cert))).toEqual(['Test WWDR', 'Test Root']);
  });

  it('refuses a chain file that issued nothing in the chain, such as an Apple profile-signing CA: IDENTITY_INVALID', () => {
    // Apple iPhone Certification Authority, taken from a real Apple-signed provisioning profile.
    const profile = join(
      fixturesDir,
      'mobileprovision/fastlane_appstore_tools.fastlane.app_apple_signed.mobileprovision',
    );
    const appleCerts = execFileSync('openssl', ['pkcs7', '-inform', 'DER', '-in', profile, '-print_certs']);
    expect(() =>
      loadIdentity({
        p12: readFileSync(chain.leafP12),
        password: 'secret',
        chain: [readFileSync(chain.intermediatePem), appleCerts],
      }),
    ).toThrow(
      /Expected the chain files to hold issuers of "Apple Development: Dev \(TEAM123456\)", found "Apple .+", which issued none of its chain\./,
    );
  });

  it('refuses a chain file that is not a certificate: IDENTITY_INVALID', () => {
    expect(() =>
      loadIdentity({
        p12: readFileSync(chain.leafP12),
        password: 'secret',
        chain: [Buffer.from('not a certificate')],
      }),
    ).toThrow(/Expected chain file 1 to be a certificate in PEM or DER, found one that does not parse/);
  });

  it('opens a legacy PKCS#12', () => {
    const identity = loadIdentity({ p12: file('legacy.p12'), password: 'secret' });
    expect(subjectOf(identity)).toBe('Apple Development: Test (ABCDE12345)');
    expect(identity.chain).toEqual([]);
  });

  it('refuses a wrong password with a sentence: P12_INVALID', () => {
    expect(() => loadIdentity({ p12: file('modern.p12'), password: 'wrong' })).toThrow(
      new IpaError(
        'P12_INVALID',
        'The PKCS#12 file could not be opened with this password: check the password it was exported with.',
      ),
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
    const identity = loadIdentity({
      certPem: file('cert.pem').toString(),
      keyPem: file('key.pem').toString(),
    });
    expect(subjectOf(identity)).toBe('Apple Development: Test (ABCDE12345)');
  });

  it('refuses a key that does not belong to the certificate: IDENTITY_INVALID', () => {
    expect(() =>
      loadIdentity({ certPem: file('cert.pem').toString(), keyPem: file('ca-key.pem').toString() }),
    ).toThrow(
      new IpaError(
        'IDENTITY_INVALID',
        'Expected a certificate matching the private key, found 1 certificate(s) for other keys.',
      ),
    );
  });
});

describe.skipIf(skip)('withNativePbkdf2', () => {
  it("derives forge's own keys, with OpenSSL doing the rounds", async () => {
    const { default: realForge } = await import('node-forge');
    const js = realForge.pkcs5.pbkdf2;
    const native = withNativePbkdf2(js);
    const salt = Buffer.from('0011223344556677', 'hex').toString('binary');
    // One byte per character, as forge holds strings: a Latin-1 password stays the same bytes.
    for (const password of ['secret', 'pâsswörd']) {
      for (const md of [undefined, 'sha1', realForge.md.sha256.create(), 'sha512'] as const) {
        expect(native(password, salt, 2048, 32, md as never)).toBe(js(password, salt, 2048, 32, md as never));
      }
    }
  });
});
