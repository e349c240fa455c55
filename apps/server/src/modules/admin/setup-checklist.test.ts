import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import type { SetupChecklist } from '@sideport/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { SAMPLE_SOURCE_IPA } from '../../dev/sample-ipa.js';
import { until } from '../../test/agent-process.js';
import { makeAgent, storeApp, storeWith } from '../../test/decrypt-support.js';
import { createTestApp, signedInUser, type TestApp } from '../../test/harness.js';
import { STRIPE_ENV } from '../../test/route-suite.js';

const SAME_ORIGIN = { 'sec-fetch-site': 'same-origin' };

/** Every setting the checklist names, set: Apple, Stripe, S3, https, Feather. */
const EVERYTHING_SET = {
  ASC_KEY_ID: 'CHECK12345',
  ASC_ISSUER_ID: '69a6de70-03db-47e3-e053-5b8c7c11a4d1',
  ASC_PRIVATE_KEY: generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString(),
  // Nothing listens on these: the checklist reads the settings and asks neither.
  ASC_BASE_URL: 'http://127.0.0.1:9',
  ...STRIPE_ENV,
  STORAGE_URL: 's3://checklist-bucket?endpoint=http://127.0.0.1:9&region=us-east-1&forcePathStyle=true',
  PUBLIC_URL: 'https://sideport.example',
  FEATHER_IPA: SAMPLE_SOURCE_IPA,
};

describe('the setup checklist and the identity CA', () => {
  let store: ItunesServer;
  /** The embedded default with a reachable store, and the same with every setting made. */
  let fresh: TestApp;
  let configured: TestApp;
  beforeAll(async () => {
    store = await storeWith([storeApp(284882215, 'com.facebook.Facebook')]);
    fresh = await createTestApp('pglite', { env: { ITUNES_BASE_URL: store.url } });
    configured = await createTestApp('pglite', { env: { ITUNES_BASE_URL: store.url, ...EVERYTHING_SET } });
  }, 180_000);
  afterAll(async () => {
    await fresh?.close();
    await configured?.close();
    await store.close();
  });

  async function checklistOf(t: TestApp, cookie: string) {
    const res = await t.app.inject({ url: '/api/admin/setup', headers: { cookie, ...SAME_ORIGIN } });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as SetupChecklist;
  }
  const states = (items: SetupChecklist) => Object.fromEntries(items.map((item) => [item.key, item.state]));
  const item = (items: SetupChecklist, key: string) => items.find((i) => i.key === key)!;

  it('on a fresh start, says what is missing and the one setting or command that completes each', async () => {
    const t = fresh;
    const items = await checklistOf(t, await signedInUser(t, 'admin', 1));
    expect(states(items)).toEqual({
      parts: 'done',
      store: 'done',
      agent: 'todo',
      identity: 'todo',
      billing: 'todo',
      storage: 'optional',
      public_url: 'todo',
      feather: 'optional',
    });
    expect(item(items, 'agent').detail).toBe(
      'No agent online (none seen yet): decrypt requests wait in the queue as Enqueued... until one claims them.',
    );
    expect(item(items, 'agent').action).toContain('npx sideport agent:create <name>');
    expect(item(items, 'identity').action).toContain('ASC_KEY_ID, ASC_ISSUER_ID and ASC_PRIVATE_KEY');
    expect(item(items, 'billing').action).toContain('STRIPE_SECRET_KEY');
    expect(item(items, 'storage').action).toContain('STORAGE_URL=s3://');
    expect(item(items, 'public_url').action).toBe(
      'Set PUBLIC_URL=https://<your site> (behind a reverse proxy with a real certificate).',
    );
    expect(item(items, 'feather').action).toContain('FEATHER_IPA');
    expect(item(items, 'store').action).toBeNull();

    // Everyone can tell that no agent is online: the public configuration says so.
    const config = await t.app.inject({ url: '/api/config' });
    expect(config.json()).toMatchObject({ agentsOnline: 0, agentLastSeenAt: null });
  });

  it('marks each step done once its setting is made and an agent has been seen', async () => {
    const t = configured;
    const admin = await signedInUser(t, 'admin', 1);
    const agent = await makeAgent(t, admin);
    expect((await agent.claim({ wait_seconds: 0 })).statusCode).toBe(200);
    const seen = await until('the agent to be seen', async () => {
      const config = (await t.app.inject({ url: '/api/config' })).json() as {
        agentsOnline: number;
        agentLastSeenAt: string | null;
      };
      return config.agentsOnline === 1 ? config : undefined;
    });
    expect(new Date(seen.agentLastSeenAt!).getTime()).toBeGreaterThan(Date.now() - 60_000);

    const items = await checklistOf(t, admin);
    expect(states(items)).toEqual({
      parts: 'done',
      store: 'done',
      agent: 'done',
      identity: 'done',
      billing: 'done',
      storage: 'done',
      public_url: 'done',
      feather: 'done',
    });
    expect(items.every((i) => i.action === null)).toBe(true);
    expect(item(items, 'agent').detail).toBe(`1 online, last seen ${seen.agentLastSeenAt}.`);
    expect(item(items, 'storage').detail).toContain('checklist-bucket');
  });

  it('says when the store does not answer', { timeout: 120_000 }, async () => {
    const t = await createTestApp('pglite', {
      env: { ITUNES_BASE_URL: 'http://127.0.0.1:9', ITUNES_TIMEOUT_MS: '2000' },
    });
    try {
      const items = await checklistOf(t, await signedInUser(t, 'admin', 1));
      expect(item(items, 'store')).toMatchObject({ state: 'todo' });
      expect(item(items, 'store').detail).toMatch(/^http:\/\/127\.0\.0\.1:9: /);
      expect(item(items, 'store').action).toContain('ITUNES_BASE_URL');
      // A person's search meets the store down: 503 with a sentence, and the checklist names the part.
      const user = await signedInUser(t, 'searcher');
      const search = await t.app.inject({
        url: '/api/search/KR/facebook',
        headers: { cookie: user, ...SAME_ORIGIN },
      });
      expect([search.statusCode, search.headers['retry-after']]).toEqual([503, '30']);
      const after = await checklistOf(t, await signedInUser(t, 'admin2', 1));
      expect(item(after, 'parts').state).toBe('todo');
      expect(item(after, 'parts').detail).toMatch(
        /^The App Store catalogue is failing since \d{4}-\d\d-\d\dT[\d:.]+Z \(.+\)\.$/,
      );
    } finally {
      await t.close();
    }
  });

  it("downloads the dev identity's CA from the admin identity page as PEM", async () => {
    const t = fresh;
    const admin = await signedInUser(t, 'ca-admin', 1);
    const res = await t.app.inject({
      url: '/api/admin/identity/ca.pem',
      headers: { cookie: admin, ...SAME_ORIGIN },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/x-pem-file');
    expect(res.headers['content-disposition']).toContain('sideport-dev-ca.pem');
    const ca = new X509Certificate(res.body);
    expect(ca.ca).toBe(true);
    expect(ca.subject).toContain('CN=Sideport Dev (not Apple) CA');
    const identity = (
      await t.app.inject({ url: '/api/admin/identity', headers: { cookie: admin } })
    ).json() as {
      certificate_name: string;
    };
    expect(identity.certificate_name).toContain('Sideport Dev (not Apple)');
    const user = await signedInUser(t, 'someone');
    expect(
      (await t.app.inject({ url: '/api/admin/identity/ca.pem', headers: { cookie: user } })).statusCode,
    ).toBe(403);
  });

  it('offers no CA with an Apple developer account', async () => {
    const t = configured;
    const admin = await signedInUser(t, 'ca-admin', 1);
    const res = await t.app.inject({ url: '/api/admin/identity/ca.pem', headers: { cookie: admin } });
    expect(res.statusCode).toBe(404);
    expect(res.body).toBe(
      "Apple's certificates sign here: their CA is Apple's own, not one of this server's.",
    );
  });
});
