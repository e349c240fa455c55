import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { issue, p12Of } from '../test/device-answers.js';
import { cliJs, md5 } from '../test/server-process.js';
import { loadConfig } from './config.js';

const repositoryRoot = path.resolve(import.meta.dirname, '../../../..');

/** The message loadConfig throws, or '' when it does not. */
function message(load: () => unknown): string {
  try {
    load();
    return '';
  } catch (err) {
    return (err as Error).message;
  }
}

describe('loadConfig', () => {
  it('gives working defaults for an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      PORT: 8080,
      HOST: '0.0.0.0',
      DATA_DIR: path.resolve('data'),
      FREE_DAILY_LIMIT: 3,
    });
    expect(config.DATABASE_URL).toBeUndefined();
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('names every bad variable in one message', () => {
    expect(() => loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://x', CHAT_URL: 'not a url' })).toThrow(
      /PORT: must be a number[\s\S]*DATABASE_URL: must be a postgres:\/\/ URL[\s\S]*CHAT_URL: must be an absolute URL/,
    );
  });

  it('reads TRUST_PROXY as no proxy, a count of proxies (true: one), or their addresses and ranges', () => {
    const trust = (value: string) => loadConfig({ TRUST_PROXY: value }).TRUST_PROXY;
    expect(loadConfig({}).TRUST_PROXY).toBe(false);
    expect([trust('false'), trust('0'), trust('no')]).toEqual([false, false, false]);
    expect([trust('true'), trust('yes'), trust('1'), trust('2')]).toEqual([1, 1, 1, 2]);
    expect(trust('127.0.0.1, 10.0.0.0/8,fd00::/8,loopback')).toEqual([
      '127.0.0.1',
      '10.0.0.0/8',
      'fd00::/8',
      'loopback',
    ]);
    for (const bad of ['maybe', '10.0.0.0/33', '10.0.0/8', 'nginx', '17'])
      expect(() => loadConfig({ TRUST_PROXY: bad }), bad).toThrow(/TRUST_PROXY: must be/);
  });

  it('refuses an admin id without a password, and a short admin password', () => {
    expect(() => loadConfig({ ADMIN_ID: 'root' })).toThrow(
      /ADMIN_PASSWORD: ADMIN_ID and ADMIN_PASSWORD must be set together/,
    );
    expect(() => loadConfig({ ADMIN_ID: 'root', ADMIN_PASSWORD: 'short' })).toThrow(
      /ADMIN_PASSWORD: must be at least 8/,
    );
  });

  it('lists the ADMIN_ID and ADMIN_PASSWORD problems with every other problem, in one message', () => {
    expect(message(() => loadConfig({ ADMIN_ID: 'ab', ADMIN_PASSWORD: 'short', PORT: 'eighty' }))).toBe(
      [
        'Invalid configuration:',
        '  PORT: must be a number',
        '  ADMIN_ID: must be 4 to 32 letters, digits and . _ @ - (an id the sign-up form takes)',
        '  ADMIN_PASSWORD: must be at least 8 characters',
      ].join('\n'),
    );
    expect(message(() => loadConfig({ ADMIN_PASSWORD: 'a long password', NODE_ENV: 'production' }))).toBe(
      [
        'Invalid configuration:',
        '  ADMIN_ID: ADMIN_ID and ADMIN_PASSWORD must be set together',
        '  SECRET_KEY: must be set in production (32 or more random characters)',
        '  STRIPE_SECRET_KEY: must be set in production (or set BILLING_DEV_ALLOWED=true for the test-mode checkout)',
      ].join('\n'),
    );
  });

  it('holds ADMIN_ID to the sign-up rules and refuses the id as its password', () => {
    const admin = (id: string, password = 'a long password') =>
      message(() => loadConfig({ ADMIN_ID: id, ADMIN_PASSWORD: password }));
    for (const id of ['ab', 'has space', 'x'.repeat(33), 'semi;colon']) {
      expect(admin(id)).toBe(
        'Invalid configuration:\n  ADMIN_ID: must be 4 to 32 letters, digits and . _ @ - (an id the sign-up form takes)',
      );
    }
    expect(admin('Constructor')).toBe(
      "Invalid configuration:\n  ADMIN_ID: Constructor is reserved (it names JavaScript's object machinery); choose another id",
    );
    expect(admin('operator', 'Operator')).toBe(
      'Invalid configuration:\n  ADMIN_PASSWORD: must not be the admin id',
    );
    expect(loadConfig({ ADMIN_ID: 'op.admin@site', ADMIN_PASSWORD: 'operator password' })).toMatchObject({
      ADMIN_ID: 'op.admin@site',
      ADMIN_PASSWORD: 'operator password',
    });
  });

  it('takes a relative DATA_DIR and WEB_DIST_DIR from the working directory, as every tool does', () => {
    const started = process.cwd();
    const folder = realpathSync(mkdtempSync(path.join(tmpdir(), 'sideport-cwd-')));
    try {
      process.chdir(folder);
      const config = loadConfig({ DATA_DIR: 'var/sideport', WEB_DIST_DIR: 'web' });
      expect(config.DATA_DIR).toBe(path.join(folder, 'var/sideport'));
      expect(config.WEB_DIST_DIR).toBe(path.join(folder, 'web'));
      // The defaults: ./data here, and the web app built in this repository wherever the process runs.
      expect(loadConfig({})).toMatchObject({
        DATA_DIR: path.join(folder, 'data'),
        WEB_DIST_DIR: path.join(repositoryRoot, 'apps/web/dist'),
      });
      expect(loadConfig({ DATA_DIR: '/srv/sideport' }).DATA_DIR).toBe('/srv/sideport');
      process.chdir(path.join(repositoryRoot, 'apps/server'));
      expect(loadConfig({}).DATA_DIR).toBe(path.join(repositoryRoot, 'apps/server/data'));
    } finally {
      process.chdir(started);
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('requires SECRET_KEY in production, naming it beside every other problem', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', BILLING_DEV_ALLOWED: 'true' })).toThrow(
      /SECRET_KEY: must be set in production/,
    );
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(
      /SECRET_KEY: must be set[\s\S]*STRIPE_SECRET_KEY: must be set/,
    );
    expect(() => loadConfig({ SECRET_KEY: 'short' })).toThrow(/SECRET_KEY: must be at least 32 characters/);
    expect(
      loadConfig({ NODE_ENV: 'production', BILLING_DEV_ALLOWED: 'true', SECRET_KEY: 'k'.repeat(32) })
        .SECRET_KEY,
    ).toBe('k'.repeat(32));
  });

  it('treats empty strings as unset', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: '' }).PORT).toBe(8080);
  });
});

describe('loadConfig: the sign service', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sideport-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const ascKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
  const asc = {
    ASC_KEY_ID: 'KEY1234567',
    ASC_ISSUER_ID: '69a6de70-0000-47e3-e053-5b8c7c11a4d1',
    ASC_PRIVATE_KEY: ascKey,
  };
  const identity = issue('Operator');
  const p12 = path.join(dir, 'identity.p12');
  writeFileSync(p12, p12Of(identity, 'right-pass'));

  it('takes an App Store Connect key with literal \\n for line breaks', () => {
    const config = loadConfig({ ...asc, ASC_PRIVATE_KEY: ascKey.replace(/\n/g, '\\n') });
    expect(config.ASC_PRIVATE_KEY).toBe(ascKey.trim());
  });

  it('takes the same key in SEC1 form (BEGIN EC PRIVATE KEY) and keeps it as the PKCS#8 Apple issues', () => {
    const sec1 = createPrivateKey(ascKey).export({ type: 'sec1', format: 'pem' }).toString();
    expect(sec1).toContain('-----BEGIN EC PRIVATE KEY-----');
    const config = loadConfig({ ...asc, ASC_PRIVATE_KEY: sec1 });
    expect(config.ASC_PRIVATE_KEY).toBe(ascKey.trim());
  });

  it('wants the three App Store Connect settings together', () => {
    expect(() => loadConfig({ ASC_KEY_ID: asc.ASC_KEY_ID })).toThrow(
      /ASC_ISSUER_ID: required with the other App Store Connect settings[\s\S]*ASC_PRIVATE_KEY: required with the other/,
    );
  });

  it('refuses a key that is not an App Store Connect one, without showing it', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    let message = '';
    try {
      loadConfig({ ...asc, ASC_PRIVATE_KEY: rsa, ASC_ISSUER_ID: 'not-a-uuid' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/ASC_ISSUER_ID: must be the issuer id \(a UUID\)/);
    expect(message).toMatch(/ASC_PRIVATE_KEY: must be the text of the AuthKey_<key id>\.p8 file/);
    expect(message).not.toContain(rsa.split('\n')[1]);
  });

  it('checks SIGN_P12 and PROFILE_SIGNING_P12 open with their passwords, naming neither password', () => {
    expect(loadConfig({ ...asc, SIGN_P12: p12, SIGN_P12_PASSWORD: 'right-pass' }).SIGN_P12).toBe(p12);
    let message = '';
    try {
      loadConfig({
        ...asc,
        SIGN_P12: p12,
        SIGN_P12_PASSWORD: 'wrong-pass',
        PROFILE_SIGNING_P12: path.join(dir, 'missing.p12'),
      });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/SIGN_P12: .*identity\.p12 could not be opened with SIGN_P12_PASSWORD/);
    expect(message).toMatch(/PROFILE_SIGNING_P12: cannot read .*missing\.p12 \(ENOENT\)/);
    expect(message).not.toContain('wrong-pass');
  });

  it('reads more developer accounts from ASC_ACCOUNTS_FILE, their key files beside it', () => {
    const keys = path.join(dir, 'keys');
    mkdirSync(keys, { recursive: true });
    const second = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    writeFileSync(path.join(keys, 'AuthKey_SECOND0001.p8'), second);
    const file = path.join(keys, 'accounts.json');
    writeFileSync(
      file,
      JSON.stringify([
        {
          keyId: 'SECOND0001',
          issuerId: '69a6de70-0002-47e3-e053-5b8c7c11a4d1',
          privateKeyFile: 'AuthKey_SECOND0001.p8',
          name: 'Team two',
          membershipRenewsAt: '2026-09-01',
        },
        {
          keyId: 'THIRD00001',
          issuerId: '69a6de70-0003-47e3-e053-5b8c7c11a4d1',
          privateKey: second.replace(/\n/g, '\\n'),
        },
      ]),
    );
    const config = loadConfig({ ...asc, ASC_ACCOUNTS_FILE: file });
    expect(config.ASC_ACCOUNTS).toEqual([
      {
        keyId: 'SECOND0001',
        issuerId: '69a6de70-0002-47e3-e053-5b8c7c11a4d1',
        privateKeyPem: second.trim(),
        name: 'Team two',
        membershipRenewsAt: new Date('2026-09-01T00:00:00Z'),
      },
      { keyId: 'THIRD00001', issuerId: '69a6de70-0003-47e3-e053-5b8c7c11a4d1', privateKeyPem: second.trim() },
    ]);
    expect(loadConfig(asc).ASC_ACCOUNTS).toEqual([]);
    expect(config.ASC_DEVICES_PER_FAMILY).toBe(100);
  });

  it('names each account of ASC_ACCOUNTS_FILE that is wrong, and never shows a key', () => {
    const file = path.join(dir, 'bad-accounts.json');
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    writeFileSync(
      file,
      JSON.stringify([
        { keyId: 'SECOND0001', issuerId: asc.ASC_ISSUER_ID.toUpperCase(), privateKey: rsa },
        {
          keyId: 'THIRD00001',
          issuerId: '69a6de70-0003-47e3-e053-5b8c7c11a4d1',
          privateKeyFile: 'missing.p8',
        },
        { keyId: 'x', issuerId: '69a6de70-0004-47e3-e053-5b8c7c11a4d1', privateKey: ascKey, colour: 'red' },
      ]),
    );
    const problems = message(() =>
      loadConfig({ ...asc, ASC_ACCOUNTS_FILE: file, ASC_DEVICES_PER_FAMILY: '101' }),
    );
    expect(problems).toMatch(/ASC_DEVICES_PER_FAMILY: must be at most 100 \(Apple's limit per family\)/);
    expect(problems).not.toMatch(/ASC_ACCOUNTS_FILE/);
    const listed = message(() => loadConfig({ ...asc, ASC_ACCOUNTS_FILE: file }));
    expect(listed.split('\n').slice(1)).toEqual([
      `  ASC_ACCOUNTS_FILE: account 1 of ${file}: the private key must be an AuthKey .p8 file (a PEM PRIVATE KEY on the P-256 curve)`,
      `  ASC_ACCOUNTS_FILE: account 1 of ${file}: the team of issuer ${asc.ASC_ISSUER_ID.toUpperCase()} is listed twice (ASC_ISSUER_ID included): one key per team`,
      `  ASC_ACCOUNTS_FILE: account 2 of ${file}: cannot read privateKeyFile ${path.join(dir, 'missing.p8')} (ENOENT)`,
      `  ASC_ACCOUNTS_FILE: account 3 of ${file}: keyId must be the key id shown beside the key in App Store Connect (letters and digits)`,
      `  ASC_ACCOUNTS_FILE: account 3 of ${file}: unknown field colour (keyId, issuerId, privateKey or privateKeyFile, name, membershipRenewsAt)`,
    ]);
    expect(listed).not.toContain(rsa.split('\n')[1]);
    writeFileSync(file, '{"keyId": "SECOND0001"}');
    expect(message(() => loadConfig({ ...asc, ASC_ACCOUNTS_FILE: file }))).toContain(
      `ASC_ACCOUNTS_FILE: ${file} must hold a JSON list of accounts`,
    );
    expect(message(() => loadConfig({ ASC_ACCOUNTS_FILE: file }))).toContain(
      'ASC_ACCOUNTS_FILE: adds accounts to the one of ASC_KEY_ID: set ASC_KEY_ID, ASC_ISSUER_ID and ASC_PRIVATE_KEY too',
    );
  });

  it('uses SIGN_P12 only with an App Store Connect key', () => {
    expect(() => loadConfig({ SIGN_P12: p12, SIGN_P12_PASSWORD: 'right-pass' })).toThrow(
      /SIGN_P12: is used with an App Store Connect key: set ASC_KEY_ID, ASC_ISSUER_ID and ASC_PRIVATE_KEY too/,
    );
  });

  it('takes relative file settings from the working directory, and names the file it looked for', () => {
    const started = process.cwd();
    const folder = realpathSync(mkdtempSync(path.join(dir, 'operator-')));
    mkdirSync(path.join(folder, 'dylibs'));
    for (const file of ['dylibs/iap.dylib', 'dylibs/igg.dylib', 'Feather.ipa'])
      writeFileSync(path.join(folder, file), 'x');
    writeFileSync(path.join(folder, 'identity.p12'), p12Of(identity, 'right-pass'));
    writeFileSync(path.join(folder, 'device-ca.pem'), identity.pem);
    const relative = {
      ...asc,
      SIGN_DYLIBS_IAP: 'dylibs/iap.dylib',
      SIGN_DYLIBS_IGG: './dylibs/igg.dylib',
      FEATHER_IPA: 'Feather.ipa',
      SIGN_P12: 'identity.p12',
      SIGN_P12_PASSWORD: 'right-pass',
      PROFILE_SIGNING_P12: 'identity.p12',
      PROFILE_SIGNING_P12_PASSWORD: 'right-pass',
      DEVICE_CA_PEM: 'device-ca.pem',
    };
    try {
      process.chdir(folder);
      expect(loadConfig(relative)).toMatchObject({
        SIGN_DYLIBS_IAP: [path.join(folder, 'dylibs/iap.dylib')],
        SIGN_DYLIBS_IGG: [path.join(folder, 'dylibs/igg.dylib')],
        FEATHER_IPA: path.join(folder, 'Feather.ipa'),
        SIGN_P12: path.join(folder, 'identity.p12'),
        PROFILE_SIGNING_P12: path.join(folder, 'identity.p12'),
        DEVICE_CA_PEM: identity.pem,
      });
      process.chdir(repositoryRoot);
      expect(message(() => loadConfig(relative))).toBe(
        [
          'Invalid configuration:',
          `  SIGN_P12: cannot read ${path.join(repositoryRoot, 'identity.p12')} (ENOENT)`,
          `  PROFILE_SIGNING_P12: cannot read ${path.join(repositoryRoot, 'identity.p12')} (ENOENT)`,
          "  DEVICE_CA_PEM: must be PEM certificates (Apple's device CA) or the path of a file holding them",
          `  SIGN_DYLIBS_IAP: there is no file at ${path.join(repositoryRoot, 'dylibs/iap.dylib')}`,
          `  SIGN_DYLIBS_IGG: there is no file at ${path.join(repositoryRoot, 'dylibs/igg.dylib')}`,
          `  FEATHER_IPA: there is no file at ${path.join(repositoryRoot, 'Feather.ipa')}`,
        ].join('\n'),
      );
    } finally {
      process.chdir(started);
    }
  });

  it('reads DEVICE_CA_PEM as PEM text or from a file, and refuses anything else', () => {
    const file = path.join(dir, 'device-ca.pem');
    writeFileSync(file, identity.pem);
    expect(loadConfig({ DEVICE_CA_PEM: file }).DEVICE_CA_PEM).toBe(identity.pem);
    expect(loadConfig({ DEVICE_CA_PEM: identity.pem.replace(/\n/g, '\\n') }).DEVICE_CA_PEM).toBe(
      identity.pem,
    );
    expect(() => loadConfig({ DEVICE_CA_PEM: 'no such file' })).toThrow(
      /DEVICE_CA_PEM: must be PEM certificates/,
    );
    expect(() =>
      loadConfig({ DEVICE_CA_PEM: '-----BEGIN CERTIFICATE-----\\nAAAA\\n-----END CERTIFICATE-----' }),
    ).toThrow(/DEVICE_CA_PEM: must be PEM certificates/);
  });
});

describe('npm start and npx sideport run in one folder', () => {
  it(
    'meet the same ./data there: npm start works in the folder npm was run from',
    { timeout: 180_000 },
    async () => {
      const folder = realpathSync(mkdtempSync(path.join(tmpdir(), 'sideport-operator-')));
      const env = {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? folder,
        ADMIN_PW: 'operator password',
      };
      let server: ChildProcess | undefined;
      let serverPid: number | undefined;
      try {
        // `npx sideport` runs the operator CLI where the operator is; DATA_DIR is unset, so ./data.
        const made = spawnSync(
          process.execPath,
          [cliJs, 'user:create', 'operator', '--password-env', 'ADMIN_PW', '--grade', '1'],
          {
            cwd: folder,
            env,
            encoding: 'utf8',
          },
        );
        expect(made.stdout).toContain('User operator is ready with grade 1 (admin).');

        // `npm start` of this repository, run in the same folder (npm runs the script elsewhere).
        server = spawn('npm', ['--prefix', repositoryRoot, 'start'], {
          cwd: folder,
          env: { ...env, HOST: '127.0.0.1', PORT: '0', npm_config_update_notifier: 'false' },
          stdio: ['ignore', 'pipe', 'pipe'],
          // Its own process group: npm, its shell and the server stop together.
          detached: true,
        });
        const started = await listening(server);
        serverPid = started.serverPid;
        const output = started.output;
        expect(output).toContain(`database: PGlite ${path.join(folder, 'data', 'db')}`);
        const url = /Sideport listening on (http:\/\/[\d.:]+)/.exec(output)![1]!;
        const signIn = await fetch(`${url}/api/sign-in`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
          body: JSON.stringify({ id: 'operator', pw: md5('operator password') }),
        });
        expect(await signIn.json()).toEqual({ grade: 1 });
      } finally {
        if (server?.pid !== undefined) await stopGroup(server, serverPid);
        rmSync(folder, { recursive: true, force: true });
      }
    },
  );
});

/** The output up to the server's line that it listens, and the server's own process id from it. */
function listening(child: ChildProcess): Promise<{ output: string; serverPid: number }> {
  let out = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.includes('Sideport listening on '));
      if (line) resolve({ output: out, serverPid: (JSON.parse(line) as { pid: number }).pid });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`npm start exited with ${code}:\n${out}`)));
  });
}

/** SIGTERM to npm's process group; resolves once the server in it has shut down. */
async function stopGroup(child: ChildProcess, serverPid: number | undefined): Promise<void> {
  process.kill(-child.pid!, 'SIGTERM');
  const isRunning = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  for (let i = 0; i < 600 && serverPid !== undefined && isRunning(serverPid); i++)
    await new Promise((r) => setTimeout(r, 100));
}
