/**
 * Resource digests of an app version, kept on disk so signing the same version again (for another
 * user's profile) skips inflating every resource. Content-addressed: the key is a hash of every
 * digested entry's name, CRC-32, sizes and compression method, so a changed file changes the key.
 * CRC-32 is not collision-resistant: the cache directory must only hold what this service wrote.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ZipEntry } from '../zip/index.js';
import { digestEntries, type DigestOptions, type FileDigests } from './pool.js';

// 2: each value says whether the file starts like a Mach-O (':m'), which signing checks.
const FORMAT = 2;

export function versionKey(entries: readonly ZipEntry[]): string {
  // One line per entry, hashed in one call: a call per entry costs more than the hashing.
  const lines = [...entries]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map(
      (entry) =>
        `${entry.name}\0${entry.crc32}\0${entry.uncompressedSizeBytes}\0${entry.compressedSizeBytes}\0${entry.compressionMethod}\n`,
    );
  return createHash('sha256')
    .update(`sideport-resource-digests-${FORMAT}\n${lines.join('')}`)
    .digest('hex');
}

export interface CachedDigestOptions extends DigestOptions {
  /** Where digests are kept between runs; without it nothing is cached. */
  cacheDir?: string;
}

/** Digests of the entries, from the cache when this exact set was digested before. */
export async function digestEntriesCached(
  path: string,
  entries: readonly ZipEntry[],
  options: CachedDigestOptions = {},
): Promise<{ digests: Map<string, FileDigests>; fromCache: boolean }> {
  if (options.cacheDir === undefined)
    return { digests: await digestEntries(path, entries, options), fromCache: false };
  const cached = await readCachedDigests(options.cacheDir, entries);
  if (cached !== undefined) {
    options.onProgress?.(entries.length, entries.length);
    return { digests: cached, fromCache: true };
  }
  const digests = await digestEntries(path, entries, options);
  await writeCachedDigests(options.cacheDir, entries, digests);
  return { digests, fromCache: false };
}

const cacheFile = (cacheDir: string, key: string): string =>
  join(cacheDir, 'resource-digests', `${key}.json`);

/**
 * The digests of exactly these entries, when a run before kept them; undefined otherwise. `key`
 * is versionKey(entries), for a caller that has it already.
 */
export function readCachedDigests(
  cacheDir: string,
  entries: readonly ZipEntry[],
  key = versionKey(entries),
): Promise<Map<string, FileDigests> | undefined> {
  return readCache(cacheFile(cacheDir, key), entries);
}

/** Keeps the digests of these entries for the next run (a cache that cannot be written only costs time). */
export function writeCachedDigests(
  cacheDir: string,
  entries: readonly ZipEntry[],
  digests: Map<string, FileDigests>,
  key = versionKey(entries),
): Promise<void> {
  return writeCache(cacheFile(cacheDir, key), digests);
}

async function readCache(
  file: string,
  entries: readonly ZipEntry[],
): Promise<Map<string, FileDigests> | undefined> {
  let parsed: { format?: number; digests?: Record<string, string> };
  try {
    parsed = JSON.parse(await readFile(file, 'utf8')) as typeof parsed;
  } catch {
    return undefined; // absent or damaged: digest again
  }
  if (parsed.format !== FORMAT || parsed.digests === undefined) return undefined;
  const result = new Map<string, FileDigests>();
  for (const entry of entries) {
    const value = parsed.digests[entry.name];
    if (value === undefined || !KEPT_DIGESTS.test(value)) return undefined;
    result.set(entry.name, new KeptDigests(value));
  }
  return result;
}

const KEPT_DIGESTS = /^[0-9a-f]{40}:[0-9a-f]{64}(:m)?$/;

/**
 * One file's kept digests, turned into bytes only when asked: an n-th sign that finds its seals
 * kept (sign-ipa/seal-cache.ts) reads whether each file is a Mach-O and never its hashes.
 */
class KeptDigests implements FileDigests {
  #sha1: Buffer | undefined;
  #sha256: Buffer | undefined;
  constructor(private readonly text: string) {}
  get sha1(): Buffer {
    return (this.#sha1 ??= Buffer.from(this.text.slice(0, 40), 'hex'));
  }
  get sha256(): Buffer {
    return (this.#sha256 ??= Buffer.from(this.text.slice(41, 105), 'hex'));
  }
  get isMachO(): boolean {
    return this.text.length > 105;
  }
}

async function writeCache(file: string, digests: Map<string, FileDigests>): Promise<void> {
  const body: Record<string, string> = {};
  for (const [name, d] of digests)
    body[name] = `${d.sha1.toString('hex')}:${d.sha256.toString('hex')}${d.isMachO === true ? ':m' : ''}`;
  const dir = join(file, '..');
  await mkdir(dir, { recursive: true });
  // Written beside and renamed, so a concurrent reader never sees half a file.
  const temporary = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFile(temporary, JSON.stringify({ format: FORMAT, digests: body }));
    await rename(temporary, file);
  } catch {
    await rm(temporary, { force: true }); // a cache that cannot be written only costs time
  }
}
