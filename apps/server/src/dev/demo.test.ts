import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { X509Certificate } from 'node:crypto';
import { findAppBundle, openZip, parseProfile, readInfoPlist, readStoreMetadata } from '@sideport/ipa';
import type { AppEntry } from '@sideport/contracts';
import { until } from '../test/agent-process.js';
import { runCli } from '../test/cli-process.js';
import { DEMO_PASSWORD_FILE, demoInstructions, simulateCommand, startDemo, type Demo } from './demo.js';
import { DEMO_APP, runDemoLoop } from './demo-loop.js';
import { WEB_CLIENT } from '../test/harness.js';

const md5 = (s: string) => createHash('md5').update(s).digest('hex');

/** `npm run demo` end to end: the pieces it starts, used as a newcomer would. */
describe('the demo', () => {
  let demo: Demo;
  let dataDir: string;
  const printed: string[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'sideport-demo-'));
    demo = await start();
    // Starting a server, a store and an agent process: a loaded machine takes its time.
  }, 180_000);
  const start = () =>
    startDemo({
      port: 0,
      host: '127.0.0.1',
      dataDir,
      stepMs: 0,
      print: (line) => printed.push(line),
    });
  const signIn = (password: string) =>
    fetch(`${demo.url}/api/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: demo.admin.id, pw: md5(password) }),
    });
  const simulatedIphones = async (cookie: string) =>
    (
      (await (await fetch(`${demo.url}/api/info`, { headers: { cookie, ...WEB_CLIENT } })).json()) as {
        device_info: Array<{ UDID: string; status: string; name: string | null }>;
      }
    ).device_info.filter((d) => d.name === 'Simulated iPhone');

  afterAll(async () => {
    await demo?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('takes a search, a decrypt request and a download through its agent, and marks the file DEMO', async () => {
    const instructions = demoInstructions(demo, dataDir);
    expect(instructions).toContain(`open      ${demo.url}`);
    expect(instructions).toContain('search    facebook, talon or annuaire (veern is a paid app');

    const signIn = await fetch(`${demo.url}/api/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: demo.admin.id, pw: md5(demo.admin.password) }),
    });
    expect(await signIn.json()).toEqual({ grade: 1 });
    const cookie = signIn.headers.getSetCookie()[0]!.split(';')[0]!;
    const get = (url: string) => fetch(`${demo.url}${url}`, { headers: { cookie, ...WEB_CLIENT } });

    for (const term of ['facebook', 'talon', 'annuaire']) {
      expect(
        ((await (await get(`/api/search/kr/${term}`)).json()) as AppEntry[]).length,
        term,
      ).toBeGreaterThan(0);
    }
    const [facebook] = (await (await get('/api/search/kr/facebook')).json()) as AppEntry[];
    expect(facebook).toMatchObject({ app_id: '284882215', status: 'Available' });
    expect((await get('/api/decrypt/KR/284882215')).status).toBe(200);
    const paid = await get('/api/decrypt/KR/1473469253');
    expect(paid.status).toBe(403);

    const done = await until(
      'Facebook to be Done',
      async () =>
        ((await (await get('/api/version/KR/284882215')).json()) as AppEntry[]).find(
          (e) => e.status === 'Done',
        ),
      120_000,
      () => printed.join('\n'),
    );
    expect(done).toMatchObject({ version: '15.0' });
    const { url } = (await (await get(`/api/download/284882215/${done.app_ver_id}`)).json()) as {
      url: string;
    };
    const file = await fetch(new URL(new URL(url).pathname + new URL(url).search, demo.url));
    expect(file.headers.get('content-disposition')).toContain('Facebook_15.0.ipa');
    const ipa = path.join(dataDir, 'downloaded.ipa');
    writeFileSync(ipa, Buffer.from(await file.arrayBuffer()));

    const archive = await openZip(ipa);
    try {
      const bundle = findAppBundle(archive.entries);
      const info = await readInfoPlist(archive, bundle.dir);
      expect(info).toMatchObject({
        CFBundleIdentifier: 'com.facebook.Facebook',
        CFBundleDisplayName: 'DEMO Facebook',
      });
      expect(archive.find(`${bundle.dir}/DEMO.txt`)).toBeDefined();
    } finally {
      archive.close();
    }
    expect(await readStoreMetadata(ipa)).toMatchObject({
      appVerId: done.app_ver_id,
      bundleId: 'com.facebook.Facebook',
    });
    // The agent hears Done once the server has also filled the version's sign digest cache.
    await until(
      'the agent to print Done',
      async () => /\[agent\] .*Done: store version/.test(printed.join('\n')) || undefined,
      120_000,
      () => printed.join('\n'),
    );
  });
  it(
    'runs the whole loop: decrypt, a simulated iPhone, registration, a sign and its install manifest',
    { timeout: 300_000 },
    async () => {
      const steps: string[] = [];
      const loop = await runDemoLoop(demo, (line) => steps.push(line));
      // Each step printed its link.
      expect(steps.filter((line) => /^\d\. /.test(line)).map((line) => line.slice(0, 12))).toEqual([
        '1. decrypt  ',
        '2. device   ',
        '3. paid     ',
        '4. signed   ',
        '5. manifest ',
      ]);
      expect(steps.join('\n')).toContain(loop.manifestUrl);
      expect(loop.installUrl).toBe(
        `itms-services://?action=download-manifest&url=${encodeURIComponent(loop.manifestUrl)}`,
      );

      // The manifest names the signed IPA; its embedded profile lists the simulated iPhone.
      const ipa = path.join(dataDir, 'signed.ipa');
      writeFileSync(ipa, Buffer.from(await (await fetch(loop.ipaUrl)).arrayBuffer()));
      const archive = await openZip(ipa);
      let profileBytes: Buffer;
      try {
        const bundle = findAppBundle(archive.entries);
        expect(await readInfoPlist(archive, bundle.dir)).toMatchObject({
          CFBundleIdentifier: 'com.facebook.Facebook',
        });
        profileBytes = await archive.readEntry(archive.find(`${bundle.dir}/embedded.mobileprovision`)!);
      } finally {
        archive.close();
      }
      const profile = parseProfile(profileBytes);
      expect(profile.provisionedDevices).toContain(loop.udid);
      expect(loop.udid).toMatch(/^00008120-[0-9A-F]{16}$/);

      // The dev identity's CA, as the admin identity page offers it, issued the certificate that signed.
      const signIn = await fetch(`${demo.url}/api/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: demo.admin.id, pw: md5(demo.admin.password) }),
      });
      const cookie = signIn.headers.getSetCookie()[0]!.split(';')[0]!;
      const caPem = await (
        await fetch(`${demo.url}/api/admin/identity/ca.pem`, { headers: { cookie } })
      ).text();
      const ca = new X509Certificate(caPem);
      const [signer] = profile.developerCertificates;
      expect(new X509Certificate(signer!.der).verify(ca.publicKey)).toBe(true);
      expect(steps.join('\n')).toContain(`${DEMO_APP.name} for ${loop.udid}`);
    },
  );

  it(
    'takes the operator CLI beside it as its banner prints it, and refuses in one sentence with exit 2',
    { timeout: 300_000 },
    async () => {
      // The banner's command, for this demo's folder (not the repository's ./data-demo).
      expect(demoInstructions(demo, dataDir)).toContain(simulateCommand(dataDir));
      expect(simulateCommand(dataDir)).toBe(
        `DATA_DIR=${dataDir} npx sideport device:simulate <user-id> --paid`,
      );
      const signUp = await fetch(`${demo.url}/api/sign-up`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'newcomer', pw: md5('newcomer-password') }),
      });
      expect(signUp.status).toBe(200);
      const cookie = signUp.headers.getSetCookie()[0]!.split(';')[0]!;

      const env = { DATA_DIR: dataDir };
      const made = await runCli(['device:simulate', 'newcomer', '--paid'], env);
      expect(made.code, made.out).toBe(0);
      expect(made.stdout).toContain('Simulated iPhone (iPhone15,2) enrolled for newcomer: Registered.');
      const udid = /^(00008120-[0-9A-F]{16})$/m.exec(made.stdout)?.[1];
      expect(await simulatedIphones(cookie)).toEqual([
        expect.objectContaining({ UDID: udid, status: 'Registered' }),
      ]);

      const nobody = await runCli(['device:simulate', 'nobody-here', '--paid'], env);
      expect(nobody.code).toBe(2);
      expect(nobody.stdout).toBe('');
      expect(nobody.log).toBe('No user with id nobody-here.\n');
      // What needs the database itself says how to run it.
      const held = await runCli(['agent:list'], env);
      expect(held.code).toBe(2);
      expect(held.log).toMatch(
        /^The database in \S+ is in use by process \d+ \(a running server\): stop it and run this again; backup and device:simulate work beside it\.\n$/,
      );
    },
  );

  it(
    'restarted, keeps its admin password (kept 0600) and its one simulated iPhone',
    { timeout: 300_000 },
    async () => {
      const before = demo.admin.password;
      await demo.close();
      demo = await start();
      expect(demo.admin.password).toBe(before);
      expect(statSync(path.join(dataDir, DEMO_PASSWORD_FILE)).mode & 0o777).toBe(0o600);
      const signedIn = await signIn(before);
      expect(signedIn.status).toBe(200);
      const cookie = signedIn.headers.getSetCookie()[0]!.split(';')[0]!;
      const [kept] = await simulatedIphones(cookie);
      expect(kept).toMatchObject({ status: 'Registered' });

      const loop = await runDemoLoop(demo, () => {});
      expect(loop.udid).toBe(kept!.UDID);
      expect(await simulatedIphones(cookie)).toEqual([kept]);
    },
  );
});
