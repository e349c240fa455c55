import { createReadStream } from 'node:fs';
import { chmod, copyFile, mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { create as createContentDisposition } from 'content-disposition';

/**
 * Where decrypted IPAs and signed artifacts live: a folder on local disk (the embedded default)
 * or any S3-compatible store. Keys are relative paths (`ipa/284882215/1234/ab12.ipa`); writers
 * never overwrite a key in place, so a reader never sees half a file.
 */
export interface FileStore {
  readonly kind: 'local' | 's3';
  /** For the start-up line; never contains a secret. */
  readonly description: string;
  /** Takes a complete local file under `key` (moved when it can be, else copied and removed). */
  putFile(key: string, localPath: string): Promise<void>;
  /** Reads a stored file, whole or the byte range [start, end]. */
  read(key: string, range?: { start: number; end: number }): Promise<Readable>;
  sizeOf(key: string): Promise<number | undefined>;
  delete(key: string): Promise<void>;
  /** Local disk: the file's path, for serving with ranges. S3: undefined. */
  localPath(key: string): string | undefined;
  /** S3: a presigned GET URL that expires; local disk: undefined (the server signs its own URLs). */
  presignGet(
    key: string,
    options: { expiresInSeconds: number; fileName: string },
  ): Promise<string | undefined>;
  /**
   * Every stored file, for the sweep of files nothing names (modules/files/sweep.ts). Keys that
   * Sideport could not have made (another tool's objects under the same prefix) are left out.
   */
  list(): AsyncIterable<StoredFile>;
}

export interface StoredFile {
  key: string;
  sizeBytes: number;
  /** Local disk: the file's mtime; S3: the object's LastModified. */
  modifiedAt: Date;
}

const SAFE_KEY = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;

export const isSafeKey = (key: string) =>
  SAFE_KEY.test(key) && !key.split('/').some((part) => part === '..' || part === '.');

export function checkKey(key: string) {
  // Keys are made by Sideport, never by a client; this only guards against a bug writing outside.
  if (!isSafeKey(key)) throw new Error(`Refusing the storage key ${JSON.stringify(key)}.`);
}

export function createLocalStore(root: string): FileStore {
  const full = (key: string) => {
    checkKey(key);
    return path.join(root, key);
  };
  return {
    kind: 'local',
    description: `local disk ${root}`,
    async putFile(key, localPath) {
      const target = full(key);
      // Stored files are the server user's alone, whatever made them (docs/security.md, Data at rest).
      await chmod(localPath, 0o600);
      await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
      try {
        await rename(localPath, target);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
        // Another filesystem: copy to a temporary name first, so the key appears whole or not at all.
        const partial = `${target}.partial`;
        await copyFile(localPath, partial);
        await rename(partial, target);
        await rm(localPath, { force: true });
      }
    },
    async read(key, range) {
      return createReadStream(full(key), range ? { start: range.start, end: range.end } : {});
    },
    async sizeOf(key) {
      try {
        return (await stat(full(key))).size;
      } catch {
        return undefined;
      }
    },
    async delete(key) {
      await rm(full(key), { force: true });
    },
    localPath: full,
    presignGet: async () => undefined,
    async *list() {
      // Depth-first over the folder; a folder removed meanwhile (a sweep elsewhere) is just empty.
      const folders = [''];
      while (folders.length > 0) {
        const dir = folders.pop()!;
        const entries = await readdir(path.join(root, dir), { withFileTypes: true }).catch(() => []);
        for (const entry of entries) {
          const key = dir ? `${dir}/${entry.name}` : entry.name;
          if (entry.isDirectory()) folders.push(key);
          else if (entry.isFile() && isSafeKey(key)) {
            const s = await stat(path.join(root, key)).catch(() => undefined);
            if (s) yield { key, sizeBytes: s.size, modifiedAt: s.mtime };
          }
        }
      }
    },
  };
}

export interface S3Location {
  bucket: string;
  prefix: string;
  endpoint?: string | undefined;
  region: string;
  forcePathStyle: boolean;
}

/**
 * `s3://bucket[/prefix]?endpoint=https://...&region=...&forcePathStyle=true`. Credentials come from
 * the AWS SDK's usual sources (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, profiles, roles).
 */
export function parseStorageUrl(value: string): S3Location {
  const url = new URL(value);
  if (url.protocol !== 's3:' || !url.hostname)
    throw new Error('must look like s3://bucket?endpoint=...&region=...');
  const endpoint = url.searchParams.get('endpoint') ?? undefined;
  if (endpoint !== undefined && !/^https?:\/\//.test(endpoint))
    throw new Error('endpoint must be an http(s) URL');
  return {
    bucket: url.hostname,
    prefix: url.pathname.replace(/^\/+|\/+$/g, ''),
    endpoint,
    region: url.searchParams.get('region') ?? 'us-east-1',
    forcePathStyle: url.searchParams.get('forcePathStyle') === 'true',
  };
}

/** An attachment header whose name survives every browser: ASCII fallback plus RFC 5987 UTF-8. */
export const contentDisposition = (fileName: string) => createContentDisposition(fileName);
