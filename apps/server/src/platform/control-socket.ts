import { chmod, mkdir, rm } from 'node:fs/promises';
import { createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import path from 'node:path';
import type { Writable } from 'node:stream';
import type { BackupSummary } from './backup.js';

/**
 * The embedded database belongs to the server process while it runs (PGlite, one process, a lock
 * on its folder), so `sideport backup` asks that process for the snapshot: over a Unix socket in
 * DATA_DIR/run, a folder only the data's owner can enter. Whoever can open it could read
 * DATA_DIR's files anyway; no port is opened and no token is needed.
 */
export const controlSocketPath = (dataDir: string) => path.join(dataDir, 'run', 'control.sock');

/** Unix socket paths are limited to 107 bytes on Linux. */
const MAX_SOCKET_PATH = 100;

export interface ControlSocketDeps {
  dataDir: string;
  /** Writes a backup to `out` (the CLI's connection); resolves when written. */
  backup(out: Writable): Promise<BackupSummary>;
  log: {
    info(obj: object, msg: string): void;
    warn(obj: object, msg: string): void;
    error(obj: object, msg: string): void;
  };
}

export async function listenControlSocket({
  dataDir,
  backup,
  log,
}: ControlSocketDeps): Promise<{ close(): Promise<void> }> {
  const file = controlSocketPath(dataDir);
  if (Buffer.byteLength(file) > MAX_SOCKET_PATH) {
    log.warn(
      { socket: file },
      'DATA_DIR is too long a path for the backup socket: stop the server to run sideport backup',
    );
    return { close: async () => {} };
  }
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await chmod(path.dirname(file), 0o700);
  // Left by a server that was killed: this process holds the data folder's lock, so it is stale.
  await rm(file, { force: true });
  let running = 0;
  const server = createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/backup') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('There is nothing else here.');
      return;
    }
    running++;
    res.writeHead(200, { 'content-type': 'application/x-tar' });
    log.info({}, 'backup: writing a snapshot for sideport backup');
    backup(res)
      .then(
        (summary) => log.info({ ...summary }, 'backup: snapshot written'),
        (err: unknown) => {
          log.error({ err }, 'backup: the snapshot failed');
          res.destroy();
        },
      )
      .finally(() => running--);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(file, () => resolve());
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        // A backup under way is cut short: its file is refused, never taken for a whole one.
        if (running > 0) log.warn({}, 'backup: the server stops during a backup; that backup is incomplete');
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The running server's snapshot as a stream, or undefined when no server answers on DATA_DIR's
 * socket (none runs, or it is another version's).
 */
export function requestBackup(dataDir: string): Promise<IncomingMessage | undefined> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { socketPath: controlSocketPath(dataDir), method: 'POST', path: '/backup' },
      (res) => {
        if (res.statusCode === 200) return resolve(res);
        res.resume();
        reject(new Error(`The running server refused the backup (HTTP ${res.statusCode}).`));
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') resolve(undefined);
      else reject(err);
    });
    req.end();
  });
}
