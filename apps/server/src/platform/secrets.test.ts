import { mkdtemp, readFile, rm, stat, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSecretBox, loadOrCreateSecretKey, SECRET_KEY_FILE } from './secrets.js';

const KEY = 'k'.repeat(24) + '-test-key-0123456789';
const box = createSecretBox(KEY);

describe('secret box', () => {
  it('opens what it sealed, bytes and text alike', () => {
    const p8 = '-----BEGIN PRIVATE KEY-----\nMIGTAgEAMBMGByqGSM49AgEG\n-----END PRIVATE KEY-----\n';
    const sealed = box.seal(p8, 'asc-private-key');
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain('PRIVATE');
    expect(box.open(sealed, 'asc-private-key').toString('utf8')).toBe(p8);

    const p12 = Buffer.from([0x30, 0x82, 0x00, 0xff, 0x00, 0x01]);
    expect(box.open(box.seal(p12, 'sign-p12'), 'sign-p12').equals(p12)).toBe(true);
  });

  it('seals the same secret differently each time', () => {
    expect(box.seal('same', 'x')).not.toBe(box.seal('same', 'x'));
  });

  it('opens with a second box made from the same key (another process)', () => {
    expect(createSecretBox(KEY).open(box.seal('shared', 'x'), 'x').toString()).toBe('shared');
  });

  it('refuses a sealed value with any byte changed', () => {
    const sealed = box.seal('the dev CA key', 'dev-ca-key');
    const bytes = Buffer.from(sealed.slice(3), 'base64url');
    for (const at of [0, 12, 20, bytes.length - 1]) {
      const tampered = Buffer.from(bytes);
      tampered[at] = tampered[at]! ^ 0x01;
      expect(() => box.open(`v1.${tampered.toString('base64url')}`, 'dev-ca-key')).toThrow(
        expect.objectContaining({ code: 'SECRET_UNREADABLE' }),
      );
    }
  });

  it('refuses to open under another key, another purpose, or an unknown version', () => {
    const sealed = box.seal('secret', 'sign-p12');
    const other = createSecretBox('another-key-of-enough-length-0123456789');
    expect(() => other.open(sealed, 'sign-p12')).toThrow(/SECRET_KEY is not the key it was sealed with/);
    expect(() => box.open(sealed, 'asc-private-key')).toThrow(
      expect.objectContaining({ code: 'SECRET_UNREADABLE' }),
    );
    expect(() => box.open(`v2${sealed.slice(2)}`, 'sign-p12')).toThrow(/unknown format "v2"/);
    expect(() => box.open('v1.AAAA', 'sign-p12')).toThrow(/too short/);
  });

  it('refuses a key too short to be a secret', () => {
    expect(() => createSecretBox('changeme')).toThrow(/at least 32 characters/);
  });
});

describe('loadOrCreateSecretKey', () => {
  let dir: string;
  afterEach(async () => rm(dir, { recursive: true, force: true }));

  it('makes a key readable by its owner only, and returns the same key afterwards', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'sideport-secret-'));
    const dataDir = path.join(dir, 'data');
    const key = await loadOrCreateSecretKey(dataDir);
    expect(key.length).toBeGreaterThanOrEqual(43);
    const file = path.join(dataDir, SECRET_KEY_FILE);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await loadOrCreateSecretKey(dataDir)).toBe(key);
    // Usable as SECRET_KEY.
    expect(createSecretBox(key).open(createSecretBox(key).seal('x', 'p'), 'p').toString()).toBe('x');
  });

  it('agrees on one key when several starts race', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'sideport-secret-'));
    const keys = await Promise.all([1, 2, 3, 4].map(() => loadOrCreateSecretKey(dir)));
    expect(new Set(keys).size).toBe(1);
    expect((await readFile(path.join(dir, SECRET_KEY_FILE), 'utf8')).trim()).toBe(keys[0]);
  });

  it('tightens a key file others could read', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'sideport-secret-'));
    const file = path.join(dir, SECRET_KEY_FILE);
    await writeFile(file, 'an-operator-made-key-of-enough-length-000\n');
    await chmod(file, 0o644);
    expect(await loadOrCreateSecretKey(dir)).toBe('an-operator-made-key-of-enough-length-000');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it('refuses an emptied key file instead of making a new key that opens nothing', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'sideport-secret-'));
    await writeFile(path.join(dir, SECRET_KEY_FILE), '\n', { mode: 0o600 });
    await expect(loadOrCreateSecretKey(dir)).rejects.toThrow(/holds no usable key/);
  });
});
