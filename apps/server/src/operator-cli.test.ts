import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from './app.js';
import type { ItunesServer } from './dev/itunes-server.js';
import { openConfiguredDatabase } from './platform/bootstrap.js';
import { loadConfig } from './platform/config.js';
import { buildIpa, storeApp, storeWith } from './test/decrypt-support.js';
import { createPostgresDatabase, oneDatabase, signedInUser, WEB_CLIENT } from './test/harness.js';
import { STRIPE_ENV } from './test/route-suite.js';
import { cliJs, runCli } from './test/cli-process.js';

/** Every line of a command's log, parsed; a line that is not JSON fails the test. */
function logLines(
  log: string,
): Array<{ level: number; msg: string; err?: { type: string; message: string; stack: string } }> {
  return log
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as {
          level: number;
          msg: string;
          err?: { type: string; message: string; stack: string };
        };
      } catch {
        throw new Error(`A log line that is not JSON: ${line}`);
      }
    });
}

/** Every file stored under DATA_DIR/files. */
const storedFiles = (dataDir: string): string[] => {
  const root = path.join(dataDir, 'files');
  const walk = (dir: string): string[] =>
    existsSync(dir)
      ? readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
          d.isDirectory() ? walk(path.join(dir, d.name)) : [d.name],
        )
      : [];
  return walk(root);
};

// The commands act through the services the API uses, whose queries run on both databases in their
// modules' suites: one database here (test/harness.ts, oneDatabase); the suites below run on PGlite.
describe.each([oneDatabase])('operator commands on %s', (kind) => {
  let store: ItunesServer;
  let dataDir: string;
  let env: Record<string, string>;
  let dropDatabase: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    store = await storeWith([
      storeApp(6601, 'com.example.import1', { version: '3.1', trackName: 'Import App' }),
    ]);
    dataDir = mkdtempSync(path.join(tmpdir(), 'sideport-cli-'));
    env = { DATA_DIR: dataDir, ITUNES_BASE_URL: store.url };
    if (kind === 'postgres') {
      const created = await createPostgresDatabase();
      env.DATABASE_URL = created.url;
      dropDatabase = created.drop;
    }
  });
  afterAll(async () => {
    await store.close();
    await dropDatabase?.();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** The server on the same data, while the CLI is not running (embedded PGlite is one process's). */
  async function withServer<T>(fn: (built: Awaited<ReturnType<typeof buildApp>>) => Promise<T>): Promise<T> {
    const config = loadConfig({ LOG_LEVEL: 'silent', WEB_DIST_DIR: dataDir, SESSION_CACHE_MS: '0', ...env });
    const database = await openConfiguredDatabase(config);
    await database.migrate();
    const built = await buildApp({ config, database });
    try {
      return await fn(built);
    } finally {
      await built.app.close();
      await database.close();
    }
  }
  const claimWith = (built: Awaited<ReturnType<typeof buildApp>>, token: string) =>
    built.app.inject({
      method: 'POST',
      url: '/api/agent/claim',
      headers: { authorization: `Bearer ${token}` },
      payload: {},
    });

  it('makes an agent whose token works, lists it, and revokes it', { timeout: 300_000 }, async () => {
    const made = await runCli(['agent:create', 'mac-mini'], env);
    expect(made.code, made.out).toBe(0);
    const [, id, token] =
      /Agent (\d+) \(mac-mini\) is made\. Its token, shown only this once:\s+(spa_\S+)/.exec(made.out)!;

    const listed = await runCli(['agent:list'], env);
    expect(listed.out).toMatch(new RegExp(`^${id}\\s+mac-mini\\s+never\\s+-\\s+0\\s+0$`, 'm'));
    await withServer(async (built) => expect((await claimWith(built, token!)).statusCode).toBe(200));

    const revoked = await runCli(['agent:revoke', id!], env);
    expect(revoked.out).toContain(`Agent ${id} (mac-mini) is revoked: its token no longer works.`);
    expect((await runCli(['agent:list'], env)).out).toContain('No agents.');
    await withServer(async (built) => {
      expect((await claimWith(built, token!)).statusCode).toBe(401);
      const audit = await built.services.audit.page(0, 10);
      expect(audit.map((a) => [a.actor, a.action])).toEqual([
        ['operator (cli)', 'revoke-agent'],
        ['operator (cli)', 'create-agent'],
      ]);
    });
    const again = await runCli(['agent:revoke', id!], env);
    expect(again.code).toBe(2);
    expect(again.out).toContain('This agent was not found.');
  });

  it(
    "imports an operator's decrypted IPA as a Done version that answers the waiting request",
    { timeout: 300_000 },
    async () => {
      const ipa = await buildIpa({ bundleId: 'com.example.import1', version: '3.1', appVerId: '930001' });
      const cookie = await withServer(async (built) => {
        const user = await signedInUser(built, `cli_user_${kind}`);
        expect(
          (
            await built.app.inject({ url: '/api/decrypt/KR/6601', headers: { cookie: user, ...WEB_CLIENT } })
          ).json(),
        ).toMatchObject({ status: 'Pending' });
        return user;
      });

      const imported = await runCli(['ipa:import', ipa, '--country', 'kr'], env);
      expect(imported.code, imported.out).toBe(0);
      expect(imported.out).toContain(
        `Import App 3.1 (app_id 6601, app_ver_id 930001, KR) is Done: ${readFileSync(ipa).length} bytes stored.`,
      );
      expect(existsSync(ipa)).toBe(true);

      await withServer(async (built) => {
        const get = (url: string) => built.app.inject({ url, headers: { cookie } });
        expect((await get('/api/queue/0')).json()).toEqual([]);
        expect((await get('/api/latest/0')).json()).toEqual([
          expect.objectContaining({ app_id: '6601', app_ver_id: '930001', status: 'Done', version: '3.1' }),
        ]);
        const url = new URL(((await get('/api/download/6601/930001')).json() as { url: string }).url);
        const file = await built.app.inject({ url: url.pathname + url.search });
        expect(file.rawPayload.equals(readFileSync(ipa))).toBe(true);
      });
    },
  );

  it(
    'enrolls a simulated iPhone through the enrollment path, and with --paid registers it',
    { timeout: 300_000 },
    async () => {
      const user = `sim_user_${kind}`;
      const cookie = await withServer((built) => signedInUser(built, user));
      const udidOf = (out: string) => /^(00008120-[0-9A-F]{16})$/m.exec(out)?.[1];

      const added = await runCli(['device:simulate', user], env);
      expect(added.code, added.out).toBe(0);
      expect(added.out).toContain(`Simulated iPhone (iPhone15,2) enrolled for ${user}: Add.`);
      const paid = await runCli(['device:simulate', user, '--paid'], env);
      expect(paid.code, paid.out).toBe(0);
      expect(paid.out).toContain(`Simulated iPhone (iPhone15,2) enrolled for ${user}: Registered.`);
      const [first, second] = [udidOf(added.out), udidOf(paid.out)];
      expect(first).toBeDefined();
      expect(second).not.toBe(first);

      await withServer(async (built) => {
        const info = (await built.app.inject({ url: '/api/info', headers: { cookie } })).json() as {
          device_info: Array<{ Product: string; UDID: string; status: string }>;
        };
        expect(info.device_info.map((d) => [d.Product, d.UDID, d.status])).toEqual([
          ['iPhone15,2', first, 'Add'],
          ['iPhone15,2', second, 'Registered'],
        ]);
      });

      const unknown = await runCli(['device:simulate', 'nobody-here'], env);
      expect(unknown.code).toBe(2);
      expect(unknown.out).toContain('No user with id nobody-here.');
    },
  );

  it(
    'simulates devices only with the dev identity, and pays only in test mode',
    { timeout: 300_000 },
    async () => {
      const apple = await runCli(['device:simulate', `sim_user_${kind}`], {
        ...env,
        ASC_KEY_ID: 'SIMULATE12',
        ASC_ISSUER_ID: '69a6de70-03db-47e3-e053-5b8c7c11a4d1',
        ASC_PRIVATE_KEY: generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
          .privateKey.export({ type: 'pkcs8', format: 'pem' })
          .toString(),
        ASC_BASE_URL: 'http://127.0.0.1:9',
      });
      expect(apple.code).toBe(2);
      expect(apple.out).toContain('Simulated devices need the dev identity');
      const stripe = await runCli(['device:simulate', `sim_user_${kind}`, '--paid'], {
        ...env,
        ...STRIPE_ENV,
      });
      expect(stripe.code).toBe(2);
      expect(stripe.out).toContain('--paid needs the test-mode billing provider');
    },
  );

  it(
    'refuses what the check refuses, an app the store lacks and an unknown version, storing nothing',
    { timeout: 300_000 },
    async () => {
      const before = storedFiles(dataDir);
      const cases: Array<[string[], string]> = [
        [
          [
            await buildIpa({
              bundleId: 'com.example.import1',
              version: '3.2',
              appVerId: '930002',
              cryptid: 1,
            }),
          ],
          'The IPA is still encrypted (cryptid is not 0 in Payload/very-capable-app.app/very-capable-app).',
        ],
        [
          [await buildIpa({ bundleId: 'com.example.nowhere', version: '1.0', appVerId: '930003' })],
          'The store of KR has no app with the bundle id com.example.nowhere.',
        ],
        [
          [await buildIpa({ bundleId: 'com.example.import1', version: '3.2' })],
          'The IPA has no iTunesMetadata.plist naming its store version (softwareVersionExternalIdentifier); give the app_ver_id.',
        ],
        [
          [
            await buildIpa({ bundleId: 'com.example.other', version: '3.2', appVerId: '930004' }),
            '--app-id',
            '6601',
          ],
          'The IPA is com.example.other, not the requested com.example.import1.',
        ],
        [[path.join(dataDir, 'missing.ipa')], `There is no file at ${path.join(dataDir, 'missing.ipa')}.`],
      ];
      for (const [args, sentence] of cases) {
        const refused = await runCli(['ipa:import', ...args, '--country', 'KR'], env);
        expect(refused.code, refused.out).toBe(2);
        expect(refused.out).toContain(sentence);
      }
      expect(storedFiles(dataDir)).toEqual(before);

      const given = await runCli(
        [
          'ipa:import',
          await buildIpa({ bundleId: 'com.example.import1', version: '3.0' }),
          '--country',
          'KR',
          '--app-ver-id',
          '930000',
        ],
        env,
      );
      expect(given.out).toContain('Import App 3.0 (app_id 6601, app_ver_id 930000, KR) is Done');
    },
  );
});

describe('the answers of every operator command', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'sideport-cli-log-'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('prints the version for --version and -v', async () => {
    const { version } = JSON.parse(
      readFileSync(path.resolve(import.meta.dirname, '../package.json'), 'utf8'),
    ) as { version: string };
    for (const flag of ['--version', '-v']) {
      const run = await runCli([flag], {});
      expect(run.code, run.out).toBe(0);
      expect(run.stdout).toBe(`${version}\n`);
      expect(run.log).toBe('');
    }
  });

  it(
    'answers a refusal with one sentence on stderr and exit 2, no JSON and no stack; a wrong option or command adds the usage',
    { timeout: 300_000 },
    async () => {
      const env = { DATA_DIR: dataDir };
      const refusals: Array<[string[], Record<string, string>, string, string?]> = [
        [['migrate'], { PORT: 'x' }, 'PORT: must be a number'],
        [['user:grade', 'nobody', '1'], {}, 'No user with id nobody.'],
        [['agent:revoke', '999'], {}, 'This agent was not found.'],
        [
          ['user:create', 'someone', '--password-env', 'NOT_SET'],
          {},
          'Set NOT_SET to a password of at least 8 characters.',
        ],
        [
          ['restore', path.join(dataDir, 'no-such.tar')],
          {},
          `There is no file at ${path.join(dataDir, 'no-such.tar')}.`,
        ],
        [
          ['no-such-command'],
          {},
          "Unknown command 'no-such-command'.",
          'Usage: sideport [options] <command>',
        ],
        [['--bogus'], {}, "Unknown option '--bogus'.", 'Usage: sideport [options] <command>'],
        [
          ['user:grade', 'nobody'],
          {},
          "Missing required argument 'grade'.",
          'Usage: sideport user:grade [options] <id> <grade>',
        ],
        [
          ['agent:list', '--everything'],
          {},
          "Unknown option '--everything'.",
          'Usage: sideport agent:list [options]',
        ],
      ];
      for (const [args, extra, sentence, usage] of refusals) {
        const run = await runCli(args, { ...env, ...extra });
        const what = args.join(' ');
        expect(run.code, run.out).toBe(2);
        expect(run.stdout, what).toBe('');
        const lines = run.log.split('\n');
        const at = lines.findIndex((line) => line.includes(sentence));
        expect(at, `${what}: ${run.log}`).toBeGreaterThanOrEqual(0);
        if (usage)
          expect(lines.slice(0, 3), what).toEqual([sentence, usage, expect.stringContaining('--help')]);
        expect(run.log, what).not.toMatch(/^\{/m);
        expect(run.log, what).not.toContain('    at ');
      }

      const migrated = await runCli(['migrate'], env);
      expect(migrated.code, migrated.out).toBe(0);
      expect(migrated.stdout).toBe(`Migrations applied to PGlite ${path.join(dataDir, 'db')}.\n`);
      logLines(migrated.log);
      const made = await runCli(['agent:create', 'log-test'], env);
      expect(made.stdout).toMatch(/Its token, shown only this once:\s+spa_\S+/);
      expect(made.log).not.toContain('spa_');
      expect(logLines(made.log).every((l) => l.level === 30)).toBe(true);
    },
  );
});

describe('npx sideport itunes:serve with the README arguments', () => {
  it("serves the repository's recorded answers, and the searches the README names find apps", async () => {
    const root = path.resolve(import.meta.dirname, '../../..');
    const files = readdirSync(path.join(root, 'fixtures/itunes')).map((name) => `fixtures/itunes/${name}`);
    const child = spawn(process.execPath, [cliJs, 'itunes:serve', ...files, '--port', '0'], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '' },
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          const match = /on (http:\/\/[\d.:]+)/.exec(out);
          if (match) resolve(match[1]!);
        });
        child.on('exit', (code) => reject(new Error(`itunes:serve exited with ${code}: ${out}`)));
      });
      const { toStoreApps } = await import('./modules/catalog/itunes.js');
      const found = async (term: string) => {
        const res = await fetch(`${url}/search?term=${encodeURIComponent(term)}&country=us&entity=software`);
        return toStoreApps(await res.json()).map((a) => a.name);
      };
      expect(await found('facebook')).toContain('Facebook');
      expect(await found('talon')).toEqual(['Talon – Webhooks & More']);
      expect(await found('annuaire')).toHaveLength(1);
      expect(await found('veern')).toEqual(['Veern']);
      // Mac apps are recorded too, but Sideport keeps iPhone and iPad apps only.
      expect(await found('slack')).toEqual([]);
    } finally {
      child.kill();
    }
  });
});
