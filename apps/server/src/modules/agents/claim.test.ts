import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { makeAgent, signedInAdmin, storeApp, storeWith } from '../../test/decrypt-support.js';
import { databaseKinds, signedInUser, WEB_CLIENT } from '../../test/harness.js';
import { startLiveServer, type LiveServer } from '../../test/live-server.js';

/** The long-polling claim over a real connection: what happens when either side goes away. */
describe.each(databaseKinds)('waiting claims on %s', (kind) => {
  let store: ItunesServer;
  let live: LiveServer;
  let token: string;
  let user: string;

  beforeAll(async () => {
    store = await storeWith([storeApp(6501, 'com.example.claim1'), storeApp(6502, 'com.example.claim2')]);
    live = await startLiveServer(kind, { ITUNES_BASE_URL: store.url, FREE_DAILY_LIMIT: '10' });
    token = (await makeAgent(live, await signedInAdmin(live, `claim_admin_${kind}`))).token;
    user = await signedInUser(live, `claim_user_${kind}`);
  });
  afterAll(async () => {
    await live.close();
    await store.close();
  });

  const claim = (waitSeconds: number, signal?: AbortSignal) =>
    fetch(`${live.url}/api/agent/claim`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ wait_seconds: waitSeconds }),
      ...(signal ? { signal } : {}),
    });

  it('hands no job to an agent that went away while it waited', async () => {
    const gone = new AbortController();
    const abandoned = claim(30, gone.signal).catch(() => undefined);
    // Give the claim time to reach the server and start waiting, then drop the connection.
    await new Promise((resolve) => setTimeout(resolve, 500));
    gone.abort();
    await abandoned;

    const asked = await live.app.inject({
      url: '/api/decrypt/KR/6501',
      headers: { cookie: user, ...WEB_CLIENT },
    });
    expect(asked.statusCode).toBe(200);
    // Were the abandoned claim still waiting, the queued job would wake it and be leased to nobody.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const next = await claim(5);
    expect(await next.json()).toMatchObject({ job: { app_id: '6501', attempt: 1 } });
  });

  it('answers a waiting claim with no job at once when the server shuts down', async () => {
    const waiting = claim(30);
    await new Promise((resolve) => setTimeout(resolve, 500));
    await live.stop();
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ job: null });
    await live.start();
  }, 180_000);
});
