/**
 * Sealing of small secrets kept in the database (App Store Connect keys, PKCS#12 files, the dev
 * CA's key) under one key from `SECRET_KEY`.
 *
 * Format, version 1: `v1.` + base64url(iv[12] || tag[16] || ciphertext), AES-256-GCM. The AES key
 * is derived once per process with scrypt from the configured string, so an operator's passphrase
 * costs an attacker as much as a password would; the version prefix lets a later format (or key
 * rotation) open what this one sealed. `purpose` is bound as additional data: a sealed ASC key
 * cannot be opened as a p12 password, even by code that mixes them up.
 */
import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';
import { chmod, link, mkdir, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fail } from './errors.js';

export interface SecretBox {
  /** Encrypts `plain` for `purpose` ('asc-private-key', 'sign-p12' ...). */
  seal(plain: Buffer | string, purpose: string): string;
  /** Decrypts what `seal` made for the same purpose; throws SECRET_UNREADABLE otherwise. */
  open(sealed: string, purpose: string): Buffer;
}

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** A key shorter than this is a typo or a placeholder, not a secret. */
export const SECRET_KEY_MIN_LENGTH = 32;
// Fixed salt: the key must derive the same in every process; its secrecy is the key string's.
const SCRYPT_SALT = 'sideport/secret-box/v1';
// N = 2^15, r = 8: 32 MiB and about 0.1 s, once per process.
const SCRYPT_OPTIONS = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

const unreadable = (why: string) => fail('SECRET_UNREADABLE', why);

export function createSecretBox(secretKey: string): SecretBox {
  if (secretKey.length < SECRET_KEY_MIN_LENGTH) {
    throw fail('SECRET_KEY_SHORT', SECRET_KEY_MIN_LENGTH);
  }
  const key = scryptSync(secretKey, SCRYPT_SALT, 32, SCRYPT_OPTIONS);
  const aad = (purpose: string) => Buffer.from(`sideport-secret/${VERSION}/${purpose}`, 'utf8');

  return {
    seal(plain, purpose) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(aad(purpose));
      const ciphertext = Buffer.concat([
        cipher.update(typeof plain === 'string' ? Buffer.from(plain, 'utf8') : plain),
        cipher.final(),
      ]);
      return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url')}`;
    },
    open(sealed, purpose) {
      const dot = sealed.indexOf('.');
      const version = dot < 0 ? '' : sealed.slice(0, dot);
      if (version !== VERSION) throw unreadable(`unknown format ${JSON.stringify(version.slice(0, 8))}`);
      const bytes = Buffer.from(sealed.slice(dot + 1), 'base64url');
      if (bytes.length < IV_BYTES + TAG_BYTES) throw unreadable('too short');
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(aad(purpose));
      decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      try {
        return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
      } catch (err) {
        throw Object.assign(unreadable('authentication failed'), { cause: err });
      }
    },
  };
}

export const SECRET_KEY_FILE = 'secret-key';

/**
 * The embedded default's SECRET_KEY: read from `dataDir/secret-key`, or made there (32 random
 * bytes, base64url, mode 0600) on first start. Two processes starting together agree on one key:
 * the file is written aside and hard-linked into place, which fails if the other was first.
 */
export async function loadOrCreateSecretKey(dataDir: string): Promise<string> {
  const file = path.join(dataDir, SECRET_KEY_FILE);
  const existing = await readKeyFile(file);
  if (existing !== undefined) return existing;
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const aside = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`;
  await writeFile(aside, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    await link(aside, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    await unlink(aside);
  }
  const made = await readKeyFile(file);
  if (made === undefined) throw new Error(`${file} vanished while it was being made.`);
  return made;
}

async function readKeyFile(file: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  // A key file others can read is a leaked key waiting to happen: tighten it rather than refuse to start.
  if (((await stat(file)).mode & 0o077) !== 0) await chmod(file, 0o600);
  const key = text.trim();
  if (key.length < SECRET_KEY_MIN_LENGTH) {
    throw fail('SECRET_KEY_FILE_SHORT', file, SECRET_KEY_MIN_LENGTH);
  }
  return key;
}
