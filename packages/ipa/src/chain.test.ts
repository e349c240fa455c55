import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPLE_CA_CERTIFICATES } from './apple-pki/index.js';
import {
  appleCaCertificates,
  codesignOrder,
  completeChain,
  fetchCaIssuer,
  isIssuedBy,
  isSelfSigned,
  nameOf,
  orderChain,
} from './chain.js';
import { completeIdentityChain, loadIdentity } from './identity.js';
import { parseProfile } from './profile.js';
import { sign } from './sign-ipa/sign.js';
import { fixtureIpa, profilesDir } from './test-support/fixtures.js';
import { createTestChain, type TestChain } from './test-support/pki.js';
import { buildDylib } from './test-support/toolchain.js';
import { cmsCertificateNames, opensslVerifies, readSignatures } from './test-support/verify-signature.js';
import { buildXmlPlist } from './plist.js';
import { missingTools } from './test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl', 'unzip');

const dir = mkdtempSync(path.join(tmpdir(), 'ipa-chain-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Serves the test intermediate and root where the certificates' CA Issuers addresses say, counting requests. */
let server: Server;
let base = '';
const served = new Map<string, Buffer>();
const asked: string[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    asked.push(req.url ?? '');
    const body = served.get(req.url ?? '');
    if (body === undefined) return void res.writeHead(404).end('not here');
    res.writeHead(200, { 'content-type': 'application/pkix-cert' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const LEAF = 'Apple Distribution: Chain Test (TEAM123456)';

/** A root, an intermediate and a leaf in their own folder; the leaf's AIA names `/wwdr-<name>.cer`. */
function chainIn(name: string, options: { serveIntermediate?: boolean } = {}): TestChain {
  const folder = path.join(dir, name);
  mkdirSync(folder);
  const made = createTestChain(folder, LEAF, {
    leafCaIssuers: `${base}/wwdr-${name}.cer`,
    intermediateCaIssuers: `${base}/root-${name}.cer`,
  });
  if (options.serveIntermediate !== false) {
    served.set(`/wwdr-${name}.cer`, readFileSync(made.intermediateDer));
    served.set(`/root-${name}.cer`, readFileSync(made.rootPem));
  }
  return made;
}

const x509 = (file: string) => new X509Certificate(readFileSync(file));
const fetchIssuer = (url: string) => fetchCaIssuer(url, { timeoutMs: 5000 });

/** Every Mach-O under `root` (by magic), relative paths. */
function machOsUnder(root: string): string[] {
  const found: string[] = [];
  const walk = (at: string) => {
    for (const entry of readdirSync(at)) {
      const full = path.join(at, entry);
      if (statSync(full).isDirectory()) walk(full);
      else {
        const magic = readFileSync(full).subarray(0, 4).toString('hex');
        if (['cffaedfe', 'cefaedfe', 'cafebabe'].includes(magic)) found.push(full);
      }
    }
  };
  walk(root);
  return found;
}

/** A profile naming the chain's leaf, CMS-signed by it with openssl (the test does not care who signs profiles). */
function profileFor(chain: TestChain, folder: string): Buffer {
  const plist = path.join(folder, 'profile.plist');
  const der = x509(chain.leafPem).raw;
  const xml = buildXmlPlist({
    AppIDName: 'Chain',
    ApplicationIdentifierPrefix: ['TEAM123456'],
    CreationDate: new Date(Date.now() - 86_400_000),
    DeveloperCertificates: [der],
    Entitlements: {
      'application-identifier': 'TEAM123456.*',
      'com.apple.developer.team-identifier': 'TEAM123456',
    },
    ExpirationDate: new Date(Date.now() + 7 * 86_400_000),
    Name: 'Chain',
    ProvisionedDevices: ['00008030-001A2B3C4D5E6F70'],
    TeamIdentifier: ['TEAM123456'],
    TeamName: 'Chain Team',
    UUID: '6f2c1b9e-0000-4000-8000-0000000c4a17',
    Version: 1,
  });
  writeFileSync(plist, xml);
  const out = path.join(folder, 'profile.mobileprovision');
  execFileSync('openssl', [
    'cms',
    '-sign',
    '-nodetach',
    '-binary',
    '-in',
    plist,
    '-signer',
    chain.leafPem,
    '-inkey',
    chain.leafKeyPem,
    '-outform',
    'DER',
    '-out',
    out,
  ]);
  return readFileSync(out);
}

describe.skipIf(skip)("Apple's shipped CA certificates", () => {
  it('are the .pem files of apple-pki/, verbatim, and each WWDR intermediate was issued by a shipped root', () => {
    const folder = fileURLToPath(new URL('./apple-pki/', import.meta.url));
    const files = readdirSync(folder)
      .filter((f) => f.endsWith('.pem'))
      .sort();
    expect(Object.keys(APPLE_CA_CERTIFICATES).sort()).toEqual(files);
    for (const file of files)
      expect(APPLE_CA_CERTIFICATES[file]).toBe(readFileSync(path.join(folder, file), 'utf8'));
    const certs = appleCaCertificates();
    const roots = certs.filter(isSelfSigned);
    expect(roots.map((c) => nameOf(c)).sort()).toEqual(['Apple Root CA', 'Apple Root CA - G3']);
    const intermediates = certs.filter((c) => !isSelfSigned(c));
    expect(intermediates).toHaveLength(8);
    for (const c of intermediates)
      expect(
        roots.some((root) => isIssuedBy(c, root)),
        nameOf(c),
      ).toBe(true);
  });

  it("finds the WWDR intermediate and Apple's root of the real Apple-issued leaves in Apple-signed profiles", async () => {
    const profiles = readdirSync(profilesDir).filter((f) => f.endsWith('_apple_signed.mobileprovision'));
    expect(profiles.length).toBeGreaterThanOrEqual(2);
    for (const file of profiles) {
      const leaves = parseProfile(readFileSync(path.join(profilesDir, file))).developerCertificates;
      expect(leaves.length, file).toBeGreaterThan(0);
      for (const developerCertificate of leaves) {
        const leaf = new X509Certificate(developerCertificate.der);
        // No .p12 certificates and nothing fetched: the shipped ones alone complete it.
        const chain = await completeChain(leaf, []);
        expect(
          chain.map((c) => nameOf(c)),
          `${file}: ${nameOf(leaf)}`,
        ).toEqual(['Apple Worldwide Developer Relations Certification Authority', 'Apple Root CA']);
        expect(
          isIssuedBy(leaf, chain[0]!) && isIssuedBy(chain[0]!, chain[1]!) && isSelfSigned(chain[1]!),
        ).toBe(true);
        expect(orderChain(leaf, appleCaCertificates())).toEqual(chain);
        // codesign writes the WWDR intermediate, Apple Root CA, then the leaf (by DER length here).
        expect(
          codesignOrder([leaf.raw, ...chain.map((c) => c.raw)]).map((der) =>
            nameOf(new X509Certificate(der)),
          ),
        ).toEqual([
          'Apple Worldwide Developer Relations Certification Authority',
          'Apple Root CA',
          nameOf(leaf),
        ]);
      }
    }
  });
});

describe.skipIf(skip)('completeIdentityChain and signing', () => {
  const iap = () => ({
    name: 'libiap.dylib',
    bytes: readFileSync(buildDylib(dir, 'iap', 'int iap(void) { return 1; }\n', '@rpath/libiap.dylib')),
  });

  /** Signs the fixture (and an injected dylib) and checks every Mach-O's CMS: leaf, intermediate, root in codesign's order, verifying against the root alone. */
  async function signAndCheck(
    chain: TestChain,
    identity: Parameters<typeof sign>[0]['identity'],
    name: string,
  ) {
    const folder = path.join(dir, `${name}-out`);
    mkdirSync(folder);
    const output = path.join(folder, 'signed.ipa');
    await sign({
      input: fixtureIpa,
      output,
      identity,
      profile: profileFor(chain, folder),
      mode: 1,
      dylibs: { iap: iap() },
    });
    execFileSync('unzip', ['-q', output, '-d', path.join(folder, 'x')]);
    const machOs = machOsUnder(path.join(folder, 'x'));
    expect(machOs.length).toBeGreaterThanOrEqual(2);
    const expected = codesignOrder(
      [chain.leafPem, chain.intermediatePem, chain.rootPem].map((f) => x509(f).raw),
    ).map((der) => nameOf(new X509Certificate(der)));
    expect([...expected].sort()).toEqual([LEAF, 'Test Root', 'Test WWDR']);
    const rootPem = readFileSync(chain.rootPem, 'utf8');
    for (const file of machOs) {
      for (const signature of readSignatures(readFileSync(file))) {
        expect(cmsCertificateNames(signature), file).toEqual(expected);
        const verified = opensslVerifies(signature, rootPem);
        expect(verified.ok, `${file}: ${verified.output}`).toBe(true);
      }
    }
  }

  it('signs with a .p12 that holds its chain, fetching nothing', async () => {
    const chain = chainIn('full', { serveIntermediate: false });
    const source = await completeIdentityChain(
      { p12: readFileSync(chain.leafWithChainP12), password: 'secret' },
      { fetchIssuer },
    );
    expect(source.chain).toEqual([]);
    expect(asked.filter((u) => u.includes('-full.'))).toEqual([]);
    await signAndCheck(chain, source, 'full');
  });

  it('completes a .p12 of the leaf alone from its CA Issuers addresses, then signs with leaf, intermediate and root', async () => {
    const chain = chainIn('bare');
    const p12 = readFileSync(chain.leafP12);
    // Without a way to fetch, the leaf alone is refused, never signed.
    expect(loadIdentity({ p12, password: 'secret' }).chain).toEqual([]);
    await expect(completeIdentityChain({ p12, password: 'secret' })).rejects.toThrow(
      `The issuer of the signing certificate "${LEAF}", "Test WWDR", is not in the .p12 or the certificates given with it, nor among Apple's CA certificates shipped with Sideport: a signature without it fails on the device. Export the .p12 with its issuer's certificate (and the root above it).`,
    );
    await expect(
      sign({
        input: fixtureIpa,
        output: path.join(dir, 'bare.ipa'),
        identity: { p12, password: 'secret' },
        profile: profileFor(chain, path.join(dir, 'bare')),
      }),
    ).rejects.toMatchObject({ code: 'CHAIN_INCOMPLETE' });

    const source = await completeIdentityChain({ p12, password: 'secret' }, { fetchIssuer });
    expect(source.chain.map((pem) => nameOf(new X509Certificate(pem)))).toEqual(['Test WWDR', 'Test Root']);
    expect(asked.filter((u) => u.includes('-bare.'))).toEqual(['/wwdr-bare.cer', '/root-bare.cer']);
    await signAndCheck(chain, source, 'bare');
  });

  it('completes a .p12 holding the intermediate only from the root its CA Issuers address names', async () => {
    const chain = chainIn('half');
    const source = await completeIdentityChain(
      { p12: readFileSync(chain.leafWithIntermediateP12), password: 'secret' },
      { fetchIssuer },
    );
    expect(source.chain.map((pem) => nameOf(new X509Certificate(pem)))).toEqual(['Test Root']);
    expect(asked.filter((u) => u.includes('-half.'))).toEqual(['/root-half.cer']);
    await signAndCheck(chain, source, 'half');
  });

  it('refuses a leaf whose issuer is at no CA Issuers address, saying where it looked', async () => {
    const chain = chainIn('lost', { serveIntermediate: false });
    await expect(
      completeIdentityChain({ p12: readFileSync(chain.leafP12), password: 'secret' }, { fetchIssuer }),
    ).rejects.toThrow(
      `The issuer of the signing certificate "${LEAF}", "Test WWDR", is not in the .p12 or the certificates given with it, nor at its CA Issuers address ${base}/wwdr-lost.cer (HTTP 404), nor among Apple's CA certificates shipped with Sideport: a signature without it fails on the device. Export the .p12 with its issuer's certificate (and the root above it).`,
    );
  });
});
