import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { LiveEvent } from '@sideport/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app.js';
import { openDatabase } from '../../db/client.js';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { loadConfig } from '../../platform/config.js';
import { SECRET_KEY_FILE } from '../../platform/secrets.js';
import {
  createTestApp,
  databaseKinds,
  sessionCookie,
  signedInUser,
  WEB_CLIENT,
  type TestApp,
} from '../../test/harness.js';
import { makeAgent, storeApp, storeWith } from '../../test/decrypt-support.js';

/** Reads Server-Sent Events from a running server as a browser tab would. */
async function openStream(baseUrl: string, cookie: string) {
  const controller = new AbortController();
  const response = await fetch(`${baseUrl}/api/events`, { headers: { cookie }, signal: controller.signal });
  const events: LiveEvent[] = [];
  const waiters: Array<() => void> = [];
  const reader = response.body!.getReader();
  let ended: (reason: 'server' | 'client') => void = () => {};
  const closed = new Promise<'server' | 'client'>((resolve) => (ended = resolve));
  void (async () => {
    let buffered = '';
    for (;;) {
      const { value, done } = await reader
        .read()
        .catch(() => ({ value: undefined, done: true, aborted: true }));
      if (done) return ended(controller.signal.aborted ? 'client' : 'server');
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
    /** Resolves once the stream has ended: 'server' when the server ended it. */
    closed,
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
      // Processes of one deployment share its SECRET_KEY (the secrets they read are sealed with it).
      const dataDir = mkdtempSync(path.join(tmpdir(), 'sideport-second-'));
      const config = loadConfig({
        LOG_LEVEL: 'silent',
        SECRET_KEY: readFileSync(path.join(t.dataDir, SECRET_KEY_FILE), 'utf8').trim(),
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

/** Waits for `condition`, checking every 50 ms, for at most `timeoutMs` (a generous outer limit). */
async function eventually(condition: () => Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('the condition never held');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A new session of `id` (signed up before), as a second browser would have. */
async function signIn(t: TestApp, id: string) {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/sign-in',
    payload: { id, pw: 'a'.repeat(32) },
  });
  expect(res.statusCode, res.body).toBe(200);
  return sessionCookie(res);
}

describe.each(databaseKinds)('event stream caps on %s', (kind) => {
  let t: TestApp;
  let baseUrl: string;
  const opened: Array<{ close(): void }> = [];

  beforeAll(async () => {
    t = await createTestApp(kind, {
      env: { EVENT_STREAMS_PER_SESSION: '2', EVENT_STREAMS_PER_USER: '3', EVENT_STREAMS_MAX: '5' },
    });
    baseUrl = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    for (const stream of opened) stream.close();
    await t.close();
  });

  const open = async (cookie: string) => {
    const stream = await openStream(baseUrl, cookie);
    opened.push(stream);
    return stream;
  };
  const refusal = async (cookie: string) => {
    const res = await fetch(`${baseUrl}/api/events`, { headers: { cookie } });
    return [res.status, res.headers.get('content-type'), await res.text()];
  };

  it('refuses a stream past the per-session, per-user and global caps with 429 and a sentence', async () => {
    const first = await signedInUser(t, `capped_${kind}`);
    const second = await signIn(t, `capped_${kind}`);
    const other = await signedInUser(t, `capped_other_${kind}`);
    const late = await signedInUser(t, `capped_late_${kind}`);

    const a1 = await open(first);
    expect(a1.response.status).toBe(200);
    expect((await open(first)).response.status).toBe(200);
    expect(await refusal(first)).toEqual([
      429,
      'text/plain; charset=utf-8',
      'This browser has too many live-update connections open. Close some tabs of this site and reload this one.',
    ]);
    // The same user's other browser: one more, then the user's cap.
    expect((await open(second)).response.status).toBe(200);
    expect(await refusal(second)).toEqual([
      429,
      'text/plain; charset=utf-8',
      'Your account has too many live-update connections open. Close some tabs of this site, on any device, and reload this one.',
    ]);
    // Other users share the process's cap (5).
    expect((await open(other)).response.status).toBe(200);
    expect((await open(other)).response.status).toBe(200);
    expect(await refusal(late)).toEqual([
      429,
      'text/plain; charset=utf-8',
      'The server has too many live-update connections open. Please reload this page in a minute.',
    ]);
    // A stream that closes gives its place back.
    a1.close();
    let stream: Awaited<ReturnType<typeof openStream>> | undefined;
    await eventually(async () => {
      stream?.close();
      stream = await open(late);
      return stream.response.status === 200;
    });
  });
});

describe.each(databaseKinds)('event streams end with their session on %s', (kind) => {
  let t: TestApp;
  let baseUrl: string;
  let now = Date.now();

  beforeAll(async () => {
    t = await createTestApp(kind, { env: { SESSION_TTL_DAYS: '1' }, clock: () => new Date(now) });
    baseUrl = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => t.close());

  it("closes a signed-out session's stream, and only that session's", async () => {
    const id = `leaving_${kind}`;
    const leaving = await signedInUser(t, id);
    const staying = await signIn(t, id);
    const leavingStream = await openStream(baseUrl, leaving);
    const stayingStream = await openStream(baseUrl, staying);
    try {
      const out = await t.app.inject({
        method: 'POST',
        url: '/api/sign-out',
        headers: { cookie: leaving, ...WEB_CLIENT },
      });
      expect(out.statusCode).toBe(204);
      expect(await leavingStream.closed).toBe('server');
      // The other browser's stream still delivers the user's events.
      await t.services.bus.publish({ kind: 'live', event: { type: 'device' }, userId: id });
      await stayingStream.next((e) => e.type === 'device');
      expect(leavingStream.events.filter((e) => e.type === 'device')).toEqual([]);
    } finally {
      leavingStream.close();
      stayingStream.close();
    }
  });

  it('closes every stream of a user whose password is changed', async () => {
    const id = `repassworded_${kind}`;
    const cookie = await signedInUser(t, id);
    const stream = await openStream(baseUrl, cookie);
    try {
      await t.services.auth.ensureUser(id, 'b'.repeat(32), 0);
      expect(await stream.closed).toBe('server');
    } finally {
      stream.close();
    }
  });

  it('closes a stream when its session expires', async () => {
    const cookie = await signedInUser(t, `expiring_${kind}`);
    // The session's last half second: the stream is opened then, and ends with the session.
    now += 86_400_000 - 500;
    const stream = await openStream(baseUrl, cookie);
    try {
      expect(stream.response.status).toBe(200);
      expect(await stream.closed).toBe('server');
    } finally {
      stream.close();
      now = Date.now();
    }
  });
});
