import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The real entry point as `npm start` runs it (root `npm test` builds dist before the tests).
const mainJs = path.resolve(import.meta.dirname, '../dist/main.js');
const cliJs = path.resolve(import.meta.dirname, '../bin/sideport.js');
const md5 = (s: string) => createHash('md5').update(s).digest('hex');

interface Running {
  child: ChildProcess;
  url: string;
  output: () => string;
}

function start(env: Record<string, string>): Promise<Running> {
  const child = spawn(process.execPath, [mainJs], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const match = /Sideport listening on (http:\/\/[\d.:]+)/.exec(out);
      if (match) resolve({ child, url: match[1]!, output: () => out });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${out}`)));
  });
}

function stop(running: Running): Promise<number | null> {
  return new Promise((resolve) => {
    running.child.removeAllListeners('exit');
    running.child.on('exit', (code) => resolve(code));
    running.child.kill('SIGTERM');
  });
}

function runCli(args: string[], env: Record<string, string>) {
  return new Promise<{ code: number | null; out: string }>((resolve) => {
    const child = spawn(process.execPath, [cliJs, ...args], { env: { PATH: process.env.PATH ?? '', ...env } });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

describe('the server process', () => {
  let dataDir: string;
  let webDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'sideport-main-'));
    webDir = path.join(dataDir, 'web');
    mkdirSync(path.join(webDir, 'assets'), { recursive: true });
    writeFileSync(path.join(webDir, 'index.html'), '<!doctype html><title>Sideport</title><div id="root"></div>');
    writeFileSync(path.join(webDir, 'assets', 'app-1234.js'), 'console.log(1)');
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('keeps every account across a restart on the same DATA_DIR', async () => {
    expect(existsSync(mainJs)).toBe(true);
    const env = { DATA_DIR: dataDir, WEB_DIST_DIR: webDir };
    const first = await start(env);
    expect(first.output()).toContain(`database: PGlite ${path.join(dataDir, 'db')}`);
    const signUp = await fetch(`${first.url}/api/sign-up`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'survivor', pw: md5('a long password') }),
    });
    expect(signUp.status).toBe(200);
    expect(await stop(first)).toBe(0);

    const second = await start(env);
    try {
      const signIn = await fetch(`${second.url}/api/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'survivor', pw: md5('a long password') }),
      });
      expect(signIn.status).toBe(200);
      expect(await signIn.json()).toEqual({ grade: 0 });

      // The SPA is served with history fallback; hashed assets are cached for good.
      const root = await fetch(`${second.url}/`);
      expect(root.status).toBe(200);
      expect(await root.text()).toContain('<div id="root">');
      const page = await fetch(`${second.url}/search/KR/some/thing`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<div id="root">');
      const asset = await fetch(`${second.url}/assets/app-1234.js`);
      expect(asset.headers.get('cache-control')).toContain('immutable');

      // The embedded database is one process's: the CLI refuses to open it while the server runs.
      const busy = await runCli(['user:grade', 'survivor', '1'], env);
      expect(busy.code).toBe(1);
      expect(busy.out).toMatch(/is in use by process \d+/);
    } finally {
      expect(await stop(second)).toBe(0);
    }

    const granted = await runCli(['user:grade', 'survivor', '2'], env);
    expect(granted.out).toContain('User survivor now has grade 2.');
    const unknown = await runCli(['user:grade', 'nobody', '2'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.out).toContain('No user with id nobody.');
  });

  it('creates the admin account from ADMIN_ID and ADMIN_PASSWORD', async () => {
    const running = await start({
      DATA_DIR: dataDir,
      WEB_DIST_DIR: webDir,
      ADMIN_ID: 'operator',
      ADMIN_PASSWORD: 'operator password',
    });
    try {
      const signIn = await fetch(`${running.url}/api/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'operator', pw: md5('operator password') }),
      });
      expect(await signIn.json()).toEqual({ grade: 1 });
      expect(running.output()).not.toContain('operator password');
    } finally {
      await stop(running);
    }
  });

  it('refuses to start on a bad variable, naming it', async () => {
    const result = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, [mainJs], { env: { PATH: process.env.PATH ?? '', PORT: 'x' } });
      let out = '';
      child.stderr.on('data', (c: Buffer) => (out += c.toString()));
      child.on('exit', (code) => resolve({ code, out }));
    });
    expect(result.code).toBe(1);
    expect(result.out).toContain('PORT: must be a number');
  });
});
