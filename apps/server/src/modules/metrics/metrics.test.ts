import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItunesServer } from '../../dev/itunes-server.js';
import {
  buildIpa,
  makeAgent,
  makePremium,
  storeApp,
  storeWith,
  type AgentClient,
} from '../../test/decrypt-support.js';
import { deviceInfo, enrollDevice, payForDevice } from '../../test/device-flow.js';
import { createTestApp, databaseKinds, signedInUser, WEB_CLIENT, type TestApp } from '../../test/harness.js';
import { hasPromtool, promtoolCheck, sampleValue } from '../../test/promtool.js';
import { METRICS_FORWARDED, METRICS_LOOPBACK_ONLY, METRICS_TOKEN_NEEDED } from './access.js';
import { STATE_CACHE_MS } from './service.js';

const TOKEN = 'metrics-token-0123456789abcdef';
/** What Prometheus sends when it scrapes: no cookie, no Origin, no Sec-Fetch-* headers. */
const PROMETHEUS = {
  accept: 'application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.1',
  'user-agent': 'Prometheus/2.53.0',
};

describe.each(databaseKinds)('GET /metrics on %s', (kind) => {
  let store: ItunesServer;
  let t: TestApp;
  let now = Date.now();
  let user: string;
  let agent: AgentClient;
  const app = (n: number) => 8100 + n;

  beforeAll(async () => {
    store = await storeWith(Array.from({ length: 8 }, (_, i) => storeApp(app(i), `com.example.metrics${i}`)));
    t = await createTestApp(kind, {
      env: {
        ITUNES_BASE_URL: store.url,
        SIGN_IN_LIMIT_PER_ADDRESS: '10000',
        FREE_DAILY_LIMIT: '50',
        DECRYPT_LEASE_SECONDS: '30',
        LIST_CACHE_MS: '0',
      },
      clock: () => new Date(now),
    });
    user = await signedInUser(t, `metrics_user_${kind}`);
    agent = await makeAgent(t, await signedInUser(t, `metrics_admin_${kind}`, 1));
  });
  afterAll(async () => {
    await t?.close();
    await store?.close();
  });

  const scrape = async () => {
    const res = await t.app.inject({ url: '/metrics', headers: PROMETHEUS });
    expect(res.statusCode, res.body).toBe(200);
    return res.body;
  };
  /** Requests a decrypt of app `n` and returns the job an agent claims for it. */
  async function claimed(n: number, cookie = user) {
    expect(
      (await t.app.inject({ url: `/api/decrypt/KR/${app(n)}`, headers: { cookie, ...WEB_CLIENT } })).json(),
    ).toMatchObject({ status: 'Pending' });
    const { job } = await agent.claim();
    expect(job?.app_id).toBe(String(app(n)));
    return job!;
  }
  async function upload(n: number, jobId: string) {
    const ipa = readFileSync(
      await buildIpa({ bundleId: `com.example.metrics${n}`, version: '1.0', appVerId: String(870000 + n) }),
    );
    const res = await agent.call('PUT', `/api/agent/jobs/${jobId}/ipa?app_ver_id=${870000 + n}`, ipa);
    expect(res.statusCode, res.body).toBe(200);
    return ipa.length;
  }

  it(
    'counts decrypt jobs claimed, done, failed and expired, signs by mode and registrations, as they happen',
    { timeout: 180_000 },
    async () => {
      const before = await scrape();
      const delta = (after: string, name: string, labels: Record<string, string>) =>
        (sampleValue(after, name, labels) ?? 0) - (sampleValue(before, name, labels) ?? 0);

      await upload(0, (await claimed(0)).id);
      const failing = await claimed(1);
      expect(
        (
          await agent.call('POST', `/api/agent/jobs/${failing.id}/fail`, { reason: 'the command failed' })
        ).json(),
      ).toEqual({ status: 'Pending' });
      // Claimed again, then the agent goes quiet past its lease.
      expect((await agent.claim()).job?.app_id).toBe(String(app(1)));
      now += 31_000;
      expect(await t.services.jobs.sweepExpiredLeases()).toBe(1);

      // A device, registered by the dev identity after its payment; then a sign in mode 0 (normal).
      await enrollDevice(t, user, { UDID: '00008110-000000000000AB01', PRODUCT: 'iPhone15,2' });
      await payForDevice(t, user, 0);
      await expect
        .poll(async () => (await deviceInfo(t, user))[0]?.status, { timeout: 120_000, interval: 100 })
        .toBe('Registered');
      const sign = await t.app.inject({
        method: 'PUT',
        url: `/api/sign/${app(0)}/870000`,
        payload: { type: 0 },
        headers: { cookie: user, ...WEB_CLIENT },
      });
      expect(sign.json()).toMatchObject({ status: 'Pending' });
      await expect
        .poll(
          async () =>
            (await t.app.inject({ url: `/api/check/sign/${app(0)}/870000/0`, headers: { cookie: user } }))
              .statusCode,
          { timeout: 120_000, interval: 100 },
        )
        .toBe(200);

      now += STATE_CACHE_MS;
      const after = await scrape();
      expect(delta(after, 'sideport_jobs_claimed_total', { queue: 'decrypt' })).toBe(3);
      expect(delta(after, 'sideport_jobs_done_total', { queue: 'decrypt' })).toBe(1);
      expect(delta(after, 'sideport_jobs_failed_total', { queue: 'decrypt' })).toBe(1);
      expect(delta(after, 'sideport_jobs_lease_expired_total', { queue: 'decrypt' })).toBe(1);
      expect(delta(after, 'sideport_decrypt_duration_seconds_count', { lane: 'free' })).toBe(1);
      expect(delta(after, 'sideport_decrypt_duration_seconds_count', { lane: 'premium' })).toBe(0);
      expect(delta(after, 'sideport_jobs_claimed_total', { queue: 'sign' })).toBe(1);
      expect(delta(after, 'sideport_jobs_done_total', { queue: 'sign' })).toBe(1);
      expect(delta(after, 'sideport_sign_duration_seconds_count', { mode: '0' })).toBe(1);
      expect(delta(after, 'sideport_sign_duration_seconds_count', { mode: '4' })).toBe(0);
      expect(delta(after, 'sideport_device_registrations_total', { outcome: 'registered' })).toBe(1);
      // The expired job went back to the queue: it waits in the free lane.
      expect(
        sampleValue(after, 'sideport_queue_depth', { queue: 'decrypt', status: 'queued', lane: 'free' }),
      ).toBe(1);
    },
  );

  it(
    'reads queue depth by status and lane, agents online and stored bytes from the database, at most once per 5 s',
    { timeout: 120_000 },
    async () => {
      const premium = await signedInUser(t, `metrics_premium_${kind}`);
      await makePremium(t, premium);
      now += STATE_CACHE_MS;
      const before = await scrape();
      const delta = (after: string, name: string, labels: Record<string, string>) =>
        (sampleValue(after, name, labels) ?? 0) - (sampleValue(before, name, labels) ?? 0);

      // Two free requests and a premium one; the agent takes the premium one first and uploads it.
      for (const n of [2, 3])
        await t.app.inject({ url: `/api/decrypt/KR/${app(n)}`, headers: { cookie: user, ...WEB_CLIENT } });
      const job = await claimed(4, premium);
      const depth = { queue: 'decrypt', status: 'queued', lane: 'free' };
      // Within the cache period a scrape answers what was read before, without asking the database.
      expect(sampleValue(await scrape(), 'sideport_queue_depth', depth)).toBe(
        sampleValue(before, 'sideport_queue_depth', depth),
      );
      now += STATE_CACHE_MS;
      const during = await scrape();
      expect(delta(during, 'sideport_queue_depth', depth)).toBe(2);
      expect(
        sampleValue(during, 'sideport_queue_depth', { queue: 'decrypt', status: 'leased', lane: 'premium' }),
      ).toBe(1);
      expect(
        sampleValue(during, 'sideport_queue_depth', { queue: 'sign', status: 'queued', lane: 'all' }),
      ).toBe(0);
      expect(sampleValue(during, 'sideport_agents_online')).toBe(1);
      expect(sampleValue(during, 'sideport_database_up')).toBe(1);

      const bytes = await upload(4, job.id);
      now += STATE_CACHE_MS;
      const after = await scrape();
      expect(delta(after, 'sideport_storage_bytes', { kind: 'decrypted' })).toBe(bytes);
      expect(
        sampleValue(after, 'sideport_queue_depth', { queue: 'decrypt', status: 'leased', lane: 'premium' }),
      ).toBe(0);
      expect(delta(after, 'sideport_decrypt_duration_seconds_count', { lane: 'premium' })).toBe(1);
      // An agent quiet for longer than a minute (and the lease) is no longer online.
      now += 61_000;
      expect(sampleValue(await scrape(), 'sideport_agents_online')).toBe(0);
    },
  );

  it('labels request latency with the route pattern, never the address asked', async () => {
    const secret = 'deadbeef0123456789';
    await t.app.inject({ url: `/files/ipa/${app(0)}/870000?expires=1&sig=${secret}` });
    await t.app.inject({ url: `/api/latest/0?anchor=${secret}` });
    await t.app.inject({ url: `/api/no-such-${secret}` });
    const body = await scrape();
    expect(body).not.toContain(secret);
    expect(body).not.toContain(`${app(0)}/870000`);
    const counted = body
      .split('\n')
      .filter((line) => line.startsWith('sideport_http_request_duration_seconds_count'));
    for (const series of [
      '{method="GET",route="/files/ipa/:app_id/:app_ver_id",status_code="403"}',
      '{method="GET",route="/api/latest/:page",status_code="400"}',
      '{method="GET",route="unmatched",status_code="404"}',
    ]) {
      expect(
        counted.some((line) => line.startsWith(`sideport_http_request_duration_seconds_count${series} `)),
        `${series} in\n${counted.join('\n')}`,
      ).toBe(true);
    }
  });

  it.skipIf(!hasPromtool)('is accepted by promtool check metrics', async () => {
    await t.app.inject({ url: '/api/latest/0' });
    const { ok, output } = promtoolCheck(await scrape());
    expect(output).toBe('');
    expect(ok).toBe(true);
  });
});

describe('who may read GET /metrics', () => {
  let open: TestApp;
  let guarded: TestApp;
  beforeAll(async () => {
    // Both with the web app built, whose fallback answers every other GET with its page; behind a proxy.
    open = await createTestApp('pglite', { web: true, env: { TRUST_PROXY: 'true' } });
    guarded = await createTestApp('pglite', { web: true, env: { METRICS_TOKEN: TOKEN } });
  });
  afterAll(async () => {
    await open?.close();
    await guarded?.close();
  });

  it('without METRICS_TOKEN answers this machine only, judged by the socket, not X-Forwarded-For', async () => {
    for (const remoteAddress of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) {
      const res = await open.app.inject({ url: '/metrics', headers: PROMETHEUS, remoteAddress });
      expect(res.statusCode, remoteAddress).toBe(200);
      expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
      expect(res.body).toMatch(/^# HELP /);
    }
    for (const headers of [{}, { 'x-forwarded-for': '127.0.0.1' }, { authorization: `Bearer ${TOKEN}` }]) {
      const res = await open.app.inject({
        url: '/metrics',
        headers: { ...PROMETHEUS, ...headers },
        remoteAddress: '203.0.113.9',
      });
      expect([res.statusCode, res.headers['content-type'], res.body]).toEqual([
        403,
        'text/plain; charset=utf-8',
        METRICS_LOOPBACK_ONLY,
      ]);
    }
  });

  it('without METRICS_TOKEN refuses a client elsewhere that a proxy on this machine forwards', async () => {
    // nginx's $proxy_add_x_forwarded_for, Caddy's X-Forwarded-For, RFC 7239's Forwarded, X-Real-IP:
    // the connection is the proxy's (loopback), the header names the remote client.
    for (const headers of [
      { 'x-forwarded-for': '203.0.113.9' },
      { 'x-forwarded-for': '127.0.0.1, 203.0.113.9' },
      { 'x-forwarded-for': '203.0.113.9, 127.0.0.1' },
      { forwarded: 'for=203.0.113.9;proto=https' },
      { forwarded: 'for="[2001:db8::1]:4711"' },
      { forwarded: 'for=unknown' },
      { 'x-real-ip': '2001:db8::7' },
    ]) {
      const res = await open.app.inject({
        url: '/metrics',
        headers: { ...PROMETHEUS, ...headers },
        remoteAddress: '127.0.0.1',
      });
      expect([res.statusCode, res.headers['content-type'], res.body], JSON.stringify(headers)).toEqual([
        403,
        'text/plain; charset=utf-8',
        METRICS_FORWARDED,
      ]);
    }
    // A scraper on this machine, through the same proxy or not, is still answered.
    for (const headers of [
      {},
      { 'x-forwarded-for': '127.0.0.1' },
      { forwarded: 'for="[::1]:9090"', 'x-real-ip': '127.0.0.1' },
    ]) {
      const res = await open.app.inject({
        url: '/metrics',
        headers: { ...PROMETHEUS, ...headers },
        remoteAddress: '127.0.0.1',
      });
      expect(res.statusCode, JSON.stringify(headers)).toBe(200);
    }
    // With the token, the header changes nothing: the token is the proof.
    const res = await guarded.app.inject({
      url: '/metrics',
      headers: { ...PROMETHEUS, 'x-forwarded-for': '203.0.113.9', authorization: `Bearer ${TOKEN}` },
      remoteAddress: '127.0.0.1',
    });
    expect(res.statusCode).toBe(200);
  });

  it('with METRICS_TOKEN asks every caller for it, this machine included', async () => {
    for (const remoteAddress of ['127.0.0.1', '203.0.113.9']) {
      for (const authorization of [
        undefined,
        'Bearer wrong-token-0123456789abcdef',
        `Bearer ${TOKEN}x`,
        TOKEN,
        `Basic ${TOKEN}`,
      ]) {
        const res = await guarded.app.inject({
          url: '/metrics',
          headers: { ...PROMETHEUS, ...(authorization ? { authorization } : {}) },
          remoteAddress,
        });
        expect([res.statusCode, res.body], `${remoteAddress} ${authorization}`).toEqual([
          401,
          METRICS_TOKEN_NEEDED,
        ]);
        expect(res.headers['www-authenticate']).toBe('Bearer realm="metrics"');
      }
      const res = await guarded.app.inject({
        url: '/metrics',
        headers: { ...PROMETHEUS, authorization: `Bearer ${TOKEN}` },
        remoteAddress,
      });
      expect(res.statusCode).toBe(200);
      expect(res.body).toContain('# TYPE sideport_jobs_claimed_total counter');
      expect(res.body).toContain('# TYPE process_cpu_seconds_total counter');
    }
  });

  it("is a route of its own: not the web app's page, not refused as cross-site, and in the OpenAPI document", async () => {
    const fromBrowser = await open.app.inject({
      url: '/metrics',
      headers: { 'sec-fetch-site': 'cross-site', origin: 'https://elsewhere.example' },
    });
    expect(fromBrowser.statusCode).toBe(200);
    expect(fromBrowser.body).not.toContain('<div id="root">');
    const openapi = (await open.app.inject({ url: '/api/openapi.json' })).json() as {
      paths: Record<string, { get?: { security?: unknown } }>;
      components: { securitySchemes: Record<string, unknown> };
    };
    expect(openapi.paths['/metrics']?.get?.security).toEqual([{ metricsToken: [] }]);
    expect(openapi.components.securitySchemes.metricsToken).toMatchObject({ type: 'http', scheme: 'bearer' });
  });
});
