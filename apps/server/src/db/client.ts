import { chmodSync, closeSync, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PGlite } from '@electric-sql/pglite';
import { NodeFS } from '@electric-sql/pglite/nodefs';
import { sql, type SQL } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import { restrictToOwner } from '../platform/data-dir.js';
import { tagDatabaseFault } from '../platform/faults.js';
import * as schema from './schema/index.js';

export type Schema = typeof schema;
/** The one database type the services see, whichever driver is underneath. */
export type Database = PgDatabase<PgQueryResultHKT, Schema>;

export interface DatabaseHandle {
  db: Database;
  kind: 'pglite' | 'postgres';
  /** Where the data lives, for the start-up line; never contains a password. */
  description: string;
  migrate(): Promise<void>;
  ping(): Promise<void>;
  /**
   * Calls `onPayload` for every NOTIFY on `channel`, from any process using this database
   * (PostgreSQL LISTEN on a connection of its own; PGlite's listen in the embedded default).
   * Resolves once listening; the returned function stops it.
   */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
  /**
   * PGlite only: a consistent gzipped tarball of the data folder. It is read between two
   * statements (PGlite runs one at a time), so it holds every committed transaction, as a copy
   * after a crash would, and opens like one.
   */
  dumpDataDir?(): Promise<Blob>;
}

export const migrationsFolder = path.resolve(import.meta.dirname, '../../drizzle');

export type DatabaseOptions =
  | { url: string; connectTimeoutMs?: number }
  | {
      pgliteDir: string | null;
      /** In memory only: start from this dumpDataDir tarball instead of an empty cluster (test databases). */
      image?: Blob;
    };

/** How long a new PostgreSQL connection may take before the pool gives up (a failover's dead address). */
const CONNECT_TIMEOUT_MS = 5000;

/** PostgreSQL when a URL is given; otherwise embedded PGlite in a folder (or in memory for null). */
export async function openDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  if ('url' in options) {
    const pool = new pg.Pool({
      connectionString: options.url,
      max: 10,
      connectionTimeoutMillis: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
      keepAlive: true,
    });
    // An idle client's error (server restart, admin kill) would otherwise crash the process; the pool
    // drops that client and the next query reports the outage through the normal path and /healthz.
    pool.on('error', () => {});
    markConnectionFailures(pool);
    const db = drizzlePg(pool, { schema }) as unknown as Database;
    const url = new URL(options.url);
    const listeners = new Set<PgListener>();
    return {
      db,
      kind: 'postgres',
      description: `PostgreSQL ${url.hostname}:${url.port || 5432}${url.pathname}`,
      migrate: () => migrateUnderLock(pool),
      ping: async () => void (await pool.query('select 1')),
      async listen(channel, onPayload) {
        const listener = await listenPg(options.url, channel, onPayload);
        listeners.add(listener);
        return async () => {
          listeners.delete(listener);
          await listener.stop();
        };
      },
      async close() {
        await Promise.all([...listeners].map((l) => l.stop()));
        await pool.end();
      },
    };
  }
  const dir = options.pgliteDir;
  const lock = dir ? await lockDataFolder(dir) : undefined;
  let client: PGlite;
  try {
    // A restore unpacks dumpDataDir's tarball into the folder itself (platform/backup.ts), streaming.
    client = dir
      ? await PGlite.create({ fs: ownerOnlyFs(dir) })
      : await PGlite.create(options.image ? { loadDataDir: options.image } : {});
    // What PGlite made before its modes were masked (a folder an older version left) is put right too.
    if (dir) restrictToOwner(dir);
  } catch (err) {
    lock?.release();
    throw err;
  }
  const db = drizzlePglite(client, { schema }) as unknown as Database;
  return {
    db,
    kind: 'pglite',
    description: options.pgliteDir ? `PGlite ${options.pgliteDir}` : 'PGlite in memory',
    migrate: () => migratePglite(drizzlePglite(client), { migrationsFolder }),
    ping: async () => void (await db.execute(sql`select 1`)),
    async listen(channel, onPayload) {
      const stop = await client.listen(channel, onPayload);
      return async () => {
        if (!client.closed) await stop();
      };
    },
    close: async () => {
      await client.close();
      lock?.release();
    },
    dumpDataDir: () => client.dumpDataDir('gzip'),
  };
}

/**
 * A restart or failover of PostgreSQL shows as errors of the driver (ECONNREFUSED, 'Connection
 * terminated unexpectedly', 57P01): they are marked where they leave the pool and its clients, so
 * the error handler answers 503 with a sentence and background work waits (platform/faults.ts).
 * The pool itself drops a connection that failed (pg-pool removes a client released with an error
 * or no longer queryable) and opens new ones when the server answers again.
 */
function markConnectionFailures(pool: pg.Pool) {
  const tagged = <T>(result: T): T =>
    result instanceof Promise
      ? (result.catch((err: unknown) => {
          throw tagDatabaseFault(err);
        }) as T)
      : result;
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  pool.query = ((...args: unknown[]) => tagged(query(...args))) as typeof pool.query;
  const connect = pool.connect.bind(pool) as (...args: unknown[]) => unknown;
  pool.connect = ((...args: unknown[]) => tagged(connect(...args))) as typeof pool.connect;
  pool.on('connect', (client) => {
    // A client checked out for a transaction loses its connection between two queries when the
    // server restarts: pg emits that on the client, where the pool's idle listener is not, and an
    // 'error' nobody listens to ends the process. The transaction's next query fails instead (the
    // client is no longer queryable, marked below) and the pool drops the client on release.
    client.on('error', () => {});
    const clientQuery = client.query.bind(client) as (...args: unknown[]) => unknown;
    client.query = ((...args: unknown[]) => tagged(clientQuery(...args))) as typeof client.query;
  });
}

/** 'SIDEPORT' in ASCII as a 64-bit number: the advisory lock the migrations are run under. */
const MIGRATION_LOCK_KEY = '6001403042938704468';

/**
 * Processes started together on an empty database each run the migrations, and drizzle's migrator
 * (read what is applied, then apply the rest) lets them collide: all but one exit with `relation
 * ... already exists`. A session advisory lock, held on one connection around the migrator, makes
 * them take turns: the first migrates, the others then find nothing left to apply. PostgreSQL
 * releases the lock with the session, so a process killed while migrating holds nobody up.
 */
async function migrateUnderLock(pool: pg.Pool) {
  const client = await pool.connect();
  let failure: Error | undefined;
  try {
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      await migratePg(drizzlePg(client), { migrationsFolder });
    } finally {
      await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } catch (err) {
    failure = err as Error;
    throw err;
  } finally {
    // A connection that failed is not handed back to the pool (it may still hold the lock).
    client.release(failure);
  }
}

type EmscriptenModule = Parameters<NodeFS['init']>[1];
interface NodeFsOps {
  node_ops: {
    mknod(parent: unknown, name: string, mode: number, dev: number): unknown;
    setattr(node: unknown, attr: { mode?: number }): void;
  };
  stream_ops: { setattr(stream: unknown, attr: { mode?: number }): void };
}
const OWNER_ONLY = ~0o077;

/**
 * PGlite's Node file system with group and other bits masked off every mode it sets. Its NODEFS
 * creates folders and files with the mode PostgreSQL asks for and then chmods them to it, 0666
 * for what initdb makes, whatever the process umask: so the modes are masked where they are
 * set (creating a node, changing its attributes), and the database folder stays the server
 * user's alone (docs/security.md, Data at rest). Each module is patched once.
 */
class OwnerOnlyNodeFS extends NodeFS {
  constructor(dir: string) {
    super(dir); // makes the folder when missing, with the process umask
    chmodSync(dir, 0o700);
  }

  override async init(pg: PGlite, options: EmscriptenModule) {
    const result = await super.init(pg, options);
    const preRun = result.emscriptenOpts.preRun ?? [];
    result.emscriptenOpts.preRun = [
      (mod) => maskModes((mod as unknown as { NODEFS: NodeFsOps }).NODEFS),
      ...preRun,
    ];
    return result;
  }
}

/** PGlite's file system for the folder `dir`, making nothing group or others may read or write. */
export const ownerOnlyFs = (dir: string): NodeFS => new OwnerOnlyNodeFS(dir);

const maskedNodeFs = new WeakSet<NodeFsOps>();

function maskModes(nodefs: NodeFsOps | undefined) {
  const ops = [nodefs?.node_ops?.mknod, nodefs?.node_ops?.setattr, nodefs?.stream_ops?.setattr];
  if (!nodefs || ops.some((op) => typeof op !== 'function')) {
    throw new Error(
      "PGlite's NODEFS is not the one Sideport knows: the database folder's modes cannot be kept private.",
    );
  }
  if (maskedNodeFs.has(nodefs)) return;
  maskedNodeFs.add(nodefs);
  const { node_ops: nodeOps, stream_ops: streamOps } = nodefs;
  const { mknod, setattr } = nodeOps;
  const setStreamAttr = streamOps.setattr;
  const masked = <T extends { mode?: number }>(attr: T): T =>
    attr.mode === undefined ? attr : { ...attr, mode: attr.mode & OWNER_ONLY };
  nodeOps.mknod = (parent, name, mode, dev) => mknod.call(nodeOps, parent, name, mode & OWNER_ONLY, dev);
  nodeOps.setattr = (node, attr) => setattr.call(nodeOps, node, masked(attr));
  streamOps.setattr = (stream, attr) => setStreamAttr.call(streamOps, stream, masked(attr));
}

interface PgListener {
  stop(): Promise<void>;
}

/**
 * LISTEN on a connection of its own (a pooled one would be handed to other queries). A dropped
 * connection (server restart) is opened again after a pause, so a long-running process keeps
 * hearing other processes' events; events sent while it was away are lost, which the clients
 * tolerate (they reload lists on reconnect).
 */
async function listenPg(
  url: string,
  channel: string,
  onPayload: (payload: string) => void,
): Promise<PgListener> {
  let stopped = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  const reconnectLater = () => {
    if (!stopped) retry = setTimeout(() => void connect().catch(reconnectLater), 1000);
  };
  const connect = async () => {
    const next = new pg.Client({ connectionString: url });
    next.on('notification', (message) => {
      if (message.channel === channel) onPayload(message.payload ?? '');
    });
    next.on('error', () => {
      void next.end().catch(() => {});
      reconnectLater();
    });
    await next.connect();
    await next.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    client = next;
  };
  await connect();
  return {
    async stop() {
      stopped = true;
      clearTimeout(retry);
      await client?.end().catch(() => {});
    },
  };
}

// fs-native-extensions (CommonJS, untyped): tryLock takes an exclusive OFD lock, false when held.
const { tryLock } = createRequire(import.meta.url)('fs-native-extensions') as {
  tryLock(fd: number): boolean;
};

const LOCK_FILE = 'sideport.lock';
const LOCK_ATTEMPTS = 20;
const LOCK_RETRY_MS = 100;

/** Another process (a running server) holds the embedded database's folder. */
export class DataFolderInUseError extends Error {
  override name = 'DataFolderInUseError';
  constructor(
    message: string,
    /** The holder's pid, as its lock file names it. */
    readonly holderPid: number | undefined,
  ) {
    super(message);
  }
}

interface FolderLock {
  release(): void;
}

/**
 * Embedded PGlite is one process's database: a second process opening the same folder would
 * corrupt it. The folder is held by an exclusive lock on DATA_DIR/db/sideport.lock, taken on an
 * open file description (fcntl F_OFD_SETLK on Linux): the kernel releases it when the holder exits,
 * however it exits, so a restart right after a SIGKILL finds the folder free, and a stale pid in
 * the file cannot block a start. The pid written into the file only names the holder in the message.
 */
async function lockDataFolder(dir: string): Promise<FolderLock> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, LOCK_FILE);
  const fd = openSync(file, 'a+', 0o600);
  let locked = false;
  try {
    // A holder killed a moment ago may still be closing its files: give it a moment.
    for (let attempt = 0; attempt < LOCK_ATTEMPTS && !locked; attempt++) {
      if (attempt > 0) await sleep(LOCK_RETRY_MS);
      locked = tryLock(fd);
    }
  } finally {
    if (!locked) closeSync(fd);
  }
  if (!locked) {
    const holder = readFileSync(file, 'utf8').trim();
    const who = /^\d+$/.test(holder) ? `process ${holder}` : 'another process';
    throw new DataFolderInUseError(
      `The database folder ${dir} is in use by ${who}, which holds the lock on ${file}. ` +
        'Embedded PGlite allows one process: stop it first, or use DATABASE_URL.',
      /^\d+$/.test(holder) ? Number(holder) : undefined,
    );
  }
  ftruncateSync(fd, 0);
  writeSync(fd, String(process.pid), 0);
  return {
    release() {
      // Closing the descriptor drops the lock; the file stays, so two starters never race on it.
      closeSync(fd);
    },
  };
}

/** The unique-violation code of PostgreSQL (and PGlite): a concurrent request made the same row. */
export const isUniqueViolation = (err: unknown) => {
  for (let e = err as { code?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.code === '23505') return true;
  }
  return false;
};

/** Rows of a raw SQL query; both drivers answer `{ rows }`. */
export async function queryRows<T>(db: Database, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown as { rows: T[] };
  return result.rows;
}
