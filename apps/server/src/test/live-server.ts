import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { buildApp, type Built } from '../app.js';
import { openDatabase, type DatabaseHandle } from '../db/client.js';
import { loadConfig } from '../platform/config.js';
import { createPostgresDatabase, type DatabaseKind } from './harness.js';

/**
 * The real server listening on a port of 127.0.0.1, on a database that outlives it (PGlite in a
 * folder, or a PostgreSQL database), so it can be stopped and started again on the same port and
 * data, as an operator restarting it would. For tests that run real agent processes.
 */
export interface LiveServer {
  readonly url: string;
  readonly dataDir: string;
  /** PostgreSQL: the URL of this server's database, for other processes (`sideport worker`). */
  readonly databaseUrl: string | undefined;
  /** The running server's app and services (new ones after each start). */
  readonly app: Built['app'];
  readonly services: Built['services'];
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startLiveServer(
  kind: DatabaseKind,
  env: Record<string, string> = {},
): Promise<LiveServer> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'sideport-live-'));
  const postgres = kind === 'postgres' ? await createPostgresDatabase() : undefined;
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    DATA_DIR: dataDir,
    WEB_DIST_DIR: dataDir,
    SESSION_CACHE_MS: '0',
    ...env,
  });
  let port = 0;
  let running: { built: Built; database: DatabaseHandle } | undefined;

  const start = async () => {
    const database = await openDatabase(
      postgres ? { url: postgres.url } : { pgliteDir: path.join(dataDir, 'db') },
    );
    await database.migrate();
    const built = await buildApp({ config, database });
    await built.app.listen({ host: '127.0.0.1', port });
    port = (built.app.server.address() as AddressInfo).port;
    running = { built, database };
  };
  const stop = async () => {
    if (!running) return;
    const { built, database } = running;
    running = undefined;
    await built.app.close();
    await database.close();
  };
  const current = () => {
    if (!running) throw new Error('the server is stopped');
    return running.built;
  };
  await start();
  return {
    get url() {
      return `http://127.0.0.1:${port}`;
    },
    dataDir,
    databaseUrl: postgres?.url,
    get app() {
      return current().app;
    },
    get services() {
      return current().services;
    },
    start,
    stop,
    async close() {
      await stop();
      await postgres?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
