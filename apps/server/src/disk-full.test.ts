import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItunesServer } from './dev/itunes-server.js';
import { buildIpa, makeAgent, storeApp, storeWith, type AgentClient } from './test/decrypt-support.js';
import { createTestApp, signedInUser, WEB_CLIENT, type TestApp } from './test/harness.js';

/** A small tmpfs of the test's own, where the machine lets it mount one (root in a container that allows it). */
function mountSmallDisk(sizeMb: number): string | undefined {
  const dir = mkdtempSync(path.join(tmpdir(), 'sideport-small-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m,mode=0700`, 'tmpfs', dir], {
      stdio: 'ignore',
    });
    return dir;
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
}

const smallDisk = mountSmallDisk(48);

/**
 * The data disk full (docs/architecture.md, When a part fails): DATA_DIR on a 48 MB tmpfs, filled
 * by a file of the test's. An agent's upload is refused 503 before a byte is written, naming the
 * space it needs; the agent keeps its job; once room is made the same upload is accepted.
 */
describe.skipIf(smallDisk === undefined)('a full data disk', () => {
  const dataDir = path.join(smallDisk ?? '', 'data');
  const filler = path.join(smallDisk ?? '', 'filler');
  let store: ItunesServer;
  let t: TestApp;
  let user: string;
  let agent: AgentClient;

  beforeAll(async () => {
    store = await storeWith([storeApp(8801, 'com.example.fulldisk', { version: '3.0' })]);
    t = await createTestApp('pglite', {
      env: {
        DATA_DIR: dataDir,
        ITUNES_BASE_URL: store.url,
        DISK_MIN_FREE_MB: '8',
        SIGN_IN_LIMIT_PER_ADDRESS: '10000',
      },
    });
    user = await signedInUser(t, 'disk_user');
    agent = await makeAgent(t, await signedInUser(t, 'disk_admin', 1));
  });
  afterAll(async () => {
    await t?.close();
    await store?.close();
    if (smallDisk) {
      execFileSync('umount', [smallDisk]);
      rmSync(smallDisk, { recursive: true, force: true });
    }
  });

  it('refuses an upload before writing, with the space it needs, and accepts it once there is room', async () => {
    expect(
      (await t.app.inject({ url: '/api/decrypt/KR/8801', headers: { ...WEB_CLIENT, cookie: user } }))
        .statusCode,
    ).toBe(200);
    const { job } = await agent.claim({ wait_seconds: 5 });
    expect(job?.app_id).toBe('8801');
    const ipa = readFileSync(
      await buildIpa({ bundleId: 'com.example.fulldisk', version: '3.0', appVerId: '880100' }),
    );

    // Fill the disk to 4 MB from full: under the 8 MB kept free.
    const { bavail, bsize } = await statfs(smallDisk!);
    writeFileSync(filler, Buffer.alloc(bavail * bsize - 4 * 1024 * 1024));
    const upload = () => agent.call('PUT', `/api/agent/jobs/${job!.id}/ipa?app_ver_id=880100`, ipa);
    const refused = await upload();
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toBe('300');
    expect(refused.body).toMatch(
      /^The server's disk is too full for this \([\d.]+ MB needed, [\d.]+ MB free\)\. Please retry later; the operator has been told\.$/,
    );
    // Nothing was written, and the job is still the agent's: its attempt is not counted.
    const tmp = path.join(dataDir, 'tmp');
    expect(existsSync(tmp) ? readdirSync(tmp) : []).toEqual([]);
    expect((await agent.call('POST', `/api/agent/jobs/${job!.id}/heartbeat`, {})).statusCode).toBe(200);
    expect(await t.services.metrics.render()).toMatch(
      /sideport_dependency_faults_total\{part="disk"\} [1-9]/,
    );

    // The operator makes room: the same upload, sent again, is accepted.
    rmSync(filler);
    const accepted = await upload();
    expect(accepted.statusCode).toBe(200);
    const versions = (
      await t.app.inject({ url: '/api/version/KR/8801', headers: { ...WEB_CLIENT, cookie: user } })
    ).json() as Array<{ app_ver_id: string; status: string }>;
    expect(versions).toEqual([expect.objectContaining({ app_ver_id: '880100', status: 'Done' })]);
  });
});
