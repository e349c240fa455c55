import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresDatabase, databaseKinds } from '../../test/harness.js';
import { cliJs, mainJs } from '../../test/server-process.js';

const SECRET_KEY = 'sweep-process-test-secret-key-0123456789';

/** What a killed process leaves in DATA_DIR, old, beside work of the last minutes. */
function seed(dataDir: string) {
  const old = new Date(Date.now() - 2 * 3_600_000);
  const put = (rel: string, bytes: number, modifiedAt?: Date) => {
    const file = path.join(dataDir, rel);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, 'x'.repeat(bytes));
    if (modifiedAt) utimesSync(file, modifiedAt, modifiedAt);
    return file;
  };
  return {
    unnamed: put(`files/ipa/6600/866000001/${randomUUID()}.ipa`, 4000, old),
    stored: put(`files/signed/17/${randomUUID()}.ipa`, 100),
    partial: put(`tmp/upload-${randomUUID()}.ipa`, 2000, old),
    receiving: put(`tmp/upload-${randomUUID()}.ipa`, 10),
  };
}

/** Runs a process until it logs its file sweep; answers that JSON line. */
function runUntilSwept(args: string[], env: Record<string, string>): Promise<Record<string, unknown>> {
  const child = spawn(process.execPath, args, {
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      SECRET_KEY,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.includes('"msg":"file sweep: '));
      if (!line) return;
      child.removeAllListeners('exit');
      child.once('exit', () => resolve(JSON.parse(line) as Record<string, unknown>));
      child.kill('SIGTERM');
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited with ${code} before sweeping:\n${out}`)));
  });
}

describe.each(databaseKinds)('files nothing uses, at start, on %s', (kind) => {
  const dirs: string[] = [];
  const drops: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const drop of drops) await drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  async function environment() {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'sideport-sweep-start-'));
    dirs.push(dataDir);
    // The process's own temp folder: the sweep also clears old signing spools there.
    const osTmp = path.join(dataDir, 'os-tmp');
    mkdirSync(osTmp);
    const env: Record<string, string> = { DATA_DIR: dataDir, WEB_DIST_DIR: dataDir, TMPDIR: osTmp };
    if (kind === 'postgres') {
      const created = await createPostgresDatabase();
      drops.push(created.drop);
      env.DATABASE_URL = created.url;
    }
    return { dataDir, env };
  }

  for (const [name, args] of [
    ['the server', [mainJs]],
    ['sideport worker', [cliJs, 'worker', '--workers', '1']],
  ] as const) {
    it(
      `${name} removes an old stored file no row names and a stale partial upload, and keeps fresh ones`,
      { timeout: 120_000 },
      async () => {
        const { dataDir, env } = await environment();
        const files = seed(dataDir);
        const line = await runUntilSwept([...args], env);
        expect(line.msg).toBe('file sweep: removed 2 files (6000 bytes) nothing uses');
        expect(line.sweep).toMatchObject({
          stored: { files: 1, bytes: 4000 },
          temporary: { files: 1, bytes: 2000 },
        });
        expect({
          unnamed: existsSync(files.unnamed),
          stored: existsSync(files.stored),
          partial: existsSync(files.partial),
          receiving: existsSync(files.receiving),
        }).toEqual({ unnamed: false, stored: true, partial: false, receiving: true });
      },
    );
  }
});
