import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { check } from '../check.js';
import { buildXmlPlist } from '../plist.js';
import { parseProfile } from '../profile.js';
import { SIGN_PROCESS_TUNING } from '../process-tuning.js';
import { openZip } from '../zip/index.js';
import { buildZip } from '../test-support/build-zip.js';
import { fixtureExecutablePath, fixtureIpa, profilesDir } from '../test-support/fixtures.js';
import { withCryptid } from '../test-support/macho-bytes.js';
import { readFixtureEntries } from '../test-support/read-fixture.js';
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

  describe('sign', () => {
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
      ['pkcs12', '-export', '-in', 'cert.pem', '-inkey', 'key.pem', '-out', 'id.p12', '-passout', 'pass:pw'],
      { cwd: dir, stdio: 'ignore' },
    );
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
      const der = execFileSync('openssl', ['x509', '-in', join(dir, 'cert.pem'), '-outform', 'der']);
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
