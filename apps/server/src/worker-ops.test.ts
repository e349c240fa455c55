import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import type { ItunesServer } from './dev/itunes-server.js';
import { buildIpa, storeApp, storeWith } from './test/decrypt-support.js';
import { deviceInfo, enrollDevice, payForDevice } from './test/device-flow.js';
import { databaseKinds, signedInUser, WEB_CLIENT } from './test/harness.js';
import { startLiveServer, type LiveServer } from './test/live-server.js';
import { hasPromtool, promtoolCheck, sampleValue } from './test/promtool.js';
import { cliJs } from './test/server-process.js';

const APP_ID = 6400;
const APP_VER_ID = 864000001;
const TOKEN = 'worker-metrics-token-0123456789';

interface LogLine {
  level: number;
  msg: string;
  err?: { type: string; message: string; stack: string };
  [field: string]: unknown;
}

interface WorkerProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Every stdout line parsed as JSON (a line that is not JSON fails the parse, and the test). */
  lines(): LogLine[];
}

function startWorker(env: Record<string, string>): WorkerProcess {
  const child = spawn(process.execPath, [cliJs, 'worker', '--workers', '1'], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', METRICS_PORT: '0', METRICS_TOKEN: TOKEN, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    lines: () =>
      out
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => {
          try {
            return JSON.parse(line) as LogLine;
          } catch {
            throw new Error(`The worker wrote a line that is not JSON: ${line}`);
          }
        }),
  };
}

async function until<T>(what: string, worker: WorkerProcess, find: () => T | undefined): Promise<T> {
  for (let i = 0; i < 1800; i++) {
    const found = find();
    if (found !== undefined) return found;
    if (worker.child.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no ${what}:\n${worker.stdout()}\n${worker.stderr()}`);
}

function stop(worker: WorkerProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (worker.child.exitCode !== null) return resolve(worker.child.exitCode);
    worker.child.once('exit', (code) => resolve(code));
    worker.child.kill('SIGTERM');
  });
}

/**
 * `sideport worker` as an operator runs it on another machine: its log is JSON lines with the
 * error of a failure serialised, its start-up line names the storage in use, and its own GET
 * /metrics (METRICS_PORT) counts what it did. The API runs while signs are queued and is stopped
 * before the worker starts, so the embedded database is one process's at a time.
 */
describe.each(databaseKinds)('sideport worker logs and metrics on %s', (kind) => {
  let store: ItunesServer;
  let live: LiveServer;
  let cookie: string;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    store = await storeWith([storeApp(APP_ID, 'com.example.workerops')]);
    live = await startLiveServer(kind, {
      ITUNES_BASE_URL: store.url,
      SIGN_WORKERS: '0',
      SIGN_IN_LIMIT_PER_ADDRESS: '10000',
    });
    cookie = await signedInUser(live, `worker_ops_${kind}`);
    await enrollDevice(live, cookie, { UDID: '00008110-0000000000000C01', PRODUCT: 'iPhone15,2' });
    await payForDevice(live, cookie, 0);
    for (let i = 0; (await deviceInfo(live, cookie))[0]?.status !== 'Registered'; i++) {
      if (i > 300) throw new Error('the device was not registered');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // The dev identity is made and sealed with DATA_DIR/secret-key now, as the server makes it on first use.
    if (!(await live.services.signing.signingMaterial(`worker_ops_${kind}`)))
      throw new Error('no signing material');
    const ipa = await buildIpa({
      bundleId: 'com.example.workerops',
      version: '1.0',
      appVerId: String(APP_VER_ID),
    });
    await live.services.jobs.importIpa(ipa, { country: 'KR', appId: APP_ID });
    await live.stop();
  }, 240_000);
  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    await live?.close();
    await store?.close();
  });

  /** Queues a sign in mode 0 through the API, then stops the API. */
  async function queueSign() {
    await live.start();
    const res = await live.app.inject({
      method: 'PUT',
      url: `/api/sign/${APP_ID}/${APP_VER_ID}`,
      payload: { type: 0 },
      headers: { cookie, ...WEB_CLIENT },
    });
    expect(res.json()).toMatchObject({ status: 'Pending' });
    await live.stop();
  }

  const workerEnv = (extra: Record<string, string> = {}) => ({
    DATA_DIR: live.dataDir,
    ...(live.databaseUrl ? { DATABASE_URL: live.databaseUrl } : {}),
    ...extra,
  });

  async function scrape(url: string, authorization = `Bearer ${TOKEN}`) {
    return fetch(url, { headers: { authorization } });
  }

  it(
    'logs a failed sign as JSON with its error, and counts it on its own /metrics',
    { timeout: 240_000 },
    async () => {
      await queueSign();
      // Another SECRET_KEY than the one the signing identity was sealed with: an operator's mistake.
      const worker = startWorker(
        workerEnv({ SECRET_KEY: 'not-the-key-that-sealed-the-identity-0123', SIGN_MAX_ATTEMPTS: '1' }),
      );
      workers.push(worker);
      // A worker left running would take the next test's sign with this wrong key.
      onTestFailed(() => void worker.child.kill('SIGKILL'));
      const started = await until('start-up line', worker, () =>
        worker.lines().find((l) => l.msg.startsWith('Sign worker started')),
      );
      expect(started.storage).toBe(`local disk ${path.join(live.dataDir, 'files')}`);
      const failed = await until('failed sign', worker, () =>
        worker.lines().find((l) => /^sign \d+: failed$/.test(l.msg)),
      );
      expect(failed.level).toBe(40);
      expect(failed.err).toMatchObject({
        type: expect.any(String),
        message: expect.any(String),
        stack: expect.stringContaining('\n    at '),
      });

      const url = started.metrics as string;
      expect((await scrape(url, 'Bearer wrong')).status).toBe(401);
      const res = await scrape(url);
      expect(res.status).toBe(200);
      const body = await res.text();
      expect(sampleValue(body, 'sideport_jobs_claimed_total', { queue: 'sign' })).toBe(1);
      expect(sampleValue(body, 'sideport_jobs_failed_total', { queue: 'sign' })).toBe(1);
      expect(sampleValue(body, 'sideport_jobs_done_total', { queue: 'sign' })).toBe(0);
      if (hasPromtool) expect(promtoolCheck(body)).toEqual({ ok: true, output: '' });

      expect(await stop(worker)).toBe(0);
      // Every line, to the last, is JSON; nothing went to stderr.
      expect(worker.lines().at(-1)!.msg).toBe('Stopping: signs under way go back to the queue.');
      expect(worker.stderr()).toBe('');
    },
  );

  it('counts a sign done, by mode, with the right key', { timeout: 240_000 }, async () => {
    await queueSign();
    const worker = startWorker(workerEnv());
    workers.push(worker);
    const started = await until('start-up line', worker, () =>
      worker.lines().find((l) => l.msg.startsWith('Sign worker started')),
    );
    await until('signed', worker, () => worker.lines().find((l) => /^sign \d+: signed$/.test(l.msg)));
    const body = await (await scrape(started.metrics as string)).text();
    expect(sampleValue(body, 'sideport_jobs_claimed_total', { queue: 'sign' })).toBe(1);
    expect(sampleValue(body, 'sideport_jobs_done_total', { queue: 'sign' })).toBe(1);
    expect(sampleValue(body, 'sideport_jobs_failed_total', { queue: 'sign' })).toBe(0);
    expect(sampleValue(body, 'sideport_sign_duration_seconds_count', { mode: '0' })).toBe(1);
    expect(sampleValue(body, 'sideport_queue_depth', { queue: 'sign', status: 'queued', lane: 'all' })).toBe(
      0,
    );
    expect(sampleValue(body, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    if (hasPromtool) expect(promtoolCheck(body)).toEqual({ ok: true, output: '' });
    expect(await stop(worker)).toBe(0);
    expect(worker.lines().every((l) => typeof l.level === 'number' && typeof l.time === 'number')).toBe(true);
    expect(worker.stderr()).toBe('');
  });
});
