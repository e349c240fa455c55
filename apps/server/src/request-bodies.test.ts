import { readdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItunesServer } from './dev/itunes-server.js';
import { makeAgent, storeApp, storeWith, type AgentClient } from './test/decrypt-support.js';
import { changedTables, snapshotDatabase } from './test/db-snapshot.js';
import { createTestApp, databaseKinds, signedInUser, type TestApp } from './test/harness.js';
import { SAME_ORIGIN } from './test/route-suite.js';
import { openRaw, parseRawAnswer, type RawAnswer } from './test/raw-http.js';
import { createSimulatedDevice } from './modules/devices/simulated-device.js';

/** Small bounds, so a stalled body is given up on quickly; uploads keep a longer one. */
const BODY_IDLE_TIMEOUT_MS = 300;
const AGENT_UPLOAD_IDLE_TIMEOUT_MS = 2000;
const STALLED = 'The request body stopped arriving. Send the request again.';
/** The overall bounds on a body (an upload's aside) and on headers, short for the test. */
const BODY_TIMEOUT_MS = 1500;
const HEADERS_TIMEOUT_MS = 1000;

const APP_IDS = Array.from({ length: 10 }, (_, i) => 6100 + i);

/** The files an upload left in DATA_DIR/tmp, where agent uploads are received. */
const tmpFiles = (t: TestApp) => {
  try {
    return readdirSync(path.join(t.dataDir, 'tmp'));
  } catch {
    return [];
  }
};

describe.each(databaseKinds)('agent uploads and request bodies on %s', (kind) => {
  let store: ItunesServer;
  let t: TestApp;
  let port = 0;
  let agent: AgentClient;
  let user: string;
  let asked = 0;

  /** A new decrypt job the agent holds, by its lease id: an upload to it reaches the reader. */
  async function newLease(): Promise<string> {
    const appId = APP_IDS[asked++]!;
    const res = await t.app.inject({
      url: `/api/decrypt/KR/${appId}`,
      headers: { cookie: user, ...SAME_ORIGIN },
    });
    expect(res.statusCode, res.body).toBe(200);
    // An earlier test's refused upload put its job back in the queue: it is failed out of the way.
    for (;;) {
      const { job } = await agent.claim();
      if (!job) throw new Error(`no job for ${appId}`);
      if (job.app_id === String(appId)) return job.id;
      await agent.call('POST', `/api/agent/jobs/${job.id}/fail`, {
        reason: 'Not this test.',
        unsupported: true,
      });
    }
  }

  beforeAll(async () => {
    store = await storeWith(APP_IDS.map((id) => storeApp(id, `com.example.bodies${id}`)));
    t = await createTestApp(kind, {
      env: {
        ITUNES_BASE_URL: store.url,
        LIST_CACHE_MS: '0',
        FREE_DAILY_LIMIT: '100',
        BODY_IDLE_TIMEOUT_MS: String(BODY_IDLE_TIMEOUT_MS),
        AGENT_UPLOAD_IDLE_TIMEOUT_MS: String(AGENT_UPLOAD_IDLE_TIMEOUT_MS),
        BODY_TIMEOUT_MS: String(BODY_TIMEOUT_MS),
        HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      },
    });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
    user = await signedInUser(t, `bodies_${kind}`);
    agent = await makeAgent(t, await signedInUser(t, `bodies_admin_${kind}`, 1));
  });
  afterAll(async () => {
    await t.close();
    await store.close();
  });

  it.each([
    ['JSON', 'application/json', '{"not":"an ipa"}'],
    ['text', 'text/plain', 'not an ipa'],
    ['a form', 'application/x-www-form-urlencoded', 'a=1'],
    ['an image type', 'image/png', 'PK'],
    ['no content type at all', undefined, 'PK'],
  ])(
    'refuses an upload sent as %s with 415, naming the content type it takes',
    async (_what, type, payload) => {
      const lease = await newLease();
      const before = await snapshotDatabase(t.database.db);
      const res = await t.app.inject({
        method: 'PUT',
        url: `/api/agent/jobs/${lease}/ipa`,
        headers: { authorization: `Bearer ${agent.token}`, ...(type ? { 'content-type': type } : {}) },
        payload,
      });
      expect(res.statusCode).toBe(415);
      expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(res.body).toBe('Send the IPA as the request body with Content-Type: application/octet-stream.');
      expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
      expect(tmpFiles(t)).toEqual([]);
    },
  );

  it('still takes the upload as application/octet-stream (with parameters too)', async () => {
    const lease = await newLease();
    const res = await agent.call('PUT', `/api/agent/jobs/${lease}/ipa`, Buffer.from('PK not a zip'), {
      'content-type': 'application/octet-stream; charset=binary',
    });
    // Read and checked: refused for what it is, not for how it was sent.
    expect(res.statusCode, res.body).toBe(422);
    expect(tmpFiles(t)).toEqual([]);
  });

  /**
   * Sends a request's head and the first `sentBytes` of a body of `body.length` bytes over a real
   * connection, then nothing more; resolves with what the server answered once it closed the
   * connection. The client never closes it: whatever ends it is the server's doing.
   */
  async function stalledRequest(head: string, body: Buffer, sentBytes: number): Promise<RawAnswer> {
    const { socket, answer } = await openRaw(port);
    socket.write(`${head}Content-Length: ${body.length}\r\n\r\n`);
    socket.write(body.subarray(0, sentBytes));
    const text = await answer;
    return parseRawAnswer(text);
  }

  it('answers a sign-in whose body stops arriving 408 with a sentence, and signs nobody in', async () => {
    const before = await snapshotDatabase(t.database.db);
    const body = Buffer.from(JSON.stringify({ id: `bodies_${kind}`, pw: 'a'.repeat(32) }));
    const res = await stalledRequest(
      'POST /api/sign-in HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n',
      body,
      10,
    );
    expect(res.status).toBe(408);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.body).toBe(STALLED);
    expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
  });

  it("answers a device's enrollment answer that stops arriving 408, and its link still works after", async () => {
    const profile = await t.app.inject({
      url: '/api/udid/profile',
      headers: { cookie: user, ...SAME_ORIGIN },
    });
    expect(profile.statusCode).toBe(200);
    const answer = createSimulatedDevice().answer(profile.rawPayload);
    const enrollPath = new URL(answer.url).pathname;
    const before = await snapshotDatabase(t.database.db);
    const res = await stalledRequest(
      `POST ${enrollPath} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/pkcs7-signature\r\n`,
      answer.body,
      answer.body.length >> 1,
    );
    expect(res.status).toBe(408);
    expect(res.body).toBe(STALLED);
    expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
    // Nothing was used up: the whole answer, sent again, adds the device.
    const whole = await t.app.inject({
      method: 'POST',
      url: enrollPath,
      headers: { 'content-type': 'application/pkcs7-signature' },
      payload: answer.body,
    });
    expect(whole.statusCode, whole.body).toBe(301);
  });

  it('answers a stalled agent upload 408 after its own, longer bound and removes the partial file', async () => {
    const lease = await newLease();
    const before = await snapshotDatabase(t.database.db);
    const { socket, answer } = await openRaw(port);
    socket.write(
      `PUT /api/agent/jobs/${lease}/ipa HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${agent.token}\r\n` +
        `Content-Type: application/octet-stream\r\nContent-Length: ${4 * 1024 * 1024}\r\n\r\n`,
    );
    socket.write(Buffer.alloc(256 * 1024, 7));
    // The upload is being received: its partial file is there while the agent is silent.
    while (tmpFiles(t).length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    const res = parseRawAnswer(await answer);
    expect(res.status).toBe(408);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.body).toBe(STALLED);
    expect(tmpFiles(t)).toEqual([]);
    // The job is still the agent's: it may upload again.
    expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
  });

  /** Opens a connection and sends the head of an agent's upload of `length` bytes to `lease`, no byte of it. */
  async function openUpload(lease: string, length: number) {
    const opened = await openRaw(port);
    opened.socket.write(
      `PUT /api/agent/jobs/${lease}/ipa HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${agent.token}\r\n` +
        `Content-Type: application/octet-stream\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n`,
    );
    return opened;
  }

  it('lets an agent upload pause longer than other bodies may', async () => {
    const lease = await newLease();
    const body = Buffer.from('PK not a zip, sent in two parts');
    const { socket, answer } = await openUpload(lease, body.length);
    socket.write(body.subarray(0, 5));
    // Three times the bound of other bodies, well within the uploads' own.
    await new Promise((resolve) => setTimeout(resolve, BODY_IDLE_TIMEOUT_MS * 3));
    socket.write(body.subarray(5));
    const res = parseRawAnswer(await answer);
    // Received whole and checked: refused for what it is, not for its pause.
    expect(res.status, res.body).toBe(422);
  });

  /**
   * Writes `head`, then `trickle` one byte at a time, each well within the idle bound, until the
   * server closes the connection; resolves with what it answered. The client never stops first:
   * without an overall bound this never ends.
   */
  async function trickledRequest(head: string, trickle: Buffer): Promise<RawAnswer> {
    const { socket, answer } = await openRaw(port);
    socket.write(head);
    let closed = false;
    void answer.finally(() => (closed = true));
    for (let i = 0; !closed; i++) {
      await new Promise((resolve) => setTimeout(resolve, BODY_IDLE_TIMEOUT_MS / 3));
      if (!closed && socket.writable)
        socket.write(trickle.subarray(i % trickle.length, (i % trickle.length) + 1));
    }
    return parseRawAnswer(await answer);
  }

  it('answers a body trickled a byte at a time 408 once its overall bound has passed, and signs nobody in', async () => {
    const before = await snapshotDatabase(t.database.db);
    const body = Buffer.from(JSON.stringify({ id: `bodies_${kind}`, pw: 'a'.repeat(32) }).padEnd(4096, ' '));
    const res = await trickledRequest(
      'POST /api/sign-in HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
        `Content-Length: ${body.length}\r\n\r\n`,
      body,
    );
    expect(res.status).toBe(408);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.headers.connection).toBe('close');
    expect(res.body).toBe('The request body took too long to arrive. Send the request again.');
    expect(changedTables(before, await snapshotDatabase(t.database.db))).toEqual({});
  });

  it('closes a request whose headers are trickled a byte at a time, answering 408', async () => {
    const res = await trickledRequest(
      'GET /api/info HTTP/1.1\r\nHost: 127.0.0.1\r\n',
      Buffer.from(
        'X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
      ),
    );
    expect(res.status).toBe(408);
    expect(res.body).toBe('The request took too long to arrive.');
  });

  it('lets an agent upload take longer than the overall bound of other bodies', async () => {
    const lease = await newLease();
    const body = Buffer.from('PK not a zip, sent in parts over a long time');
    const { socket, answer } = await openUpload(lease, body.length);
    // Past BODY_TIMEOUT_MS in all, each pause within the uploads' idle bound.
    const parts = Math.ceil((BODY_TIMEOUT_MS * 1.5) / (AGENT_UPLOAD_IDLE_TIMEOUT_MS / 4));
    const size = Math.ceil(body.length / parts);
    for (let i = 0; i < parts; i++) {
      await new Promise((resolve) => setTimeout(resolve, AGENT_UPLOAD_IDLE_TIMEOUT_MS / 4));
      socket.write(body.subarray(i * size, (i + 1) * size));
    }
    const res = parseRawAnswer(await answer);
    // Received whole and checked: refused for what it is, not for how long it took.
    expect(res.status, res.body).toBe(422);
  });

  it('closes the connection of a request answered before its body came, rather than wait for the rest', async () => {
    // No agent token: refused before the body is read.
    const res = await stalledRequest(
      'PUT /api/agent/jobs/1-1/ipa HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n',
      Buffer.alloc(1024 * 1024),
      1024,
    );
    expect(res.status).toBe(401);
    expect(res.headers.connection).toBe('close');
  });
});
