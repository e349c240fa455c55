import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './test/agent-process.js';
import {
  mainJs,
  md5,
  runCli,
  startServer as start,
  stopServer as stop,
  type Running,
} from './test/server-process.js';

describe('the server process', () => {
  let dataDir: string;
  let webDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'sideport-main-'));
    webDir = path.join(dataDir, 'web');
    mkdirSync(path.join(webDir, 'assets'), { recursive: true });
    writeFileSync(
      path.join(webDir, 'index.html'),
      '<!doctype html><title>Sideport</title><div id="root"></div>',
    );
    writeFileSync(path.join(webDir, 'assets', 'app-1234.js'), 'console.log(1)');
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('keeps every account across a restart on the same DATA_DIR', { timeout: 300_000 }, async () => {
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
      expect(busy.code).toBe(2);
      expect(busy.out).toContain(
        `The database in ${dataDir} is in use by process ${second.child.pid} (a running server): stop it and run this again`,
      );
    } finally {
      expect(await stop(second)).toBe(0);
    }

    const granted = await runCli(['user:grade', 'survivor', '2'], env);
    expect(granted.out).toContain('User survivor now has grade 2.');
    const unknown = await runCli(['user:grade', 'nobody', '2'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.out).toContain('No user with id nobody.');
  });

  it(
    'creates the admin account from ADMIN_ID and ADMIN_PASSWORD; a new password ends its sessions',
    { timeout: 120_000 },
    async () => {
      const adminEnv = (password: string) => ({
        DATA_DIR: dataDir,
        WEB_DIST_DIR: webDir,
        ADMIN_ID: 'operator',
        ADMIN_PASSWORD: password,
      });
      const signIn = (url: string, password: string) =>
        fetch(`${url}/api/sign-in`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ id: 'operator', pw: md5(password) }),
        });
      const info = (url: string, cookie: string) =>
        fetch(`${url}/api/info`, { headers: { cookie } }).then((r) => r.status);

      let running = await start(adminEnv('operator password'));
      let cookie: string;
      try {
        const res = await signIn(running.url, 'operator password');
        expect(await res.json()).toEqual({ grade: 1 });
        cookie = res.headers.get('set-cookie')!.split(';')[0]!;
        expect(running.output()).not.toContain('operator password');
      } finally {
        await stop(running);
      }

      // The same password at the next start leaves the admin signed in.
      running = await start(adminEnv('operator password'));
      try {
        expect(await info(running.url, cookie)).toBe(200);
      } finally {
        await stop(running);
      }

      // A new ADMIN_PASSWORD: whoever signed in with the old one is out, and the old one fails.
      running = await start(adminEnv('a brand new password'));
      try {
        expect(await info(running.url, cookie)).toBe(401);
        expect((await signIn(running.url, 'operator password')).status).toBe(401);
        expect((await signIn(running.url, 'a brand new password')).status).toBe(200);
      } finally {
        await stop(running);
      }
    },
  );

  it(
    'prints a one-time setup link while no admin exists; a restart replaces it',
    { timeout: 180_000 },
    async () => {
      const freshDir = mkdtempSync(path.join(tmpdir(), 'sideport-setup-'));
      const env = { DATA_DIR: freshDir, WEB_DIST_DIR: webDir };
      const linkOf = (running: Running) =>
        until(
          'the setup link',
          async () =>
            /No admin account yet\. Open (http:\/\/localhost:\d+\/setup\/[\w-]+)/.exec(running.output())?.[1],
        );
      const createAdmin = (running: Running, link: string) =>
        fetch(`${running.url}/api${new URL(link).pathname}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ id: 'first-admin', pw: md5('a long password') }),
        });
      try {
        const first = await start(env);
        const firstLink = await linkOf(first).finally(() => stop(first));
        expect(new URL(firstLink).port).toBe(new URL(first.url).port);
        expect(first.output().split('/setup/')).toHaveLength(2);

        const second = await start(env);
        try {
          const secondLink = await linkOf(second);
          expect(secondLink).not.toBe(firstLink);
          expect((await createAdmin(second, firstLink)).status).toBe(404);
          const created = await createAdmin(second, secondLink);
          expect(await created.json()).toEqual({ grade: 1 });
          expect((await createAdmin(second, secondLink)).status).toBe(410);
        } finally {
          await stop(second);
        }
      } finally {
        rmSync(freshDir, { recursive: true, force: true });
      }
    },
  );

  it('refuses to start on a bad variable, naming it', async () => {
    const result = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, [mainJs], { env: { PATH: process.env.PATH ?? '', PORT: 'x' } });
      let out = '';
      child.stderr.on('data', (c: Buffer) => (out += c.toString()));
      child.on('exit', (code) => resolve({ code, out }));
    });
    expect(result.code).toBe(1);
    // One JSON line, the error serialised in it.
    const line = JSON.parse(result.out) as {
      level: number;
      msg: string;
      err: { type: string; message: string };
    };
    expect(line).toMatchObject({ level: 60, err: { type: 'ConfigError' } });
    expect(line.err.message).toContain('PORT: must be a number');
  });

  it('names the storage really in use in its start-up line', { timeout: 120_000 }, async () => {
    const running = await start({
      DATA_DIR: path.join(dataDir, 's3'),
      WEB_DIST_DIR: webDir,
      STORAGE_URL: 's3://ipas/sideport?endpoint=http://127.0.0.1:9&region=us-east-1&forcePathStyle=true',
    });
    try {
      const line = running
        .output()
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as { msg: string; storage?: string })
        .find((l) => l.msg.startsWith('Sideport listening'));
      expect(line?.storage).toBe('S3 bucket ipas at http://127.0.0.1:9');
      expect(line?.msg).toContain('storage: S3 bucket ipas at http://127.0.0.1:9)');
    } finally {
      await stop(running);
    }
  });
});
