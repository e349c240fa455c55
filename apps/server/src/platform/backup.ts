import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
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

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

type BackupPart = { kind: 'database' } | { kind: 'secret-key' } | { kind: 'file'; key: string };

/**
 * Reads a backup through, handing each part to `onPart` (which must read the stream to its end):
 * refuses another format, an entry a backup never holds (a path outside `files/`, a link), and a
 * file cut short or damaged (its last entry missing or not matching what came before).
 */
async function readBackup(
  input: Readable,
  onPart: (part: BackupPart, body: Readable) => Promise<void>,
): Promise<BackupSummary> {
  const extract = tar.extract();
  const reading = pipeline(input, extract);
  reading.catch(() => {});
  let seenManifest = false;
  let end: { files?: unknown; file_bytes?: unknown; database_bytes?: unknown } | undefined;
  const seen: BackupSummary = { databaseBytes: 0, files: 0, fileBytes: 0 };
  for await (const entry of extract) {
    const { name, type, size = 0 } = entry.header;
    if (!seenManifest) {
      const manifest =
        name === MANIFEST
          ? (JSON.parse((await readAll(entry)).toString('utf8')) as { format?: unknown })
          : undefined;
      if (manifest?.format !== BACKUP_FORMAT) {
        throw new BackupError(
          manifest
            ? `This backup has format ${String(manifest.format)}; this version of Sideport restores format ${BACKUP_FORMAT}.`
            : 'This is not a Sideport backup: it does not start with sideport-backup.json.',
        );
      }
      seenManifest = true;
      continue;
    }
    const key = name.startsWith(FILES) ? name.slice(FILES.length) : undefined;
    const isSafeKey =
      key !== undefined && SAFE_KEY.test(key) && !key.split('/').some((p) => p === '..' || p === '.');
    if (type !== 'file' || end || (key !== undefined && !isSafeKey)) {
      throw new BackupError(`The backup holds ${JSON.stringify(name)} where a Sideport backup never does.`);
    }
    if (name === END) end = JSON.parse((await readAll(entry)).toString('utf8')) as typeof end;
    else if (name === DATABASE) {
      seen.databaseBytes = size;
      await onPart({ kind: 'database' }, entry);
    } else if (name === SECRET_KEY) await onPart({ kind: 'secret-key' }, entry);
    else if (key !== undefined) {
      seen.files++;
      seen.fileBytes += size;
      await onPart({ kind: 'file', key }, entry);
    } else
      throw new BackupError(`The backup holds ${JSON.stringify(name)}, which a Sideport backup never does.`);
  }
  await reading;
  if (!seenManifest) throw new BackupError('This is not a Sideport backup: it is empty.');
  if (!end)
    throw new BackupError(
      `The backup was cut short: it ends after ${seen.files} files, before its last entry.`,
    );
  if (
    end.files !== seen.files ||
    end.file_bytes !== seen.fileBytes ||
    end.database_bytes !== seen.databaseBytes
  ) {
    throw new BackupError(
      `The backup is damaged: its last entry lists ${String(end.files)} files of ${String(end.file_bytes)} bytes, ` +
        `but it holds ${seen.files} of ${seen.fileBytes}.`,
    );
  }
  return seen;
}

/** Reads a backup file through without writing anything: whole, of a known format, counts matching. */
export function verifyBackup(file: string): Promise<BackupSummary> {
  return readBackup(createReadStream(file), async (_part, body) => {
    for await (const chunk of body) void chunk;
  });
}

/**
 * Restores a backup into `dataDir` (which the caller found empty): the secret key and the files,
 * then, once the archive proved whole, the database through `loadDatabase`.
 */
export async function restoreBackup(
  input: Readable,
  dataDir: string,
  loadDatabase: (tarball: Blob) => Promise<void>,
): Promise<BackupSummary> {
  let database: Buffer | undefined;
  const summary = await readBackup(input, async (part, body) => {
    if (part.kind === 'database') database = await readAll(body);
    else if (part.kind === 'secret-key')
      await writeFile(path.join(dataDir, SECRET_KEY_FILE), await readAll(body), { mode: 0o600 });
    else {
      const target = path.join(dataDir, 'files', part.key);
      await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
      await pipeline(body, createWriteStream(target, { mode: 0o600 }));
    }
  });
  if (!database) throw new BackupError('The backup holds no database.');
  try {
    const discard = new Writable({ write: (_chunk, _encoding, done) => done() });
    await pipeline(Readable.from([database]), createGunzip(), discard);
  } catch {
    throw new BackupError('The backup is damaged: its database dump is not a whole gzip file.');
  }
  await loadDatabase(new Blob([database as Uint8Array<ArrayBuffer>]));
  return summary;
}
