import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { until } from './test/agent-process.js';
import { md5, startServer, type Running } from './test/server-process.js';

/**
 * A process asked to stop during a rolling upgrade (docs/architecture.md, Upgrades without
 * downtime): it leaves readiness first while still serving, then ends its live streams with a
 * reconnect hint and exits 0.
 */
describe('a server process asked to stop', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'sideport-stop-'));
  let server: Running | undefined;
  afterAll(() => {
    server?.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it(
    'answers /readyz 503 while it still serves, closes live streams with retry:, and exits 0',
    { timeout: 120_000 },
    async () => {
      // A drain delay long enough to look at the process while it drains on a busy machine.
      server = await startServer({
        DATA_DIR: dataDir,
        WEB_DIST_DIR: dataDir,
        SHUTDOWN_DRAIN_DELAY_MS: '8000',
      });
      const { url } = server;
      const ready = await fetch(`${url}/readyz`);
      expect([ready.status, await ready.json()]).toEqual([
        200,
        { status: 'ready', database: 'pglite', storage: 'local', parts_down: [] },
      ]);

      const signUp = await fetch(`${url}/api/sign-up`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sideport-client': 'web' },
        body: JSON.stringify({ id: 'watcher', pw: md5('a long password') }),
      });
      expect(signUp.status).toBe(200);
      const cookie = signUp.headers.getSetCookie()[0]!.split(';')[0]!;
      const events = await fetch(`${url}/api/events`, { headers: { cookie } });
      expect(events.status).toBe(200);
      const reader = events.body!.getReader();
      let streamed = '';
      const streamEnded = (async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return streamed;
          streamed += Buffer.from(value).toString();
        }
      })();

      const exited = new Promise<number | null>((resolve) => {
        server!.child.removeAllListeners('exit');
        server!.child.on('exit', (code) => resolve(code));
      });
      server.child.kill('SIGTERM');

      // Out of readiness first, with a sentence and Retry-After ...
      const leaving = await until('/readyz to answer 503', async () => {
        const res = await fetch(`${url}/readyz`);
        return res.status === 503 ? res : undefined;
      });
      expect([leaving.headers.get('retry-after'), await leaving.text()]).toEqual([
        '2',
        'This server is restarting. Please retry in a moment.',
      ]);
      // ... while requests are still answered, so nothing sent meanwhile is lost.
      expect((await fetch(`${url}/api/config`)).status).toBe(200);

      // Then the live stream ends with a reconnect hint, and the process exits cleanly.
      expect(await streamEnded).toMatch(/retry: 1000\n\n$/);
      expect(await exited).toBe(0);
      expect(server.output()).toContain('"msg":"stopped"');
    },
  );
});
