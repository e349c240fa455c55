import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { cannotRun } from '@sideport/ipa/test-support/system-tools';

const run = promisify(execFile);

/** Debian's PostgreSQL 15, as scripts/with-postgres.sh uses (PG_BIN changes it). */
export const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
export const hasPostgresBinaries = existsSync(path.join(PG_BIN, 'pg_ctl'));
/**
 * Why the tests that stop PostgreSQL cannot run here (and skip, outside CI), or false: they need
 * its binaries, which `npm install` does not bring.
 */
export const noPostgresBinaries =
  !hasPostgresBinaries &&
  cannotRun(`PostgreSQL's pg_ctl is not in ${PG_BIN} (apt-get install postgresql-15, or set PG_BIN)`);

/** A throwaway PostgreSQL cluster of one test's own, which it may stop and start (a restart, a failover). */
export interface PgCluster {
  url: string;
  /** `pg_ctl stop -m fast`: every connection is closed by the server, as in a restart. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /**
   * A failover as a managed PostgreSQL or Patroni behind a moved address does one: a streaming
   * replica (pg_basebackup -R) catches up, the primary dies (`pg_ctl stop -m immediate`, no
   * shutdown checkpoint), and the replica is promoted at the primary's address, on a timeline of
   * its own. `whileDown` runs between the primary's death and the promotion.
   */
  failover(whileDown?: () => Promise<void>): Promise<void>;
  dispose(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** initdb and start a cluster on 127.0.0.1 (trust auth); as root, it runs as the postgres user. */
export async function startPgCluster(): Promise<PgCluster> {
  const dir = mkdtempSync(path.join(tmpdir(), 'sideport-pg-fault-'));
  const asRoot = process.getuid?.() === 0;
  const pgUid = asRoot ? await postgresUid() : undefined;
  if (pgUid !== undefined) chownSync(dir, pgUid, pgUid);
  const pg = (tool: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', path.join(PG_BIN, tool), ...args])
      : run(path.join(PG_BIN, tool), args);
  // PG_FAULT_PORT keeps it on a port of the caller's choosing, clear of other clusters.
  const port = Number(process.env.PG_FAULT_PORT) || (await freePort());
  let data = path.join(dir, 'data');
  await pg('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8']);
  const options = (at: number) =>
    `-c listen_addresses=127.0.0.1 -p ${at} -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
  const start = async (folder = data, at = port) =>
    void (await pg('pg_ctl', ['-D', folder, '-l', `${folder}.log`, '-w', '-o', options(at), 'start']));
  const stop = async (folder = data, mode = 'fast') =>
    void (await pg('pg_ctl', ['-D', folder, '-m', mode, '-w', 'stop']));
  const query = async (at: number, text: string) =>
    (await pg('psql', ['-h', '127.0.0.1', '-p', String(at), '-U', 'postgres', '-Atc', text])).stdout.trim();
  await start();
  let isRunning = true;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async stop() {
      await stop();
      isRunning = false;
    },
    async start() {
      await start();
      isRunning = true;
    },
    async failover(whileDown) {
      const replica = path.join(dir, `replica-${Date.now()}`);
      const replicaPort = await freePort();
      await pg('pg_basebackup', [
        '-h',
        '127.0.0.1',
        '-p',
        String(port),
        '-U',
        'postgres',
        '-D',
        replica,
        '-R',
        '-X',
        'stream',
      ]);
      await start(replica, replicaPort);
      // Everything the primary committed has reached the replica before the primary dies (the
      // caller's test timeout bounds the wait, not a budget of our own that load could exceed).
      const written = await query(port, 'select pg_current_wal_lsn()');
      while ((await query(replicaPort, `select pg_last_wal_replay_lsn() >= '${written}'::pg_lsn`)) !== 't')
        await new Promise((resolve) => setTimeout(resolve, 100));
      await stop(data, 'immediate');
      isRunning = false;
      await whileDown?.();
      // The address moves to the replica, which is promoted there.
      await stop(replica);
      await start(replica, port);
      await pg('pg_ctl', ['-D', replica, '-w', 'promote']);
      rmSync(data, { recursive: true, force: true });
      data = replica;
      isRunning = true;
    },
    async dispose() {
      if (isRunning) await stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postgresUid(): Promise<number> {
  await run('id', ['postgres']).catch(() => run('useradd', ['--system', '--no-create-home', 'postgres']));
  return Number((await run('id', ['-u', 'postgres'])).stdout.trim());
}
