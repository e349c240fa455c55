import { chmod, mkdir, rm } from 'node:fs/promises';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import path from 'node:path';
import type { Writable } from 'node:stream';
import type { BackupSummary } from './backup.js';
import { AppError } from './errors.js';

/**
 * The embedded database belongs to the server process while it runs (PGlite, one process, a lock
 * on its folder), so `sideport backup` asks that process for the snapshot: over a Unix socket in
 * DATA_DIR/run, a folder only the data's owner can enter. Whoever can open it could read
 * DATA_DIR's files anyway; no port is opened and no token is needed. `sideport device:simulate`
 * asks it the same way to enroll a simulated iPhone, through the server's own services.
 */
export const controlSocketPath = (dataDir: string) => path.join(dataDir, 'run', 'control.sock');

/** What `sideport device:simulate` asks a running server for. */
export interface SimulateRequest {
  userId: string;
  paid: boolean;
}

/** The answer for an address the socket does not serve (a server older than the command). */
const NOTHING_HERE = 'There is nothing else here.';

/** A simulate request is a user id and a flag: anything longer is not one. */
const MAX_REQUEST_BYTES = 4096;

/** Unix socket paths are limited to 107 bytes on Linux. */
const MAX_SOCKET_PATH = 100;

export interface ControlSocketDeps {
  dataDir: string;
  /** Writes a backup to `out` (the CLI's connection); resolves when written. */
  backup(out: Writable): Promise<BackupSummary>;
  /** Enrolls a simulated iPhone for a user (modules/devices/simulate.ts); what the CLI prints. */
  simulateDevice?(request: SimulateRequest): Promise<unknown>;
  log: {
    info(obj: object, msg: string): void;
    warn(obj: object, msg: string): void;
    error(obj: object, msg: string): void;
  };
}

export async function listenControlSocket({
  dataDir,
  backup,
  simulateDevice,
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
    if (req.method === 'POST' && req.url === '/device-simulate' && simulateDevice) {
      void answerSimulate(req, res, simulateDevice, log);
      return;
    }
    if (req.method !== 'POST' || req.url !== '/backup') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end(NOTHING_HERE);
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

const plain = (res: ServerResponse, status: number, sentence: string) =>
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(sentence);

async function answerSimulate(
  req: IncomingMessage,
  res: ServerResponse,
  simulate: NonNullable<ControlSocketDeps['simulateDevice']>,
  log: ControlSocketDeps['log'],
) {
  let body = '';
  for await (const chunk of req as AsyncIterable<Buffer>) {
    body += chunk.toString('utf8');
    if (body.length > MAX_REQUEST_BYTES) return plain(res, 413, 'The request is too long.');
  }
  let request: SimulateRequest;
  try {
    const parsed = JSON.parse(body) as Partial<SimulateRequest>;
    if (typeof parsed.userId !== 'string' || typeof parsed.paid !== 'boolean') throw new Error('shape');
    request = { userId: parsed.userId, paid: parsed.paid };
  } catch {
    return plain(res, 400, 'The request is not a user id and a paid flag.');
  }
  try {
    const made = await simulate(request);
    log.info({ user: request.userId, paid: request.paid }, 'device:simulate: a simulated iPhone enrolled');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(made));
  } catch (err) {
    if (err instanceof AppError && err.status < 500) return plain(res, err.status, err.message);
    log.error({ err }, 'device:simulate failed');
    plain(res, 500, 'The server could not enroll the simulated iPhone; its log says why.');
  }
}

/** A refusal the running server answered, as one sentence. */
export class ControlRefusal extends Error {
  override name = 'ControlRefusal';
}

/**
 * Asks the server running on DATA_DIR to enroll a simulated iPhone: its answer, or undefined when
 * no server answers on the socket. A refusal (no such user, not the dev identity) rejects with
 * ControlRefusal and the server's sentence.
 */
export function requestSimulateDevice(dataDir: string, request: SimulateRequest): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        socketPath: controlSocketPath(dataDir),
        method: 'POST',
        path: '/device-simulate',
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('error', reject);
        res.on('end', () => {
          if (res.statusCode === 200) return resolve(JSON.parse(text));
          if (res.statusCode === 404 && text === NOTHING_HERE)
            return reject(
              new ControlRefusal(
                `The server running on ${dataDir} does not take device:simulate; restart it with this version.`,
              ),
            );
          reject(new ControlRefusal(text));
        });
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') resolve(undefined);
      else reject(err);
    });
    req.end(JSON.stringify(request));
  });
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
