import { createHash } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { makeSampleIpa } from '../../apps/server/src/dev/sample-ipa.js';
import { TEST_PASSWORD, type RunningServer } from './harness.js';

/**
 * The server's HTTP API as the tests' other actors use it: people signing up or paying outside the
 * browser under test, and a decrypt agent working jobs with its bearer token.
 */
export interface Caller {
  call(method: string, path: string, body?: unknown): Promise<Response>;
  json<T>(method: string, path: string, body?: unknown): Promise<T>;
}

/** A signed-in person's calls: the session cookie, and the site's own Origin (cross-site calls are refused). */
export function caller(server: RunningServer, cookie: string): Caller {
  const call = (method: string, urlPath: string, body?: unknown) =>
    fetch(`${server.url}${urlPath}`, {
      method,
      redirect: 'manual',
      headers: {
        cookie,
        origin: server.url,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  return {
    call,
    async json<T>(method: string, urlPath: string, body?: unknown) {
      const res = await call(method, urlPath, body);
      if (!res.ok) throw new Error(`${method} ${urlPath}: ${res.status} ${await res.text()}`);
      return (await res.json()) as T;
    },
  };
}

/** Signs up (or in, with `signIn`) over the API and answers the session cookie. */
export async function sessionCookie(
  server: RunningServer,
  id: string,
  options: { password?: string; signIn?: boolean } = {},
) {
  const pw = createHash('md5')
    .update(options.password ?? TEST_PASSWORD)
    .digest('hex');
  const res = await fetch(`${server.url}/api/${options.signIn ? 'sign-in' : 'sign-up'}`, {
    method: 'POST',
    headers: { origin: server.url, 'content-type': 'application/json' },
    body: JSON.stringify({ id, pw }),
  });
  if (!res.ok) throw new Error(`sign-up of ${id}: ${res.status} ${await res.text()}`);
  return res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
}

/** Buys plan 0 on the test-mode checkout, as the Pay button there does. */
export async function makePremium(server: RunningServer, cookie: string) {
  const person = caller(server, cookie);
  const { url } = await person.json<{ url: string }>('GET', '/api/pay/service/0');
  const id = new URL(url).pathname.split('/').pop()!;
  const paid = await person.call('POST', `/billing/dev-checkout/${id}/pay`);
  if (paid.status >= 400) throw new Error(`payment failed: ${paid.status} ${await paid.text()}`);
}

export interface AgentJob {
  id: string;
  kind: 'decrypt' | 'versions';
  app_id: string;
  app_ver_id: string | null;
}

/** A decrypt agent speaking the protocol under /api/agent/ with its token. */
export function agentClient(server: RunningServer, token: string) {
  const call = (method: string, urlPath: string, body?: unknown, type = 'application/json') =>
    fetch(`${server.url}${urlPath}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': type }) },
      body:
        body === undefined ? undefined : Buffer.isBuffer(body) ? new Uint8Array(body) : JSON.stringify(body),
    });
  const ok = async (res: Response) => {
    if (!res.ok) throw new Error(`agent call: ${res.status} ${await res.text()}`);
    return res;
  };
  return {
    call,
    /** Long-polls up to `waitSeconds` for the next job of these kinds. */
    async claim(kinds: Array<AgentJob['kind']> = ['decrypt'], waitSeconds = 5): Promise<AgentJob | null> {
      const res = await ok(await call('POST', '/api/agent/claim', { kinds, wait_seconds: waitSeconds }));
      return ((await res.json()) as { job: AgentJob | null }).job;
    },
    heartbeat: async (job: AgentJob, report: { status?: string; progress?: number }) =>
      ok(await call('POST', `/api/agent/jobs/${job.id}/heartbeat`, report)),
    /** `stopped`: the agent hands the job back as it stops (a lost lease, not a failed attempt). */
    fail: async (job: AgentJob, reason: string, how: { stopped?: boolean } = {}) =>
      ok(await call('POST', `/api/agent/jobs/${job.id}/fail`, { reason, ...how })),
    versions: async (job: AgentJob, versions: Array<{ app_ver_id: number; version: string }>) =>
      ok(await call('POST', `/api/agent/jobs/${job.id}/versions`, { versions })),
    /** Uploads a real decrypted IPA: the repository's sample app relabelled as the requested one. */
    async upload(job: AgentJob, ipa: { bundleId: string; version: string; appVerId: string }) {
      const output = path.join(mkdtempSync(path.join(tmpdir(), 'sideport-e2e-ipa-')), 'app.ipa');
      await makeSampleIpa({ output, bundleId: ipa.bundleId, version: ipa.version });
      const body = await readFile(output);
      await rm(path.dirname(output), { recursive: true, force: true });
      return ok(
        await call(
          'PUT',
          `/api/agent/jobs/${job.id}/ipa?app_ver_id=${ipa.appVerId}`,
          body,
          'application/octet-stream',
        ),
      );
    },
  };
}
export type AgentClient = ReturnType<typeof agentClient>;

/** An agent made by an admin over the API; its token is in this answer only. */
export async function createAgent(server: RunningServer, adminCookie: string, name: string) {
  return caller(server, adminCookie).json<{ id: string; name: string; token: string }>(
    'POST',
    '/api/admin/agents',
    { name },
  );
}

/** An iTunes store record (Apple's field names) for the local store server. */
export const storeRecord = (trackId: number, trackName: string, bundleId: string, version = '1.0') => ({
  wrapperType: 'software',
  kind: 'software',
  trackId,
  trackName,
  artistName: 'Example Developer',
  version,
  artworkUrl512: 'https://is1-ssl.mzstatic.com/a.jpg',
  trackViewUrl: `https://apps.apple.com/app/id${trackId}`,
  averageUserRating: 4,
  userRatingCount: 10,
  bundleId,
  minimumOsVersion: '14.0',
  fileSizeBytes: '10485760',
  price: 0,
});
