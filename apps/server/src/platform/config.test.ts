import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { issue, p12Of } from '../test/device-answers.js';
import { loadConfig } from './config.js';

const repositoryRoot = path.resolve(import.meta.dirname, '../../../..');

describe('loadConfig', () => {
  it('gives working defaults for an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ PORT: 8080, HOST: '0.0.0.0', DATA_DIR: path.join(repositoryRoot, 'data'), FREE_DAILY_LIMIT: 3 });
    expect(config.DATABASE_URL).toBeUndefined();
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('names every bad variable in one message', () => {
    expect(() => loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://x', CHAT_URL: 'not a url' })).toThrow(
      /PORT: must be a number[\s\S]*DATABASE_URL: must be a postgres:\/\/ URL[\s\S]*CHAT_URL: must be an absolute URL/,
    );
  });

  it('refuses an admin id without a password, and a short admin password', () => {
    expect(() => loadConfig({ ADMIN_ID: 'root' })).toThrow(/ADMIN_PASSWORD: ADMIN_ID and ADMIN_PASSWORD must be set together/);
    expect(() => loadConfig({ ADMIN_ID: 'root', ADMIN_PASSWORD: 'short' })).toThrow(/ADMIN_PASSWORD: must be at least 8/);
  });

  it('resolves a relative DATA_DIR from the repository root, whichever folder the process runs in', () => {
    const started = process.cwd();
    try {
      // npm start runs in apps/server, npx sideport in the repository root: both must meet one ./data.
      const seen = [repositoryRoot, path.join(repositoryRoot, 'apps/server'), '/'].map((dir) => {
        process.chdir(dir);
        return [loadConfig({}).DATA_DIR, loadConfig({ DATA_DIR: 'var/sideport' }).DATA_DIR];
      });
      expect(new Set(seen.map((pair) => pair.join('|'))).size).toBe(1);
      expect(seen[0]).toEqual([path.join(repositoryRoot, 'data'), path.join(repositoryRoot, 'var/sideport')]);
      expect(loadConfig({ DATA_DIR: '/srv/sideport' }).DATA_DIR).toBe('/srv/sideport');
    } finally {
      process.chdir(started);
    }
  });

  it('requires SECRET_KEY in production, naming it beside every other problem', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', BILLING_DEV_ALLOWED: 'true' })).toThrow(/SECRET_KEY: must be set in production/);
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SECRET_KEY: must be set[\s\S]*STRIPE_SECRET_KEY: must be set/);
    expect(() => loadConfig({ SECRET_KEY: 'short' })).toThrow(/SECRET_KEY: must be at least 32 characters/);
    expect(loadConfig({ NODE_ENV: 'production', BILLING_DEV_ALLOWED: 'true', SECRET_KEY: 'k'.repeat(32) }).SECRET_KEY).toBe('k'.repeat(32));
  });

  it('treats empty strings as unset', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: '' }).PORT).toBe(8080);
  });
});

describe('loadConfig: the sign service', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sideport-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const ascKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const asc = { ASC_KEY_ID: 'KEY1234567', ASC_ISSUER_ID: '69a6de70-0000-47e3-e053-5b8c7c11a4d1', ASC_PRIVATE_KEY: ascKey };
  const identity = issue('Operator');
  const p12 = path.join(dir, 'identity.p12');
  writeFileSync(p12, p12Of(identity, 'right-pass'));

  it('takes an App Store Connect key with literal \\n for line breaks', () => {
    const config = loadConfig({ ...asc, ASC_PRIVATE_KEY: ascKey.replace(/\n/g, '\\n') });
    expect(config.ASC_PRIVATE_KEY).toBe(ascKey.trim());
  });

  it('wants the three App Store Connect settings together', () => {
    expect(() => loadConfig({ ASC_KEY_ID: asc.ASC_KEY_ID })).toThrow(
      /ASC_ISSUER_ID: required with the other App Store Connect settings[\s\S]*ASC_PRIVATE_KEY: required with the other/,
    );
  });

  it('refuses a key that is not an App Store Connect one, without showing it', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
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
      loadConfig({ ...asc, SIGN_P12: p12, SIGN_P12_PASSWORD: 'wrong-pass', PROFILE_SIGNING_P12: path.join(dir, 'missing.p12') });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/SIGN_P12: .*identity\.p12 could not be opened with SIGN_P12_PASSWORD/);
    expect(message).toMatch(/PROFILE_SIGNING_P12: cannot read .*missing\.p12 \(ENOENT\)/);
    expect(message).not.toContain('wrong-pass');
  });

  it('uses SIGN_P12 only with an App Store Connect key', () => {
    expect(() => loadConfig({ SIGN_P12: p12, SIGN_P12_PASSWORD: 'right-pass' })).toThrow(
      /SIGN_P12: is used with an App Store Connect key: set ASC_KEY_ID, ASC_ISSUER_ID and ASC_PRIVATE_KEY too/,
    );
  });

  it('reads DEVICE_CA_PEM as PEM text or from a file, and refuses anything else', () => {
    const file = path.join(dir, 'device-ca.pem');
    writeFileSync(file, identity.pem);
    expect(loadConfig({ DEVICE_CA_PEM: file }).DEVICE_CA_PEM).toBe(identity.pem);
    expect(loadConfig({ DEVICE_CA_PEM: identity.pem.replace(/\n/g, '\\n') }).DEVICE_CA_PEM).toBe(identity.pem);
    expect(() => loadConfig({ DEVICE_CA_PEM: 'no such file' })).toThrow(/DEVICE_CA_PEM: must be PEM certificates/);
    expect(() => loadConfig({ DEVICE_CA_PEM: '-----BEGIN CERTIFICATE-----\\nAAAA\\n-----END CERTIFICATE-----' })).toThrow(
      /DEVICE_CA_PEM: must be PEM certificates/,
    );
  });
});
