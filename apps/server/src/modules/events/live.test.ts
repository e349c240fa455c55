import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { LiveEvent } from '@sideport/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { openDatabase } from '../../db/client.js';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { loadConfig } from '../../platform/config.js';
import { createTestApp, databaseKinds, signedInUser, WEB_CLIENT, type TestApp } from '../../test/harness.js';
import { makeAgent, storeApp, storeWith } from '../../test/decrypt-support.js';

/** Reads Server-Sent Events from a running server as a browser tab would. */
async function openStream(baseUrl: string, cookie: string) {
  const controller = new AbortController();
  const response = await fetch(`${baseUrl}/api/events`, { headers: { cookie }, signal: controller.signal });
  const events: LiveEvent[] = [];
  const waiters: Array<() => void> = [];
  const reader = response.body!.getReader();
  void (async () => {
    let buffered = '';
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      buffered += new TextDecoder().decode(value);
      let end: number;
      while ((end = buffered.indexOf('\n\n')) !== -1) {
        const block = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        const data = block.split('\n').find((line) => line.startsWith('data: '));
        if (data) events.push(JSON.parse(data.slice(6)) as LiveEvent);
        waiters.splice(0).forEach((wake) => wake());
      }
    }
  })();
  return {
    response,
    events,
    /** Resolves with the first event `matches` accepts (already received or coming). */
    async next(matches: (event: LiveEvent) => boolean, timeoutMs = 60_000): Promise<LiveEvent> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = events.find(matches);
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no matching event; saw ${JSON.stringify(events)}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 200);
        });
      }
    },
    close: () => controller.abort(),
  };
}

describe.each(databaseKinds)('live status on %s', (kind) => {
  let store: ItunesServer;
  let t: TestApp;
  let baseUrl: string;
  let user: string;
  let admin: string;

  beforeAll(async () => {
    store = await storeWith([storeApp(6001, 'com.example.live1'), storeApp(6002, 'com.example.live2')]);
    t = await createTestApp(kind, { env: { ITUNES_BASE_URL: store.url, LIST_CACHE_MS: '0' } });
    baseUrl = await t.app.listen({ port: 0, host: '127.0.0.1' });
    user = await signedInUser(t, `live_${kind}`);
    admin = await signedInUser(t, `liveadmin_${kind}`, 1);
  });
  afterAll(async () => {
    await t.close();
    await store.close();
  });

  it('streams every status change of a decrypt entry to a signed-in tab', async () => {
    const stream = await openStream(baseUrl, user);
    expect(stream.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(
      (await t.app.inject({ url: '/api/decrypt/KR/6001', headers: { cookie: user, ...WEB_CLIENT } }))
        .statusCode,
    ).toBe(200);
    expect(await stream.next((e) => e.type === 'version' && e.app_id === '6001')).toMatchObject({
      status: 'Pending',
      app_ver_id: null,
    });

    const agent = await makeAgent(t, admin);
    const { job } = await agent.claim();
    expect(await stream.next((e) => e.type === 'version' && e.status === 'Downloading')).toMatchObject({
      app_id: '6001',
      progress: 0,
    });
    await agent.call('POST', `/api/agent/jobs/${job!.id}/heartbeat`, { status: 'Downloaded', progress: 55 });
    expect(await stream.next((e) => e.type === 'version' && e.status === 'Downloaded')).toMatchObject({
      progress: 55,
    });
    await agent.call('POST', `/api/agent/jobs/${job!.id}/fail`, {
      reason: 'Not in this store.',
      unsupported: true,
    });
    expect(await stream.next((e) => e.type === 'version' && e.status === 'Not')).toMatchObject({
      app_id: '6001',
    });
    stream.close();
  });

  it("tells an admin of everyone's device changes, and a user of their own only", async () => {
    const userStream = await openStream(baseUrl, user);
    const adminStream = await openStream(baseUrl, admin);
    try {
      // Someone else's device, then the user's own: in that order on every stream.
      await t.services.bus.publish({ kind: 'live', event: { type: 'device' }, userId: `someone_${kind}` });
      await t.services.bus.publish({ kind: 'live', event: { type: 'device' }, userId: `live_${kind}` });
      await userStream.next((e) => e.type === 'device');
      await adminStream.next(() => adminStream.events.filter((e) => e.type === 'device').length === 2);
      expect(userStream.events.filter((e) => e.type === 'device')).toEqual([{ type: 'device' }]);
      expect(adminStream.events.filter((e) => e.type === 'device')).toEqual([
        { type: 'device' },
        { type: 'device' },
      ]);
    } finally {
      userStream.close();
      adminStream.close();
    }
  });

  it('answers 401 to a stream without a session', async () => {
    const response = await fetch(`${baseUrl}/api/events`);
    expect(response.status).toBe(401);
    expect(await response.text()).toBe('Please sign in.');
  });

  it.runIf(kind === 'postgres')(
    'carries a change made through one API process to a tab on another',
    async () => {
      // A second API process on the same database: a load balancer may put the tab on either.
      const dataDir = mkdtempSync(path.join(tmpdir(), 'sideport-second-'));
      const config = loadConfig({
        LOG_LEVEL: 'silent',
        DATA_DIR: dataDir,
        WEB_DIST_DIR: dataDir,
        DATABASE_URL: t.database.url!,
        ITUNES_BASE_URL: store.url,
      });
      const database = await openDatabase({ url: config.DATABASE_URL! });
      const second = await buildApp({ config, database });
      const secondUrl = await second.app.listen({ port: 0, host: '127.0.0.1' });
      try {
        const stream = await openStream(secondUrl, user);
        expect(
          (await t.app.inject({ url: '/api/decrypt/KR/6002', headers: { cookie: user, ...WEB_CLIENT } }))
            .statusCode,
        ).toBe(200);
        expect(await stream.next((e) => e.type === 'version' && e.app_id === '6002')).toMatchObject({
          status: 'Pending',
        });
        stream.close();
      } finally {
        await second.app.close();
        await database.close();
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );
});
