/**
 * A signing identity and profile that are the same on every run: an RSA key from a seeded PRNG,
 * a self-signed certificate and a bare XML profile with fixed dates. Tests that compare signed
 * output byte for byte need them; tests that check signatures with openssl use pki.ts instead.
 */
import forge from 'node-forge';
import { buildXmlPlist } from '../plist.js';

export interface FixedIdentity {
  readonly certPem: string;
  readonly keyPem: string;
  readonly profile: Buffer;
  readonly teamId: string;
}

export function createFixedIdentity(seed = 'sideport fixed identity', teamId = 'FIXED12345'): FixedIdentity {
  const prng = forge.random.createInstance();
  prng.seedFileSync = () => seed;
  // 1024 bits keeps key generation under a second; the key only has to be the same every time.
  const keys = forge.pki.rsa.generateKeyPair({ bits: 1024, prng, workers: -1 });
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = '01';
  cert.validity.notBefore = new Date('2024-01-01T00:00:00Z');
  cert.validity.notAfter = new Date('2034-01-01T00:00:00Z');
  const subject = [
    { name: 'commonName', value: `Apple Development: Fixed Person (${teamId})` },
    { shortName: 'OU', value: teamId },
    { name: 'organizationName', value: 'Fixed Person' },
  ];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', critical: true, digitalSignature: true },
    { name: 'extKeyUsage', codeSigning: true },
  ]);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  const der = Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(cert)).getBytes(), 'binary');
  const profile = Buffer.from(
    buildXmlPlist({
      AppIDName: 'Fixed Wildcard',
      ApplicationIdentifierPrefix: [teamId],
      CreationDate: new Date('2025-01-01T00:00:00Z'),
      Platform: ['iOS'],
      DeveloperCertificates: [der],
      Entitlements: {
        'application-identifier': `${teamId}.*`,
        'com.apple.developer.team-identifier': teamId,
        'get-task-allow': true,
        'keychain-access-groups': [`${teamId}.*`],
      },
      ExpirationDate: new Date('2033-01-01T00:00:00Z'),
      Name: 'Fixed Profile',
      ProvisionedDevices: ['00008030-001A2B3C4D5E6F70'],
      TeamIdentifier: [teamId],
      TeamName: 'Fixed Team',
      TimeToLive: 365,
      UUID: '6f2c1b9e-0000-4000-8000-00000000f1e0',
      Version: 1,
    }),
  );
  return {
    certPem: forge.pki.certificateToPem(cert),
    keyPem: forge.pki.privateKeyToPem(keys.privateKey),
    profile,
    teamId,
  };
}
