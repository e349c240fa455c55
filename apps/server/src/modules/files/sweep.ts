import { readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Database } from '../../db/client.js';
import type { FileStore, StoredFile } from '../../platform/storage.js';
import { knownVersions, namedKeys, whileSweepLocked } from './queries.js';

export interface FileSweepDeps {
  db: Database;
  /** 'postgres': processes share the store, and one at a time sweeps it (queries.ts). */
  databaseKind: 'pglite' | 'postgres';
  files: FileStore;
  clock: () => Date;
  /** DATA_DIR/tmp: uploads being received, sources copied from S3, artifacts being written. */
  tmpDir: string;
  /** DATA_DIR/sign-cache: this machine's digest cache, one folder per version. */
  signCacheDir: string;
  /** Only what is older than this is removed: work under way is never this old (see below). */
  minAgeMs: number;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  /** The signing processes' spool folders (`sideport-sign-*`); the OS temp folder by default. */
  spoolDir?: string;
}

export interface Removed {
  files: number;
  bytes: number;
}

export interface SweepResult {
  /** Stored files (local disk or S3) no row names; undefined when another process swept the store. */
  stored: Removed | undefined;
  /** DATA_DIR/tmp and the signing processes' spool folders. */
  temporary: Removed;
  /** Digest cache folders of versions that no longer exist. */
  signCache: Removed;
}

/** Stored files come in three kinds; anything else under the store's prefix is not ours to remove. */
const NAMED_BY_ROW = /^(ipa|signed)\//;
const SIGN_CACHE_KEY = /^sign-cache\/(\d+)\/(\d+)\.json$/;
/** The local store's copy to another filesystem in progress (platform/storage.ts): never named. */
const PARTIAL = /\.partial$/;
const BATCH = 500;

/**
 * Removes what nothing will ever use again: stored IPAs and artifacts no row names (a process
 * killed between storing a file and committing its row), digest caches of versions that are
 * gone, partial uploads and copies in DATA_DIR/tmp, signing processes' spool folders. Only
 * files older than `minAgeMs` are looked at: an upload being received, a source being signed and
 * an artifact being written are refreshed while their work runs (the sign worker touches its
 * source copy with each lease renewal), and a stored file is named by its row seconds after it
 * is stored. Safe to run in several processes at once (removing twice is harmless); with
 * PostgreSQL one process at a time sweeps the shared store, and each sweeps its own folders.
 */
export function createFileSweep(deps: FileSweepDeps) {
  const { db, files, clock, log, minAgeMs } = deps;
  const spoolDir = deps.spoolDir ?? tmpdir();

  async function removeUnnamed(batch: StoredFile[], removed: Removed) {
    const named = await namedKeys(
      db,
      batch.filter((f) => NAMED_BY_ROW.test(f.key) && !PARTIAL.test(f.key)).map((f) => f.key),
    );
    const cacheApps = [
      ...new Set(batch.map((f) => SIGN_CACHE_KEY.exec(f.key)?.[1]).filter((id) => id !== undefined)),
    ];
    const versionsKept = await knownVersions(db, cacheApps.map(Number));
    for (const file of batch) {
      const cache = SIGN_CACHE_KEY.exec(file.key);
      const isUsed = cache ? versionsKept.has(`${cache[1]}-${cache[2]}`) : named.has(file.key);
      if (isUsed) continue;
      await files.delete(file.key);
      removed.files += 1;
      removed.bytes += file.sizeBytes;
    }
  }

  async function sweepStore(cutoff: Date): Promise<Removed> {
    const removed = { files: 0, bytes: 0 };
    let batch: StoredFile[] = [];
    // Listed first, then looked up: a file whose row commits meanwhile is seen as named.
    for await (const file of files.list()) {
      if (file.modifiedAt >= cutoff) continue;
      if (!NAMED_BY_ROW.test(file.key) && !SIGN_CACHE_KEY.test(file.key) && !PARTIAL.test(file.key)) continue;
      batch.push(file);
      if (batch.length >= BATCH) {
        await removeUnnamed(batch, removed);
        batch = [];
      }
    }
    await removeUnnamed(batch, removed);
    return removed;
  }

  async function sweepTemporary(cutoff: Date): Promise<Removed> {
    const removed = { files: 0, bytes: 0 };
    for (const file of await filesUnder(deps.tmpDir)) {
      if (file.modifiedAt >= cutoff) continue;
      await rm(file.path, { force: true });
      removed.files += 1;
      removed.bytes += file.sizeBytes;
    }
    const spools = (await readdir(spoolDir).catch(() => [] as string[])).filter((name) =>
      name.startsWith('sideport-sign-'),
    );
    for (const name of spools) add(removed, await removeFolderIfOld(path.join(spoolDir, name), cutoff));
    return removed;
  }

  async function sweepSignCache(cutoff: Date): Promise<Removed> {
    const removed = { files: 0, bytes: 0 };
    const root = path.join(deps.signCacheDir, 'versions');
    const names = (await readdir(root).catch(() => [] as string[])).filter((name) => /^\d+-\d+$/.test(name));
    const kept = await knownVersions(db, [...new Set(names.map((name) => Number(name.split('-')[0])))]);
    for (const name of names.filter((n) => !kept.has(n)))
      add(removed, await removeFolderIfOld(path.join(root, name), cutoff));
    return removed;
  }

  async function sweep(): Promise<SweepResult> {
    const startedAt = Date.now();
    const cutoff = new Date(clock().getTime() - minAgeMs);
    const stored =
      deps.databaseKind === 'postgres'
        ? await whileSweepLocked(db, () => sweepStore(cutoff))
        : await sweepStore(cutoff);
    const temporary = await sweepTemporary(cutoff);
    const signCache = await sweepSignCache(cutoff);
    const result = { stored, temporary, signCache };
    const files = (stored?.files ?? 0) + temporary.files + signCache.files;
    const bytes = (stored?.bytes ?? 0) + temporary.bytes + signCache.bytes;
    log.info(
      { sweep: result, ms: Date.now() - startedAt },
      `file sweep: removed ${files} files (${bytes} bytes) nothing uses` +
        (stored ? '' : '; another process swept the store'),
    );
    return result;
  }

  return { sweep };
}

export type FileSweep = ReturnType<typeof createFileSweep>;

function add(total: Removed, more: Removed) {
  total.files += more.files;
  total.bytes += more.bytes;
}

interface LocalFile {
  path: string;
  sizeBytes: number;
  modifiedAt: Date;
}

/** Every regular file under `dir`, at any depth; nothing when it does not exist. */
async function filesUnder(dir: string): Promise<LocalFile[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const found: LocalFile[] = [];
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await filesUnder(full)));
    else if (entry.isFile()) {
      const s = await stat(full).catch(() => undefined);
      if (s) found.push({ path: full, sizeBytes: s.size, modifiedAt: s.mtime });
    }
  }
  return found;
}

/** Removes a folder when neither it nor anything in it changed since `cutoff`. */
async function removeFolderIfOld(dir: string, cutoff: Date): Promise<Removed> {
  const folder = await stat(dir).catch(() => undefined);
  if (!folder?.isDirectory() || folder.mtime >= cutoff) return { files: 0, bytes: 0 };
  const inside = await filesUnder(dir);
  if (inside.some((file) => file.modifiedAt >= cutoff)) return { files: 0, bytes: 0 };
  await rm(dir, { recursive: true, force: true });
  return { files: inside.length, bytes: inside.reduce((sum, file) => sum + file.sizeBytes, 0) };
}
