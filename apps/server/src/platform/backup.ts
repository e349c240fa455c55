import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import { SECRET_KEY_FILE } from './secrets.js';
import type { FileStore } from './storage.js';

/**
 * A backup of the embedded default is one tar file (uncompressed: the IPAs in it are zips
 * already). Its entries, in this order:
 *
 *   sideport-backup.json      {"format":1,"created_at"}: refused by a restore that does not know the format
 *   database.tar.gz           PGlite's dumpDataDir() of DATA_DIR/db
 *   secret-key                DATA_DIR/secret-key, when the key is kept there (it opens the sealed keys)
 *   files/<key>               every stored file under DATA_DIR/files
 *   sideport-backup-end.json  {"files","file_bytes","database_bytes"}: a file cut short has none
 *
 * The database is dumped first, then the files are copied while deletions of stored files wait
 * (`holdDeletes`): every file the dumped database names is still there to copy. Files written
 * meanwhile are copied too, and are orphans the restored database does not name.
 */
export const BACKUP_FORMAT = 1;
const MANIFEST = 'sideport-backup.json';
const END = 'sideport-backup-end.json';
const DATABASE = 'database.tar.gz';
const SECRET_KEY = SECRET_KEY_FILE;
const FILES = 'files/';
/** Storage keys as the file store makes them; anything else in an archive is refused. */
const SAFE_KEY = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;

export interface BackupSummary {
  databaseBytes: number;
  files: number;
  fileBytes: number;
}

export interface BackupSource {
  /** DATA_DIR: files under `files/`, the secret key in `secret-key`. */
  dataDir: string;
  dumpDatabase(): Promise<Blob>;
  /** Makes deletions of stored files wait until the returned function is called. */
  holdDeletes?(): () => Promise<void>;
}

export class BackupError extends Error {
  override name = 'BackupError';
}

/** A file store whose deletions can be held while a backup copies the files. */
export type HoldableFileStore = FileStore & { holdDeletes(): () => Promise<void> };

export function withHeldDeletes(store: FileStore): HoldableFileStore {
  let holds = 0;
  const waiting: string[] = [];
  return {
    kind: store.kind,
    description: store.description,
    putFile: (key, localPath) => store.putFile(key, localPath),
    read: (key, range) => store.read(key, range),
    sizeOf: (key) => store.sizeOf(key),
    localPath: (key) => store.localPath(key),
    presignGet: (key, options) => store.presignGet(key, options),
    list: () => store.list(),
    async delete(key) {
      // Keys are never reused, so a deletion that waits removes exactly what it meant to.
      if (holds > 0) waiting.push(key);
      else await store.delete(key);
    },
    holdDeletes() {
      holds++;
      let released = false;
      return async () => {
        if (released) return;
        released = true;
        if (--holds > 0) return;
        for (const key of waiting.splice(0)) await store.delete(key).catch(() => {});
      };
    },
  };
}

/** Every regular file under `root`, as slash-separated paths relative to it; unfinished copies left out. */
async function listFiles(root: string, dir = ''): Promise<string[]> {
  const entries = await readdir(path.join(root, dir), { withFileTypes: true }).catch(
    (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [];
      throw err;
    },
  );
  const found: string[] = [];
  for (const entry of entries) {
    const rel = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) found.push(...(await listFiles(root, rel)));
    else if (entry.isFile() && !entry.name.includes('.partial')) found.push(rel);
  }
  return found.sort();
}

/** Writes the backup of `source` to `out`; resolves once `out` has every byte. */
export async function writeBackup(source: BackupSource, out: Writable): Promise<BackupSummary> {
  const pack = tar.pack();
  const written = pipeline(pack, out);
  // An entry waits for the reader; if the reader is gone, stop waiting.
  const failed = written.then(
    () => new Promise<never>(() => {}),
    (err: unknown) => Promise.reject(err),
  );
  failed.catch(() => {});
  const add = (header: tar.Headers, body: Buffer | Readable) =>
    Promise.race([
      failed,
      new Promise<void>((resolve, reject) => {
        const settle = (err?: Error | null) => (err ? reject(err) : resolve());
        if (Buffer.isBuffer(body)) {
          pack.entry({ mtime: new Date(), ...header }, body, settle);
          return;
        }
        body.on('error', reject);
        body.pipe(pack.entry({ mtime: new Date(), ...header }, settle));
      }),
    ]);
  const json = (value: object) => Buffer.from(`${JSON.stringify(value)}\n`);

  const release = source.holdDeletes?.() ?? (async () => {});
  try {
    await add(
      { name: MANIFEST, mode: 0o600 },
      json({ format: BACKUP_FORMAT, created_at: new Date().toISOString() }),
    );
    const database = await source.dumpDatabase();
    await add(
      { name: DATABASE, size: database.size, mode: 0o600 },
      Readable.fromWeb(database.stream() as never),
    );
    const keyFile = path.join(source.dataDir, SECRET_KEY_FILE);
    const key = await readFile(keyFile).catch(() => undefined);
    if (key) await add({ name: SECRET_KEY, mode: 0o600 }, key);
    const filesRoot = path.join(source.dataDir, 'files');
    let fileBytes = 0;
    const files = await listFiles(filesRoot);
    for (const rel of files) {
      const file = path.join(filesRoot, rel);
      // A stored file is never changed in place: its size now is its size while it is read.
      const { size } = await lstat(file);
      await add({ name: `${FILES}${rel}`, size, mode: 0o600 }, createReadStream(file));
      fileBytes += size;
    }
    const summary = { databaseBytes: database.size, files: files.length, fileBytes };
    await add(
      { name: END, mode: 0o600 },
      json({ files: summary.files, file_bytes: fileBytes, database_bytes: database.size }),
    );
    pack.finalize();
    await written;
    return summary;
  } catch (err) {
    pack.destroy(err as Error);
    throw err;
  } finally {
    await release();
  }
}

/**
 * What a restore unpacks at most. A database file is at most 1 GiB (PostgreSQL's segment size,
 * RELSEG_SIZE); `databaseBytes` caps the whole unpacked dump, so a small gzip of zeros cannot fill
 * the disk. Small members (the two JSON entries, the secret key) are read whole, up to `smallBytes`.
 */
export interface RestoreLimits {
  databaseFileBytes: number;
  databaseBytes: number;
  smallBytes: number;
}

export const RESTORE_LIMITS: RestoreLimits = {
  databaseFileBytes: 2 ** 30,
  databaseBytes: 64 * 2 ** 30,
  smallBytes: 64 * 1024,
};

/** Reads a stream to its end, keeping nothing. */
async function drain(stream: Readable) {
  for await (const chunk of stream) void chunk;
}

/** A small member read whole, refused past `maxBytes` (it never needs more). */
async function readSmall(stream: Readable, name: string, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += (chunk as Buffer).length;
    if (size > maxBytes)
      throw new BackupError(
        `The backup is damaged: ${name} is larger than ${maxBytes} bytes, which it never is.`,
      );
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** A JSON member's object; a member that is not one is damaged, and the sentence says which. */
function parseJsonMember(bytes: Buffer, name: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    value = undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new BackupError(`The backup is damaged: ${name} is not a JSON object (${bytes.length} bytes).`);
  return value as Record<string, unknown>;
}

/** An error of the archive's bytes (a tar or gzip stream that breaks off), not of the disk written to. */
const isSystemError = (err: unknown) => typeof (err as NodeJS.ErrnoException)?.syscall === 'string';

/**
 * Rejects when the archive `reading` breaks off, and never resolves: raced with the work on one of
 * its members, whose stream neither ends nor fails when the archive is cut short inside it.
 */
function brokenOff(reading: Promise<void>): Promise<never> {
  const broken = reading.then(
    () => new Promise<never>(() => {}),
    (err: unknown) => Promise.reject(err as Error),
  );
  broken.catch(() => {});
  return broken;
}

const reasonOf = (err: unknown) => (err instanceof Error ? err.message : String(err)).replace(/\.$/, '');

/**
 * A path of the database dump (PGlite writes them from the data folder's root, '/base/1/1259'),
 * relative and checked: no '..', nothing outside the folder.
 */
function dumpPath(name: string): string {
  const rel = name.replace(/^\/+/, '').replace(/\/+$/, '');
  if (rel === '' || !SAFE_KEY.test(rel) || rel.split('/').some((p) => p === '..' || p === '.'))
    throw new BackupError(
      `The backup is damaged: ${DATABASE} holds ${JSON.stringify(name)}, which is no path of a database folder.`,
    );
  return rel;
}

/**
 * Reads the database dump (gzip of a tar) through as a stream, refusing what a dump never holds
 * (links, paths outside its folder, a path twice) and what is larger than `limits` allows, before
 * its bytes are read. With `target`, each file is written there (folders 0700, files 0600): nothing
 * is held in memory whatever its size. Returns the bytes it unpacks to.
 */
async function unpackDatabase(body: Readable, target: string | undefined, limits: RestoreLimits) {
  const extract = tar.extract();
  const reading = pipeline(body, createGunzip(), extract);
  const broken = brokenOff(reading);
  const seen = new Set<string>();
  let total = 0;
  let current: string | undefined;
  try {
    for await (const entry of extract) {
      const { name, type, size = 0 } = entry.header;
      const rel = dumpPath(name);
      if (seen.has(rel)) throw new BackupError(`The backup is damaged: ${DATABASE} holds ${rel} twice.`);
      seen.add(rel);
      current = `${rel} (${size} bytes)`;
      if (type === 'directory') {
        if (target) await mkdir(path.join(target, rel), { recursive: true, mode: 0o700 });
        entry.resume();
        continue;
      }
      if (type !== 'file')
        throw new BackupError(
          `The backup is damaged: ${DATABASE} holds ${rel}, a ${String(type)}; a database dump holds only files and folders.`,
        );
      if (size > limits.databaseFileBytes)
        throw new BackupError(
          `The backup is refused: ${DATABASE} holds ${rel} of ${size} bytes, and a database file is at most ${limits.databaseFileBytes} bytes.`,
        );
      total += size;
      if (total > limits.databaseBytes)
        throw new BackupError(
          `The backup is refused: ${DATABASE} unpacks to more than ${limits.databaseBytes} bytes (at ${rel}).`,
        );
      if (target) {
        const file = path.join(target, rel);
        await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
        await Promise.race([pipeline(entry, createWriteStream(file, { flags: 'wx', mode: 0o600 })), broken]);
      } else {
        await Promise.race([drain(entry), broken]);
      }
      current = undefined;
    }
    await reading;
  } catch (err) {
    if (err instanceof BackupError || isSystemError(err)) throw err;
    throw new BackupError(
      current
        ? `The backup is damaged: ${DATABASE} breaks off inside ${current} (${reasonOf(err)}).`
        : `The backup is damaged: ${DATABASE} is not a whole gzip file of a tar (${reasonOf(err)}).`,
    );
  }
  return total;
}

type BackupPart = { kind: 'database' } | { kind: 'secret-key' } | { kind: 'file'; key: string };

/** Checks the last entry's counts against what the backup held, saying which differs. */
function checkEnd(end: Record<string, unknown>, seen: BackupSummary) {
  const { files, file_bytes: fileBytes, database_bytes: databaseBytes } = end;
  if (![files, fileBytes, databaseBytes].every((n) => Number.isSafeInteger(n)))
    throw new BackupError(
      `The backup is damaged: ${END} should hold "files", "file_bytes" and "database_bytes" as whole numbers.`,
    );
  if (databaseBytes !== seen.databaseBytes)
    throw new BackupError(
      `The backup is damaged: ${END} says ${DATABASE} has ${String(databaseBytes)} bytes, but it has ${seen.databaseBytes}.`,
    );
  if (files !== seen.files || fileBytes !== seen.fileBytes)
    throw new BackupError(
      `The backup is damaged: ${END} lists ${String(files)} stored files of ${String(fileBytes)} bytes, ` +
        `but the backup holds ${seen.files} of ${seen.fileBytes}.`,
    );
}

/**
 * Reads a backup through, handing each part to `onPart` (which must read the stream to its end):
 * refuses another format, an entry a backup never holds (a path outside `files/`, a link, a name
 * it holds twice), and a file cut short or damaged (its last entry missing or not matching what
 * came before). A sentence of damage names the member and what was expected of it.
 */
async function readBackup(
  input: Readable,
  onPart: (part: BackupPart, body: Readable) => Promise<void>,
  limits: RestoreLimits,
): Promise<BackupSummary> {
  const extract = tar.extract();
  const reading = pipeline(input, extract);
  const broken = brokenOff(reading);
  const whole = <T>(work: Promise<T>) => Promise.race([work, broken]);
  let seenManifest = false;
  let end: Record<string, unknown> | undefined;
  const seen: BackupSummary = { databaseBytes: 0, files: 0, fileBytes: 0 };
  const names = new Set<string>();
  /** The member being read, and the last one read whole. */
  let current: { name: string; size: number } | undefined;
  let last: string | undefined;
  try {
    for await (const entry of extract) {
      const { name, type, size = 0 } = entry.header;
      current = { name, size };
      if (!seenManifest) {
        const manifest =
          name === MANIFEST
            ? parseJsonMember(await whole(readSmall(entry, MANIFEST, limits.smallBytes)), MANIFEST)
            : undefined;
        if (manifest?.format !== BACKUP_FORMAT) {
          throw new BackupError(
            manifest
              ? `This backup has format ${String(manifest.format)}; this version of Sideport restores format ${BACKUP_FORMAT}.`
              : 'This is not a Sideport backup: it does not start with sideport-backup.json.',
          );
        }
        seenManifest = true;
        names.add(name);
        [current, last] = [undefined, name];
        continue;
      }
      if (names.has(name))
        throw new BackupError(
          `The backup is damaged: it holds ${JSON.stringify(name)} twice, and a Sideport backup holds each member once.`,
        );
      names.add(name);
      const key = name.startsWith(FILES) ? name.slice(FILES.length) : undefined;
      const isSafeKey =
        key !== undefined && SAFE_KEY.test(key) && !key.split('/').some((p) => p === '..' || p === '.');
      if (type !== 'file' || end || (key !== undefined && !isSafeKey)) {
        throw new BackupError(`The backup holds ${JSON.stringify(name)} where a Sideport backup never does.`);
      }
      if (name === END) end = parseJsonMember(await whole(readSmall(entry, END, limits.smallBytes)), END);
      else if (name === DATABASE) {
        seen.databaseBytes = size;
        await whole(onPart({ kind: 'database' }, entry));
      } else if (name === SECRET_KEY) await whole(onPart({ kind: 'secret-key' }, entry));
      else if (key !== undefined) {
        seen.files++;
        seen.fileBytes += size;
        await whole(onPart({ kind: 'file', key }, entry));
      } else
        throw new BackupError(
          `The backup holds ${JSON.stringify(name)}, which a Sideport backup never does.`,
        );
      [current, last] = [undefined, name];
    }
    await reading;
  } catch (err) {
    if (err instanceof BackupError || isSystemError(err)) throw err;
    throw new BackupError(
      current
        ? `The backup is damaged: it breaks off inside ${current.name}, which should have ${current.size} bytes (${reasonOf(err)}).`
        : `The backup is damaged after ${last ?? 'its first bytes'}: the next member's header cannot be read (${reasonOf(err)}).`,
    );
  }
  if (!seenManifest) throw new BackupError('This is not a Sideport backup: it is empty.');
  if (!end)
    throw new BackupError(
      `The backup was cut short: it ends after ${last ?? 'its first member'} (${seen.files} stored files), before its last entry, ${END}.`,
    );
  if (!names.has(DATABASE)) throw new BackupError(`The backup holds no database (${DATABASE}).`);
  checkEnd(end, seen);
  return seen;
}

/**
 * Reads a backup file through without writing anything: whole, of a known format, counts
 * matching, its database dump a whole gzip of a tar within `limits`.
 */
export function verifyBackup(file: string, limits: RestoreLimits = RESTORE_LIMITS): Promise<BackupSummary> {
  return readBackup(
    createReadStream(file),
    async (part, body) => {
      if (part.kind === 'database') await unpackDatabase(body, undefined, limits);
      else await drain(body);
    },
    limits,
  );
}

/**
 * Restores a backup into `dataDir` (which the caller found empty), streaming every member to disk:
 * the secret key, the stored files and the database folder (`dataDir/db`, unpacked from its dump
 * within `limits`); then, once the archive proved whole, `openDatabase` checks the database opens.
 */
export async function restoreBackup(
  input: Readable,
  dataDir: string,
  openDatabase: (pgliteDir: string) => Promise<void>,
  limits: RestoreLimits = RESTORE_LIMITS,
): Promise<BackupSummary> {
  const databaseDir = path.join(dataDir, 'db');
  const summary = await readBackup(
    input,
    async (part, body) => {
      if (part.kind === 'database') {
        await mkdir(databaseDir, { mode: 0o700 });
        await unpackDatabase(body, databaseDir, limits);
      } else if (part.kind === 'secret-key')
        await writeFile(
          path.join(dataDir, SECRET_KEY_FILE),
          await readSmall(body, SECRET_KEY, limits.smallBytes),
          { mode: 0o600, flag: 'wx' },
        );
      else {
        const target = path.join(dataDir, 'files', part.key);
        await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
        await pipeline(body, createWriteStream(target, { flags: 'wx', mode: 0o600 }));
      }
    },
    limits,
  );
  await openDatabase(databaseDir);
  return summary;
}
