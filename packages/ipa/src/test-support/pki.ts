/**
 * A throwaway CA, signing certificate, PKCS#12 and provisioning profile made with the openssl
 * command, so the tests sign with what a developer account would hand out and verify with a tool
 * that is not ours.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildXmlPlist, type PlistObject } from '../plist.js';

export interface TestPki {
  readonly dir: string;
  readonly caPem: string;
  readonly certPem: string;
  readonly keyPem: string;
  readonly p12: Buffer;
  readonly password: string;
  readonly teamId: string;
  readonly commonName: string;
  profile(options?: {
    appId?: string;
    entitlements?: PlistObject;
    expires?: Date;
    withoutCertificate?: boolean;
  }): Buffer;
}

export function createTestPki(dir: string, teamId = 'TEAM123456'): TestPki {
  const openssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  };
  const commonName = `Apple Development: Test Person (${teamId})`;
  writeFileSync(
    join(dir, 'leaf.ext'),
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=codeSigning\n',
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
    '/CN=Test Root CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'key.pem',
    '-out',
    'leaf.csr',
    '-subj',
    `/CN=${commonName}/OU=${teamId}/O=Test Person`,
  );
  openssl(
    'x509',
    '-req',
    '-in',
    'leaf.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca-key.pem',
    '-CAcreateserial',
    '-out',
    'cert.pem',
    '-days',
    '30',
    '-extfile',
    'leaf.ext',
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
    'id.p12',
    '-passout',
    'pass:secret',
  );
  openssl('x509', '-in', 'cert.pem', '-outform', 'DER', '-out', 'cert.der');
  const read = (name: string): string => readFileSync(join(dir, name), 'utf8');
  let profileCount = 0;
  return {
    dir,
    caPem: read('ca.pem'),
    certPem: read('cert.pem'),
    keyPem: read('key.pem'),
    p12: readFileSync(join(dir, 'id.p12')),
    password: 'secret',
    teamId,
    commonName,
    profile(options = {}) {
      const appId = options.appId ?? `${teamId}.*`;
      const plist: PlistObject = {
        AppIDName: 'Test Wildcard',
        ApplicationIdentifierPrefix: [teamId],
        CreationDate: new Date(Date.now() - 86_400_000),
        Platform: ['iOS'],
        DeveloperCertificates: [
          options.withoutCertificate ? Buffer.from('not this one') : readFileSync(join(dir, 'cert.der')),
        ],
        Entitlements: {
          'application-identifier': appId,
          'com.apple.developer.team-identifier': teamId,
          'get-task-allow': true,
          'keychain-access-groups': [`${teamId}.*`],
          'com.apple.security.application-groups': ['group.com.example.shared', 'group.dup.shared'],
          ...options.entitlements,
        },
        ExpirationDate: options.expires ?? new Date(Date.now() + 7 * 86_400_000),
        Name: 'Test Profile',
        ProvisionedDevices: ['00008030-001A2B3C4D5E6F70'],
        TeamIdentifier: [teamId],
        TeamName: 'Test Team',
        TimeToLive: 7,
        UUID: '6f2c1b9e-0000-4000-8000-000000000001',
        Version: 1,
      };
      const name = `profile-${profileCount++}`;
      writeFileSync(join(dir, `${name}.plist`), buildXmlPlist(plist));
      openssl(
        'cms',
        '-sign',
        '-nodetach',
        '-binary',
        '-in',
        `${name}.plist`,
        '-signer',
        'cert.pem',
        '-inkey',
        'key.pem',
        '-outform',
        'DER',
        '-out',
        `${name}.mobileprovision`,
      );
      return readFileSync(join(dir, `${name}.mobileprovision`));
    },
  };
}

/** Files of an Apple-shaped hierarchy: a root, a WWDR-like intermediate, and a code-signing leaf it issued. */
export interface TestChain {
  /** Paths, in `dir`. */
  readonly rootPem: string;
  readonly rootDer: string;
  readonly intermediatePem: string;
  readonly leafPem: string;
  readonly leafKeyPem: string;
  /** The leaf and its key alone, as a Keychain export holds them (password 'secret'). */
  readonly leafP12: string;
  /** The same with the intermediate inside. */
  readonly leafWithIntermediateP12: string;
  /** The same with the intermediate and the root inside. */
  readonly leafWithChainP12: string;
  /** The intermediate as DER, as a CA Issuers address serves it. */
  readonly intermediateDer: string;
}

export interface TestChainOptions {
  /** The leaf's Authority Information Access names this CA Issuers address (where the intermediate is). */
  leafCaIssuers?: string;
  /** The intermediate's names this one (where the root is). */
  intermediateCaIssuers?: string;
}

export function createTestChain(
  dir: string,
  leafCommonName = 'Apple Development: Dev (TEAM123456)',
  options: TestChainOptions = {},
): TestChain {
  const openssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  };
  const aia = (url: string | undefined) => (url ? `authorityInfoAccess=caIssuers;URI:${url}\n` : '');
  writeFileSync(
    join(dir, 'chain-ca.ext'),
    `basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n${aia(options.intermediateCaIssuers)}`,
  );
  writeFileSync(
    join(dir, 'chain-leaf.ext'),
    `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=codeSigning\n${aia(options.leafCaIssuers)}`,
  );
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'chain-root-key.pem',
    '-out',
    'chain-root.pem',
    '-days',
    '30',
    '-subj',
    '/CN=Test Root/O=Test Inc.',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  openssl('x509', '-in', 'chain-root.pem', '-outform', 'DER', '-out', 'chain-root.der');
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'chain-wwdr-key.pem',
    '-out',
    'chain-wwdr.csr',
    '-subj',
    '/CN=Test WWDR/O=Test Inc.',
  );
  openssl(
    'x509',
    '-req',
    '-in',
    'chain-wwdr.csr',
    '-CA',
    'chain-root.pem',
    '-CAkey',
    'chain-root-key.pem',
    '-CAcreateserial',
    '-out',
    'chain-wwdr.pem',
    '-days',
    '30',
    '-extfile',
    'chain-ca.ext',
  );
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'chain-leaf-key.pem',
    '-out',
    'chain-leaf.csr',
    '-subj',
    `/CN=${leafCommonName}`,
  );
  openssl(
    'x509',
    '-req',
    '-in',
    'chain-leaf.csr',
    '-CA',
    'chain-wwdr.pem',
    '-CAkey',
    'chain-wwdr-key.pem',
    '-CAcreateserial',
    '-out',
    'chain-leaf.pem',
    '-days',
    '30',
    '-extfile',
    'chain-leaf.ext',
  );
  openssl(
    'pkcs12',
    '-export',
    '-in',
    'chain-leaf.pem',
    '-inkey',
    'chain-leaf-key.pem',
    '-out',
    'chain-leaf.p12',
    '-passout',
    'pass:secret',
  );
  openssl(
    'pkcs12',
    '-export',
    '-in',
    'chain-leaf.pem',
    '-inkey',
    'chain-leaf-key.pem',
    '-certfile',
    'chain-wwdr.pem',
    '-out',
    'chain-leaf-wwdr.p12',
    '-passout',
    'pass:secret',
  );
  writeFileSync(
    join(dir, 'chain-wwdr-root.pem'),
    readFileSync(join(dir, 'chain-wwdr.pem'), 'utf8') + readFileSync(join(dir, 'chain-root.pem'), 'utf8'),
  );
  openssl(
    'pkcs12',
    '-export',
    '-in',
    'chain-leaf.pem',
    '-inkey',
    'chain-leaf-key.pem',
    '-certfile',
    'chain-wwdr-root.pem',
    '-out',
    'chain-leaf-full.p12',
    '-passout',
    'pass:secret',
  );
  openssl('x509', '-in', 'chain-wwdr.pem', '-outform', 'DER', '-out', 'chain-wwdr.der');
  const at = (name: string) => join(dir, name);
  return {
    rootPem: at('chain-root.pem'),
    rootDer: at('chain-root.der'),
    intermediatePem: at('chain-wwdr.pem'),
    leafPem: at('chain-leaf.pem'),
    leafKeyPem: at('chain-leaf-key.pem'),
    leafP12: at('chain-leaf.p12'),
    leafWithIntermediateP12: at('chain-leaf-wwdr.p12'),
    leafWithChainP12: at('chain-leaf-full.p12'),
    intermediateDer: at('chain-wwdr.der'),
  };
}
