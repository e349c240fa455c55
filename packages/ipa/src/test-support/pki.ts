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
  profile(options?: { appId?: string; entitlements?: PlistObject; expires?: Date; withoutCertificate?: boolean }): Buffer;
}

export function createTestPki(dir: string, teamId = 'TEAM123456'): TestPki {
  const openssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  };
  const commonName = `Apple Development: Test Person (${teamId})`;
  writeFileSync(join(dir, 'leaf.ext'), 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=codeSigning\n');
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca-key.pem', '-out', 'ca.pem', '-days', '30',
    '-subj', '/CN=Test Root CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'key.pem', '-out', 'leaf.csr', '-subj', `/CN=${commonName}/OU=${teamId}/O=Test Person`);
  openssl('x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-CAcreateserial', '-out', 'cert.pem', '-days', '30', '-extfile', 'leaf.ext');
  openssl('pkcs12', '-export', '-in', 'cert.pem', '-inkey', 'key.pem', '-certfile', 'ca.pem', '-out', 'id.p12', '-passout', 'pass:secret');
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
        DeveloperCertificates: [options.withoutCertificate ? Buffer.from('not this one') : readFileSync(join(dir, 'cert.der'))],
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
      openssl('cms', '-sign', '-nodetach', '-binary', '-in', `${name}.plist`, '-signer', 'cert.pem', '-inkey', 'key.pem', '-outform', 'DER', '-out', `${name}.mobileprovision`);
      return readFileSync(join(dir, `${name}.mobileprovision`));
    },
  };
}
