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
  const data = path.join(dir, 'data');
  await pg('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8']);
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
  const start = async () =>
    void (await pg('pg_ctl', ['-D', data, '-l', path.join(dir, 'log'), '-w', '-o', options, 'start']));
  const stop = async () => void (await pg('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']));
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
