import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codesignOrder, nameOf } from '../chain.js';
import { check } from '../check.js';
import { buildXmlPlist } from '../plist.js';
import { parseProfile } from '../profile.js';
import { SIGN_PROCESS_TUNING } from '../process-tuning.js';
import { openZip } from '../zip/index.js';
import { buildZip } from '../test-support/build-zip.js';
import { fixtureExecutablePath, fixtureIpa, profilesDir } from '../test-support/fixtures.js';
import { withCryptid } from '../test-support/macho-bytes.js';
import { readFixtureEntries } from '../test-support/read-fixture.js';
import { createTestChain, type TestChain } from '../test-support/pki.js';
import { missingTools } from '../test-support/system-tools.js';
import type { CmsSigner } from '../sign/cms.js';
import { signMachO } from '../sign/macho-sign.js';
import { runCli } from './run.js';

const dir = mkdtempSync(join(tmpdir(), 'ipa-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const developmentProfile = join(
  profilesDir,
  'fastlane_very-capable-app_development_with_ProvisionedDevices_selfsigned.mobileprovision',
);

async function run(
  args: string[],
  options: { env?: Record<string, string>; isTTY?: boolean; now?: string } = {},
) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: { write: (text) => void (stdout += text) },
    stderr: { write: (text) => void (stderr += text), isTTY: options.isTTY ?? false },
    env: options.env ?? {},
    now: () => new Date(options.now ?? '2018-06-01T00:00:00Z'),
  });
  return { code, stdout, stderr };
}

describe('sideport-ipa', () => {
  it('info prints the report as JSON with plain progress lines off a terminal', async () => {
    const { code, stdout, stderr } = await run(['info', fixtureIpa]);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ bundleId: 'org.fastlane.very-capable-app', decrypted: true });
    expect(stderr).toBe('Read Mach-O 1/1: Payload/very-capable-app.app/very-capable-app\n');
  });

  it('draws a bar on a terminal', async () => {
    const { stderr } = await run(['info', fixtureIpa], { isTTY: true });
    expect(stderr).toContain('\r[########################] 1/1 ');
    expect(stderr.endsWith('\n')).toBe(true);
  });

  it('check exits 0 with a sentence when decrypted', async () => {
    const { code, stdout } = await run(['check', fixtureIpa]);
    expect(code).toBe(0);
    expect(stdout).toBe(
      'org.fastlane.very-capable-app 1.0 (1) is decrypted: all 1 Mach-O files have cryptid 0.\n',
    );
  });

  it('check exits 1 with the encrypted files when one has cryptid 1', async () => {
    const entries = await readFixtureEntries();
    const flipped = entries.map((e) =>
      e.name === fixtureExecutablePath ? { ...e, data: withCryptid(e.data, 1) } : e,
    );
    const path = join(dir, 'encrypted.ipa');
    writeFileSync(path, buildZip(flipped));
    const { code, stdout } = await run(['check', path]);
    expect(code).toBe(1);
    expect(stdout).toBe(
      'org.fastlane.very-capable-app 1.0 (1) is encrypted: Payload/very-capable-app.app/very-capable-app (arm64) has a non-zero cryptid.\n',
    );
  });

  it('check exits 2 with the reason when the file is not an IPA', async () => {
    const path = join(dir, 'NOT_A_ZIP.ipa');
    writeFileSync(path, 'hello');
    const { code, stdout, stderr } = await run(['check', path]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe('Expected a zip archive (an IPA), found bytes 0x68656c6c.\n');
  });

  it('check exits 2 when the IPA has no app', async () => {
    const path = join(dir, 'NO_APP_BUNDLE.ipa');
    writeFileSync(path, buildZip([{ name: 'Payload/readme.txt', data: 'x' }]));
    const { code, stderr } = await run(['check', path]);
    expect(code).toBe(2);
    expect(stderr).toBe('Expected one Payload/<Name>.app folder in the IPA, found none.\n');
  });

  it('profile prints the fields as JSON', async () => {
    const { code, stdout } = await run(['profile', developmentProfile], { now: '2020-01-01T00:00:00Z' });
    expect(code).toBe(0);
    const printed = JSON.parse(stdout) as Record<string, unknown>;
    expect(printed).toMatchObject({
      name: 'org.fastlane.very-capable-app Development',
      teamId: 'TestFixture',
      provisionedDevices: ['1234567890123456789012345678901234567890'],
      expirationDate: '2019-04-07T01:27:21.000Z',
      isExpired: true,
    });
    expect((printed['entitlements'] as Record<string, unknown>)['aps-environment']).toBe('development');
  });

  it('profile exits 2 on a missing file', async () => {
    const { code, stderr } = await run(['profile', join(dir, 'absent.mobileprovision')]);
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /^Expected a provisioning profile at .*absent\.mobileprovision, found none \(ENOENT\)\.\n$/,
    );
  });

  describe.skipIf(missingTools('openssl', 'unzip'))('sign', () => {
    beforeAll(() => {
      execFileSync(
        'openssl',
        [
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
          '1',
          '-subj',
          '/CN=Test',
        ],
        { cwd: dir, stdio: 'ignore' },
      );
      execFileSync(
        'openssl',
        [
          'pkcs12',
          '-export',
          '-in',
          'cert.pem',
          '-inkey',
          'key.pem',
          '-out',
          'id.p12',
          '-passout',
          'pass:pw',
        ],
        { cwd: dir, stdio: 'ignore' },
      );
    });
    const args = (extra: string[] = []) => [
      'sign',
      fixtureIpa,
      '-o',
      join(dir, 'out.ipa'),
      '--p12',
      join(dir, 'id.p12'),
      '--password-env',
      'P12_PW',
      '--profile',
      developmentProfile,
      ...extra,
    ];

    it('refuses an unset password variable', async () => {
      const { code, stderr } = await run(args());
      expect(code).toBe(2);
      expect(stderr).toBe('Expected the .p12 password in the environment variable P12_PW, found it unset.\n');
    });

    it('refuses a wrong password', async () => {
      const { code, stderr } = await run(args(), { env: { P12_PW: 'nope' } });
      expect(code).toBe(2);
      expect(stderr).toBe(
        'The PKCS#12 file could not be opened with this password: check the password it was exported with.\n',
      );
    });

    it('refuses a certificate the profile does not list', async () => {
      const { code, stderr } = await run(args(['--mode', '1']), { env: { P12_PW: 'pw' } });
      expect(code).toBe(2);
      expect(stderr).toMatch(
        /^Expected the signing certificate "Test" to be one of the 1 developer certificates/,
      );
    });

    it('refuses a --chain file that is not an issuer of the certificate', async () => {
      const { code, stderr } = await run(args(['--chain', join(dir, 'cert.pem'), developmentProfile]), {
        env: { P12_PW: 'pw' },
      });
      expect(code).toBe(2);
      expect(stderr).toMatch(
        /^Expected chain file 2 to be a certificate in PEM or DER, found one that does not parse/,
      );
    });

    it('refuses a --mode that is not a number', async () => {
      const { code, stderr } = await run(args(['--mode', 'x']), { env: { P12_PW: 'pw' } });
      expect(code).toBe(2);
      expect(stderr).toContain('Expected a whole number.');
    });

    it('signs once every input checks out, writing only the output file', async () => {
      // A bare XML profile listing the test certificate, valid on the test's "now".
      const der = new X509Certificate(readFileSync(join(dir, 'cert.pem'))).raw;
      const profile = buildXmlPlist({
        Name: 'Test Development',
        UUID: 'u-1',
        TeamIdentifier: ['TEAM123456'],
        TeamName: 'Test',
        Entitlements: { 'application-identifier': 'TEAM123456.*' },
        CreationDate: new Date('2018-01-01T00:00:00Z'),
        ExpirationDate: new Date('2019-01-01T00:00:00Z'),
        DeveloperCertificates: [der],
      });
      writeFileSync(join(dir, 'listed.mobileprovision'), profile);
      const signed = join(dir, 'signed.ipa');
      const argv = args().map((arg) =>
        arg === developmentProfile
          ? join(dir, 'listed.mobileprovision')
          : arg === join(dir, 'out.ipa')
            ? signed
            : arg,
      );
      const { code, stdout } = await run(argv, { env: { P12_PW: 'pw' } });
      expect(code).toBe(0);
      expect(stdout).toBe(`Signed 1 bundle(s) into ${signed}.\n`);
      execFileSync('unzip', ['-tq', signed]);
      // The signed IPA reads back through this package's own checks, with the profile embedded.
      expect(await check(signed)).toMatchObject({
        bundleId: 'org.fastlane.very-capable-app',
        decrypted: true,
      });
      const archive = await openZip(signed);
      const embedded = await archive.readEntry(
        archive.find('Payload/very-capable-app.app/embedded.mobileprovision')!,
      );
      archive.close();
      expect(parseProfile(embedded).name).toBe('Test Development');
      // With --cache-dir, a second sign of the same version reads the resource digests back.
      const cacheDir = join(dir, 'cache');
      for (const name of ['cached-1.ipa', 'cached-2.ipa']) {
        const cachedArgv = [
          ...argv.map((arg) => (arg === signed ? join(dir, name) : arg)),
          '--cache-dir',
          cacheDir,
        ];
        expect((await run(cachedArgv, { env: { P12_PW: 'pw' } })).code).toBe(0);
      }
      expect(readdirSync(join(cacheDir, 'resource-digests'))).toHaveLength(1);
    });

    it('writes nothing', () => {
      expect(() => readFileSync(join(dir, 'out.ipa'))).toThrow();
    });
  });

  describe.skipIf(missingTools('openssl'))("the signer's chain", () => {
    const chainDir = join(dir, 'chain');
    mkdirSync(chainDir);
    const served = new Map<string, Buffer>();
    const asked: string[] = [];
    const server = createServer((req, res) => {
      asked.push(req.url ?? '');
      const body = served.get(req.url ?? '');
      if (body === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/pkix-cert' }).end(body);
    });
    let chain: TestChain;
    let profilePath = '';
    const now = new Date().toISOString();
    beforeAll(async () => {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      chain = createTestChain(chainDir, 'Apple Distribution: CLI Chain (TEAM123456)', {
        leafCaIssuers: `${base}/wwdr.cer`,
        intermediateCaIssuers: `${base}/root.cer`,
      });
      served.set('/wwdr.cer', readFileSync(chain.intermediateDer));
      served.set('/root.cer', readFileSync(chain.rootPem));
      profilePath = join(chainDir, 'listed.mobileprovision');
      writeFileSync(
        profilePath,
        buildXmlPlist({
          Name: 'Chain',
          UUID: 'u-2',
          TeamIdentifier: ['TEAM123456'],
          TeamName: 'Test',
          Entitlements: { 'application-identifier': 'TEAM123456.*' },
          CreationDate: new Date(Date.now() - 86_400_000),
          ExpirationDate: new Date(Date.now() + 7 * 86_400_000),
          DeveloperCertificates: [new X509Certificate(readFileSync(chain.leafPem)).raw],
        }),
      );
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const signArgs = (output: string, cacheDir: string) => [
      'sign',
      fixtureIpa,
      '-o',
      output,
      '--p12',
      chain.leafP12,
      '--password-env',
      'P12_PW',
      '--profile',
      profilePath,
      '--cache-dir',
      cacheDir,
    ];

    it('sign completes a .p12 of the leaf alone from its CA Issuers addresses, once, and verify finds the chain whole', async () => {
      const cacheDir = join(chainDir, 'cache');
      const first = join(chainDir, 'first.ipa');
      expect((await run(signArgs(first, cacheDir), { env: { P12_PW: 'secret' }, now })).code).toBe(0);
      expect(asked).toEqual(['/wwdr.cer', '/root.cer']);
      const verified = await run(['verify', first]);
      expect(verified.code).toBe(0);
      const carried = codesignOrder(
        [chain.leafPem, chain.intermediatePem, chain.rootPem].map(
          (f) => new X509Certificate(readFileSync(f)).raw,
        ),
      ).map((der) => `"${nameOf(new X509Certificate(der))}"`);
      expect(verified.stdout).toBe(
        `Payload/very-capable-app.app/very-capable-app (arm64): signed by "Apple Distribution: CLI Chain (TEAM123456)", carrying ${carried.join(', ')}: its chain is complete.\n`,
      );
      // Kept in --cache-dir: a second sign asks nobody.
      served.clear();
      expect(
        (await run(signArgs(join(chainDir, 'second.ipa'), cacheDir), { env: { P12_PW: 'secret' }, now }))
          .code,
      ).toBe(0);
      expect(asked).toHaveLength(2);
      // Without the kept answers and with nothing served, the leaf alone is refused, not signed.
      const refused = await run(signArgs(join(chainDir, 'refused.ipa'), join(chainDir, 'empty-cache')), {
        env: { P12_PW: 'secret' },
        now,
      });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(
        /^The issuer of the signing certificate "Apple Distribution: CLI Chain \(TEAM123456\)", "Test WWDR", is not in the \.p12 or the certificates given with it, nor at its CA Issuers address http:\/\/127\.0\.0\.1:\d+\/wwdr\.cer \(HTTP 404\), nor among Apple's CA certificates shipped with Sideport/,
      );
      expect(() => readFileSync(join(chainDir, 'refused.ipa'))).toThrow();
    });

    it('verify reports a signature that carries the leaf alone, and passes a self-signed Xcode one', async () => {
      expect(await run(['verify', fixtureIpa])).toMatchObject({ code: 0 });
      // A signature as openssl writes one given the leaf and nothing else.
      const leafAlone: CmsSigner = {
        maxSizeBytes: 8192,
        sign(content) {
          writeFileSync(join(chainDir, 'cd.bin'), content);
          return execFileSync('openssl', [
            'cms',
            '-sign',
            '-binary',
            '-md',
            'sha256',
            '-in',
            join(chainDir, 'cd.bin'),
            '-signer',
            chain.leafPem,
            '-inkey',
            chain.leafKeyPem,
            '-outform',
            'DER',
          ]);
        },
      };
      const entries = await readFixtureEntries();
      const resigned = entries.map((e) =>
        e.name === fixtureExecutablePath
          ? {
              ...e,
              data: signMachO(e.data, 'very-capable-app', {
                identifier: 'org.fastlane.very-capable-app',
                teamId: 'TEAM123456',
                commonName: 'Apple Distribution: CLI Chain (TEAM123456)',
                infoPlist: Buffer.from('<plist><dict/></plist>'),
                codeResources: Buffer.from('<plist><dict/></plist>'),
                entitlements: {},
                isMainBinary: true,
                signer: leafAlone,
                now: new Date(),
              }).bytes,
            }
          : e,
      );
      const path = join(chainDir, 'leaf-alone.ipa');
      writeFileSync(path, buildZip(resigned));
      const { code, stdout } = await run(['verify', path]);
      expect(code).toBe(1);
      expect(stdout).toBe(
        'The signature of Payload/very-capable-app.app/very-capable-app (arm64) carries "Apple Distribution: CLI Chain (TEAM123456)" alone, without "Test WWDR", the issuer of "Apple Distribution: CLI Chain (TEAM123456)": a device cannot build its chain.\n',
      );
    });
  });

  it('runs as the installed bin, started by its #! line with the signing process settings', () => {
    // The built copy (the root typecheck builds it) through the committed shim, as npx runs it.
    const bin = fileURLToPath(new URL('../../bin/sideport-ipa.js', import.meta.url));
    const out = execFileSync(bin, ['check', fixtureIpa], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    expect(out).toBe(
      'org.fastlane.very-capable-app 1.0 (1) is decrypted: all 1 Mach-O files have cryptid 0.\n',
    );
    expect(readFileSync(bin, 'utf8').split('\n')[0]).toBe(
      `#!/usr/bin/env -S ${Object.entries(SIGN_PROCESS_TUNING.env)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')} node ${SIGN_PROCESS_TUNING.execArgv.join(' ')}`,
    );
  });

  it('exits 2 on an unknown command', async () => {
    const { code, stderr } = await run(['frobnicate']);
    expect(code).toBe(2);
    expect(stderr).toContain("unknown command 'frobnicate'");
  });
});
