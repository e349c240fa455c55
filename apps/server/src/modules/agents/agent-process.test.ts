import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AdminQueueEntry, AppEntry, VersionEvent } from '@sideport/contracts';
import type { ItunesServer } from '../../dev/itunes-server.js';
import { buildAgentBundle, startAgentProcess, until, type AgentProcess } from '../../test/agent-process.js';
import {
  buildIpa,
  makeAgent,
  makePremium,
  signedInAdmin,
  storeApp,
  storeWith,
} from '../../test/decrypt-support.js';
import { databaseKinds, signedInUser, WEB_CLIENT } from '../../test/harness.js';
import { startLiveServer, type LiveServer } from '../../test/live-server.js';

/**
 * The decrypt pipeline with real `sideport-agent` processes (the self-contained build an operator
 * copies to another machine) against the real server on a port. Each app's operator command is a
 * small shell script of the test (cases/<bundle id>/command.sh), reached through one dispatcher
 * that also records the SIDEPORT_ environment each run saw.
 */

const appId = (n: number) => 6100 + n;
const bundleOf = (n: number) => `com.example.agent${n}`;
const ENCRYPTED_REASON =
  'The IPA is still encrypted (cryptid is not 0 in Payload/very-capable-app.app/very-capable-app).';

/** /proc/<pid>/stat: "pid (comm) state ppid pgrp ..."; comm may hold spaces, so fields count from the last ')'. */
const procStat = (pid: number) => {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
};
/** Running, or stopped; a zombie (dead, not yet reaped by whoever adopted it) counts as ended. */
const isAlive = (pid: number) => {
  const state = procStat(pid)?.[0];
  return state !== undefined && state !== 'Z' && state !== 'X';
};
const processGroupOf = (pid: number) => Number(procStat(pid)![2]);

describe.each(databaseKinds)('sideport-agent processes on %s', (kind) => {
  let store: ItunesServer;
  let live: LiveServer;
  /** Lease of 3 s: for the tests where a lease must run out or be lost quickly. */
  let quick: LiveServer;
  let bundle: string;
  let cases: string;
  /** Each server's signed-in person, admin and agent token. */
  const people = new Map<LiveServer, { user: string; admin: string; token: string }>();
  const running: AgentProcess[] = [];

  beforeAll(async () => {
    store = await storeWith(
      Array.from({ length: 16 }, (_, n) =>
        storeApp(appId(n), bundleOf(n), { version: `2.${n}`, trackName: `Agent App ${n}` }),
      ),
    );
    bundle = buildAgentBundle();
    const env = {
      ITUNES_BASE_URL: store.url,
      LIST_CACHE_MS: '0',
      SIGN_IN_LIMIT_PER_ADDRESS: '10000',
      FREE_DAILY_LIMIT: '100',
      DECRYPT_MAX_ATTEMPTS: '2',
      VERSIONS_WAIT_SECONDS: '20',
    };
    live = await startLiveServer(kind, { ...env, DECRYPT_LEASE_SECONDS: '30' });
    quick = await startLiveServer(kind, { ...env, DECRYPT_LEASE_SECONDS: '3' });
    for (const server of [live, quick]) {
      const admin = await signedInAdmin(server, `agent_admin_${kind}`);
      people.set(server, {
        user: await signedInUser(server, `agent_user_${kind}`),
        admin,
        token: (await makeAgent(server, admin)).token,
      });
    }

    cases = mkdtempSync(path.join(tmpdir(), 'sideport-operator-'));
    writeFileSync(
      path.join(cases, 'run.sh'),
      [
        'dir="' + cases + '/$SIDEPORT_BUNDLE_ID"',
        'env | grep "^SIDEPORT_" | sort > "$dir/env-$SIDEPORT_JOB_ID.txt"',
        '. "$dir/command.sh"',
      ].join('\n'),
    );
    writeFileSync(
      path.join(cases, 'versions.sh'),
      [
        'dir="' + cases + '/$SIDEPORT_BUNDLE_ID"',
        'env | grep "^SIDEPORT_" | sort > "$dir/env-versions.txt"',
        'cat "$dir/versions.txt"',
      ].join('\n'),
    );
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((agent) => agent.stop('SIGKILL')));
  });
  afterAll(async () => {
    await live?.close();
    await quick?.close();
    await store?.close();
    if (cases) rmSync(cases, { recursive: true, force: true });
  });

  /** Sets what the operator's command does for app n (a POSIX shell script; $dir is its folder). */
  function operator(n: number, script: string, versions?: string[]) {
    const dir = path.join(cases, bundleOf(n));
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'command.sh'), script);
    if (versions) writeFileSync(path.join(dir, 'versions.txt'), `${versions.join('\n')}\n`);
    return dir;
  }

  /** The SIDEPORT_ variables each run of app n's command saw, by job id. */
  function environments(n: number): Record<string, Record<string, string>> {
    const dir = path.join(cases, bundleOf(n));
    const runs: Record<string, Record<string, string>> = {};
    for (const name of readdirSync(dir).filter((f) => f.startsWith('env-'))) {
      const lines = readFileSync(path.join(dir, name), 'utf8').split('\n').filter(Boolean);
      runs[name.slice(4, -4)] = Object.fromEntries(
        lines.map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
      );
    }
    return runs;
  }

  function startAgent(server = live, extra: { versions?: boolean } = {}) {
    const agent = startAgentProcess({
      bundle,
      server: server.url,
      token: people.get(server)!.token,
      command: `sh ${cases}/run.sh`,
      ...(extra.versions ? { versionsCommand: `sh ${cases}/versions.sh` } : {}),
      workDir: path.join(cases, 'work'),
      // The agent's own SIDEPORT_ variables are not the command's business.
      env: { SIDEPORT_STRAY: 'from the agent' },
    });
    running.push(agent);
    return agent;
  }

  const inject = (server: LiveServer, url: string, cookie: string, method: 'GET' | 'POST' = 'GET') =>
    server.app.inject({ method, url, headers: { cookie, ...WEB_CLIENT } });
  const request = (n: number, server = live) =>
    inject(server, `/api/decrypt/KR/${appId(n)}`, people.get(server)!.user);
  const versionsOf = async (n: number, server = live) =>
    (await inject(server, `/api/version/KR/${appId(n)}`, people.get(server)!.user)).json() as AppEntry[];
  /** What the agents of this test printed, for failure messages. */
  const agentOutput = () => running.map((agent, i) => `--- agent ${i + 1}:\n${agent.output()}`).join('\n');
  const doneVersion = (n: number, server = live) =>
    until(
      `app ${n} to be Done`,
      async () => (await versionsOf(n, server)).find((e) => e.status === 'Done'),
      25_000,
      agentOutput,
    );
  async function queued(n: number, server = live): Promise<AdminQueueEntry | undefined> {
    const list = (
      await inject(server, '/api/admin/queue/0', people.get(server)!.admin)
    ).json() as AdminQueueEntry[];
    return list.find((e) => e.app_id === String(appId(n)));
  }
  /** Every status the live events announced for app n, in order. */
  function recordStatuses(n: number, server = live) {
    const seen: VersionEvent[] = [];
    server.services.bus.subscribe((event) => {
      if (event.kind === 'live' && event.event.type === 'version' && event.event.app_id === String(appId(n)))
        seen.push(event.event);
    });
    return seen;
  }
  async function download(server: LiveServer, n: number, appVerId: string) {
    const link = await inject(server, `/api/download/${appId(n)}/${appVerId}`, people.get(server)!.user);
    expect(link.statusCode).toBe(200);
    const url = new URL((link.json() as { url: string }).url);
    const file = await fetch(`${server.url}${url.pathname}${url.search}`);
    expect(file.status).toBe(200);
    return Buffer.from(await file.arrayBuffer());
  }

  it("takes an app-level request to Done from the command's lines, with exactly the contract's environment", async () => {
    const ipa = await buildIpa({ bundleId: bundleOf(0), version: '2.0' });
    operator(
      0,
      [
        'echo "status Downloading"',
        'echo "progress 40"',
        'echo "app_ver_id 910000"',
        'echo "version 2.0"',
        'echo "status Downloaded"',
        'echo "fetched by the operator\'s tool"',
        'echo "status Process"',
        `cp "${ipa}" "$SIDEPORT_OUTPUT"`,
      ].join('\n'),
    );
    const events = recordStatuses(0);
    expect((await request(0)).json()).toMatchObject({ status: 'Pending', app_ver_id: null });
    const agent = startAgent();

    expect(await doneVersion(0)).toMatchObject({ app_ver_id: '910000', version: '2.0', status: 'Done' });
    expect(
      events.map((e) => e.status),
      agentOutput(),
    ).toEqual(expect.arrayContaining(['Downloading', 'Downloaded', 'Process', 'Done']));
    expect(events.some((e) => e.progress === 40)).toBe(true);
    expect((await download(live, 0, '910000')).equals(readFileSync(ipa))).toBe(true);

    const runs = environments(0);
    const [jobId] = Object.keys(runs);
    expect(jobId).toMatch(/^\d+-1$/);
    expect(runs[jobId!]).toEqual({
      SIDEPORT_JOB_ID: jobId,
      SIDEPORT_COUNTRY: 'kr',
      SIDEPORT_APP_ID: String(appId(0)),
      SIDEPORT_BUNDLE_ID: bundleOf(0),
      SIDEPORT_APP_VER_ID: '',
      SIDEPORT_VERSION: '',
      SIDEPORT_OUTPUT: expect.stringMatching(new RegExp(`^${path.join(cases, 'work')}/.+\\.ipa$`)),
    });
    // Other lines are logged; a pipe gets plain progress lines rather than a bar.
    await agent.waitFor(/fetched by the operator's tool/);
    await agent.waitFor(/uploaded 100%/);
  });

  it("learns an app-level job's version from the IPA's iTunesMetadata.plist when the command does not say it", async () => {
    const ipa = await buildIpa({ bundleId: bundleOf(1), version: '2.1', appVerId: '910001' });
    operator(1, `cp "${ipa}" "$SIDEPORT_OUTPUT"`);
    expect((await request(1)).statusCode).toBe(200);
    startAgent();
    expect(await doneVersion(1)).toMatchObject({ app_ver_id: '910001', version: '2.1' });
  });

  it('turns the versions command into the downgrade list, then decrypts one of those versions', async () => {
    const premium = await signedInUser(live, `agent_premium_${kind}`);
    await makePremium(live, premium);
    const ipa = await buildIpa({ bundleId: bundleOf(2), version: '2.1' });
    operator(2, `echo "status Downloading"\ncp "${ipa}" "$SIDEPORT_OUTPUT"`, [
      'listing the store versions',
      '{"app_ver_id": 920003, "version": "2.2"}',
      '{"app_ver_id": 920002, "version": "2.1"}',
      '{"app_ver_id": "not a number", "version": "1.0"}',
    ]);
    const agent = startAgent(live, { versions: true });

    const history = await inject(live, `/api/version/KR/${appId(2)}`, premium, 'POST');
    expect(history.statusCode).toBe(200);
    expect(history.json()).toEqual({
      name: 'Agent App 2',
      version_list: [
        expect.objectContaining({ app_ver_id: '920003', version: '2.2', status: 'Available' }),
        expect.objectContaining({ app_ver_id: '920002', version: '2.1', status: 'Available' }),
      ],
    });
    expect(environments(2).versions).toEqual({
      SIDEPORT_COUNTRY: 'kr',
      SIDEPORT_APP_ID: String(appId(2)),
      SIDEPORT_BUNDLE_ID: bundleOf(2),
    });
    await agent.waitFor(/ignored the line .*not a number/);

    const asked = await inject(live, `/api/decrypt/KR/${appId(2)}/920002`, premium);
    expect(asked.json()).toMatchObject({ status: 'Pending', app_ver_id: '920002' });
    expect(await doneVersion(2)).toMatchObject({ app_ver_id: '920002', version: '2.1' });
    const decryptRun = Object.entries(environments(2)).find(([name]) => name !== 'versions')![1];
    expect(decryptRun).toMatchObject({ SIDEPORT_APP_VER_ID: '920002', SIDEPORT_VERSION: '2.1' });
    expect((await download(live, 2, '920002')).equals(readFileSync(ipa))).toBe(true);
  });

  it('makes the entry Not with the last stderr line when the command exits 3, and retries other exits', async () => {
    operator(
      3,
      [
        'echo "status Downloading"',
        'echo "looking at the app" >&2',
        'echo "This app needs a device on iOS 17." >&2',
        'exit 3',
      ].join('\n'),
    );
    const ipa = await buildIpa({ bundleId: bundleOf(4), version: '2.4', appVerId: '910004' });
    operator(
      4,
      [
        'if [ ! -f "$dir/tried" ]; then touch "$dir/tried"; echo "the store timed out" >&2; exit 1; fi',
        `cp "${ipa}" "$SIDEPORT_OUTPUT"`,
      ].join('\n'),
    );
    expect((await request(3)).statusCode).toBe(200);
    expect((await request(4)).statusCode).toBe(200);
    const agent = startAgent();

    const refused = await until('app 3 to be Not', async () => {
      const entry = await queued(3);
      return entry?.status === 'Not' ? entry : undefined;
    });
    expect(refused).toMatchObject({ reason: 'This app needs a device on iOS 17.', attempts: 1 });
    const again = await request(3);
    expect(again.statusCode).toBe(409);
    expect(again.body).toBe('This version cannot be decrypted: This app needs a device on iOS 17.');

    expect(await doneVersion(4)).toMatchObject({ app_ver_id: '910004' });
    expect(
      Object.keys(environments(4))
        .map((id) => id.split('-')[1])
        .sort(),
    ).toEqual(['1', '2']);
    await agent.waitFor(/reported failed \(back in the queue\): the store timed out/);
  });

  it('refuses an encrypted IPA on the agent, before any upload, until the entry is Not', async () => {
    const encrypted = await buildIpa({
      bundleId: bundleOf(5),
      version: '2.5',
      appVerId: '910005',
      cryptid: 1,
    });
    operator(5, `cp "${encrypted}" "$SIDEPORT_OUTPUT"`);
    const events = recordStatuses(5);
    expect((await request(5)).statusCode).toBe(200);
    const agent = startAgent();

    const refused = await until('app 5 to be Not', async () => {
      const entry = await queued(5);
      return entry?.status === 'Not' ? entry : undefined;
    });
    expect(refused).toMatchObject({ reason: ENCRYPTED_REASON, attempts: 2 });
    await agent.waitFor(/refused before upload and not uploaded/);
    // The server marks an entry Process when an upload arrives; none did.
    expect(events.map((e) => e.status)).not.toContain('Process');
  });

  it('fails the attempt with a reason when neither a line nor the IPA names the store version', async () => {
    const ipa = await buildIpa({ bundleId: bundleOf(6), version: '2.6' });
    operator(6, `cp "${ipa}" "$SIDEPORT_OUTPUT"`);
    expect((await request(6)).statusCode).toBe(200);
    startAgent();
    const failed = await until('app 6 to be Not', async () => {
      const entry = await queued(6);
      return entry?.status === 'Not' ? entry : undefined;
    });
    expect(failed.reason).toBe(
      'The store version is unknown: the command printed no app_ver_id line and the IPA has no iTunesMetadata.plist with softwareVersionExternalIdentifier.',
    );
  });

  it('hands the job back at once when stopped with SIGTERM, ending its command', async () => {
    const ipa = await buildIpa({ bundleId: bundleOf(7), version: '2.7', appVerId: '910007' });
    const dir = operator(
      7,
      [
        'if [ -f "$dir/sleep.pid" ]; then cp "' + ipa + '" "$SIDEPORT_OUTPUT"; exit 0; fi',
        'echo "status Downloading"',
        'sleep 300 & echo $! > "$dir/sleep.pid"',
        'wait',
      ].join('\n'),
    );
    expect((await request(7)).statusCode).toBe(200);
    const agent = startAgent();
    const sleeper = await until('the command to start', async () =>
      existsSync(path.join(dir, 'sleep.pid'))
        ? Number(readFileSync(path.join(dir, 'sleep.pid'), 'utf8'))
        : undefined,
    );
    expect(await agent.stop('SIGTERM')).toBe(0);
    await until('the command to end', async () => (isAlive(sleeper) ? undefined : true));
    // Back in the queue now, not when the 30 s lease would have run out; a lost lease, not a failure.
    expect(await queued(7)).toMatchObject({
      status: 'Pending',
      attempts: 0,
      lost_leases: 1,
      reason: 'The agent was stopped before it finished the job (lost lease 1 of 10).',
    });
    startAgent();
    expect(await doneVersion(7)).toMatchObject({ app_ver_id: '910007' });
  });

  it("stops the command's whole process group when the server takes the job back (409), and works on", async () => {
    const ipa = await buildIpa({ bundleId: bundleOf(8), version: '2.8', appVerId: '910008' });
    const dir = operator(
      8,
      [
        'if [ -f "$dir/sleep.pid" ]; then cp "' + ipa + '" "$SIDEPORT_OUTPUT"; exit 0; fi',
        'sleep 300 & echo $! > "$dir/sleep.pid"',
        'wait',
      ].join('\n'),
    );
    expect((await request(8, quick)).statusCode).toBe(200);
    const agent = startAgent(quick);
    const sleeper = await until('the command to start', async () =>
      existsSync(path.join(dir, 'sleep.pid'))
        ? Number(readFileSync(path.join(dir, 'sleep.pid'), 'utf8'))
        : undefined,
    );
    const entry = (await queued(8, quick))!;
    const retried = await quick.app.inject({
      method: 'POST',
      url: `/api/admin/queue/${entry.seq}/retry`,
      headers: { cookie: people.get(quick)!.admin, ...WEB_CLIENT },
    });
    expect(retried.statusCode).toBe(204);

    await agent.waitFor(/the server took the job back/);
    await until('the command to end', async () => (isAlive(sleeper) ? undefined : true));
    expect(await doneVersion(8, quick)).toMatchObject({ app_ver_id: '910008' });
  });

  it('lets another agent finish a job whose agent was killed with SIGKILL, once its lease runs out', async () => {
    const ipa = await buildIpa({ bundleId: bundleOf(9), version: '2.9', appVerId: '910009' });
    const dir = operator(
      9,
      [
        'echo "status Downloading"',
        'echo "progress 10"',
        'if [ ! -f "$dir/first.pid" ]; then echo $$ > "$dir/first.pid"; sleep 300 & echo $! > "$dir/sleep.pid"; wait; fi',
        `cp "${ipa}" "$SIDEPORT_OUTPUT"`,
      ].join('\n'),
    );
    expect((await request(9, quick)).statusCode).toBe(200);
    const first = startAgent(quick);
    await until('the command to start', async () =>
      existsSync(path.join(dir, 'sleep.pid')) ? true : undefined,
    );
    expect(await first.stop('SIGKILL')).toBeNull();
    // Nothing told the server: the killed agent's command lives on, orphaned, until we end it.
    process.kill(-processGroupOf(Number(readFileSync(path.join(dir, 'first.pid'), 'utf8'))), 'SIGKILL');

    startAgent(quick);
    expect(await doneVersion(9, quick)).toMatchObject({ app_ver_id: '910009' });
    expect(
      Object.keys(environments(9))
        .map((id) => id.split('-')[1])
        .sort(),
    ).toEqual(['1', '2']);
  }, 180_000);

  it('logs an accepted upload as Done, never as taken back, while its heartbeats run', async () => {
    const ipa = await buildIpa({ bundleId: bundleOf(11), version: '2.11', appVerId: '910011' });
    operator(11, ['echo "status Downloading"', `cp "${ipa}" "$SIDEPORT_OUTPUT"`].join('\n'));
    expect((await request(11, quick)).statusCode).toBe(200);
    // A 3 s lease: the agent beats every second, during the upload and as its answer comes.
    const agent = startAgent(quick);
    expect(await doneVersion(11, quick)).toMatchObject({ app_ver_id: '910011' });
    await agent.waitFor(/Done: store version 910011/);
    expect(agent.output()).not.toMatch(/took the job back|taken back/);
  });

  it('survives a server restart in the middle of a job and finishes it', async () => {
    const ipa = await buildIpa({ bundleId: bundleOf(10), version: '2.10', appVerId: '910010' });
    const dir = operator(
      10,
      [
        'echo "status Downloading"',
        'touch "$dir/started"',
        'while [ ! -f "$dir/go" ]; do sleep 0.1; done',
        `cp "${ipa}" "$SIDEPORT_OUTPUT"`,
      ].join('\n'),
    );
    expect((await request(10)).statusCode).toBe(200);
    const agent = startAgent();
    await until('the command to start', async () =>
      existsSync(path.join(dir, 'started')) ? true : undefined,
    );

    await live.stop();
    writeFileSync(path.join(dir, 'go'), '');
    await agent.waitFor(/the upload failed \(the server is unreachable/);
    await live.start();

    expect(await doneVersion(10)).toMatchObject({ app_ver_id: '910010', version: '2.10' });
  }, 180_000);
});
