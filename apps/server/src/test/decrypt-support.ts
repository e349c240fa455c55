import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { makeSampleIpa, type SampleIpaOptions } from '../dev/sample-ipa.js';
import { startItunesServer, type ItunesServer } from '../dev/itunes-server.js';
import { fixturesDir, signedInUser, WEB_CLIENT, type TestApp } from './harness.js';

/** A real store record (Facebook, from fastlane's recorded lookup), to derive others from. */
export const facebookRecord = (
  JSON.parse(readFileSync(path.join(fixturesDir, 'itunes/fastlane_itunesLookup-284882215.json'), 'utf8')) as {
    results: Array<Record<string, unknown>>;
  }
).results[0]!;

export const storeApp = (trackId: number, bundleId: string, changes: Record<string, unknown> = {}) => ({
  ...facebookRecord,
  trackId,
  bundleId,
  trackName: `App ${trackId}`,
  version: '1.0',
  price: 0,
  ...changes,
});

/** A local iTunes wire-format server knowing the given apps. */
export function storeWith(records: Array<Record<string, unknown>>): Promise<ItunesServer> {
  return startItunesServer({ records });
}

// Made on first use, under the run's temporary folder, which the test setup removes (global-setup.ts).
let ipaDir: string | undefined;
let ipaCount = 0;

/** A real decrypted (or, with cryptid 1, encrypted) IPA of the sample app relabelled as asked. */
export async function buildIpa(options: Omit<SampleIpaOptions, 'output'>): Promise<string> {
  ipaDir ??= mkdtempSync(path.join(tmpdir(), 'sideport-test-ipas-'));
  const output = path.join(ipaDir, `app-${++ipaCount}.ipa`);
  await makeSampleIpa({ ...options, output });
  return output;
}

export interface AgentClient {
  token: string;
  id: string;
  claim(
    body?: object,
  ): Promise<{ statusCode: number; job: { id: string; [k: string]: unknown } | null; body: string }>;
  call(
    method: 'POST' | 'PUT',
    url: string,
    payload?: object | Buffer,
    extra?: Record<string, string>,
  ): Promise<LightMyRequestResponse>;
}

/** An agent made through the admin API, and calls of its protocol through the real server. */
export async function makeAgent(
  t: Pick<TestApp, 'app'>,
  adminCookie: string,
  name = 'mac-mini',
): Promise<AgentClient> {
  const made = await t.app.inject({
    method: 'POST',
    url: '/api/admin/agents',
    headers: { cookie: adminCookie, ...WEB_CLIENT },
    payload: { name },
  });
  if (made.statusCode !== 200) throw new Error(`agent creation failed: ${made.statusCode} ${made.body}`);
  const { token, id } = made.json() as { token: string; id: string };
  const call: AgentClient['call'] = (method, url, payload, extra = {}) =>
    t.app.inject({
      method,
      url,
      headers: {
        authorization: `Bearer ${token}`,
        ...(Buffer.isBuffer(payload) ? { 'content-type': 'application/octet-stream' } : {}),
        ...extra,
      },
      ...(payload !== undefined ? { payload } : {}),
    });
  return {
    token,
    id,
    call,
    async claim(body = {}) {
      const res = await call('POST', '/api/agent/claim', body);
      return {
        statusCode: res.statusCode,
        body: res.body,
        job: res.statusCode === 200 ? (res.json() as { job: never }).job : null,
      };
    },
  };
}

export async function signedInAdmin(t: Pick<TestApp, 'app' | 'services'>, id: string) {
  return signedInUser(t, id, 1);
}

/** Makes a user premium the way a payment does (the test-mode checkout, paid). */
export async function makePremium(t: Pick<TestApp, 'app'>, cookie: string, plan = 0) {
  const start = await t.app.inject({ url: `/api/pay/service/${plan}`, headers: { cookie, ...WEB_CLIENT } });
  const url = new URL((start.json() as { url: string }).url);
  const id = url.pathname.split('/').pop()!;
  const paid = await t.app.inject({
    method: 'POST',
    url: `/billing/dev-checkout/${id}/pay`,
    headers: { cookie, 'sec-fetch-site': 'same-origin' },
  });
  if (paid.statusCode >= 400) throw new Error(`payment failed: ${paid.statusCode} ${paid.body}`);
}
