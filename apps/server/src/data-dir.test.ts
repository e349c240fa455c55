/**
 * DATA_DIR on disk, as the real server process and operator commands leave it: the embedded
 * database (the download URL key and password hashes are in its files and WAL), the secret key and
 * the stored files are the server user's alone (docs/security.md, Data at rest).
 */
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PGlite } from '@electric-sql/pglite';
import { openDatabase, ownerOnlyFs } from './db/client.js';
import { md5, runCli, startServer, stopServer } from './test/server-process.js';

/** Every file and folder under `dir` (and `dir`) that group or others may read, write or enter, with its mode. */
function openToOthers(dir: string): string[] {
  const found: string[] = [];
  const visit = (file: string) => {
    const stat = lstatSync(file);
    if (stat.isSymbolicLink()) return;
    if ((stat.mode & 0o077) !== 0)
      found.push(`${path.relative(dir, file) || '.'} ${(stat.mode & 0o777).toString(8)}`);
    if (stat.isDirectory()) for (const name of readdirSync(file)) visit(path.join(file, name));
  };
  visit(dir);
  return found;
}

const countEntries = (dir: string): number => readdirSync(dir, { recursive: true }).length;

/** Every file and folder under `dir` (not `dir` itself) with its mode, as `ls -lR` would show them. */
function modesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true })
    .map(String)
    .sort()
    .map((rel) => `${rel} ${(lstatSync(path.join(dir, rel)).mode & 0o777).toString(8)}`);
}

/** A folder of someone's own things: a sub-folder 0755 and files 0644, as a usual umask makes them. */
function folderOfOtherThings(dir: string) {
  mkdirSync(path.join(dir, 'photos'), { recursive: true });
  writeFileSync(path.join(dir, 'notes.txt'), 'mine');
  writeFileSync(path.join(dir, 'photos', 'cat.jpg'), 'mine too');
  chmodSync(dir, 0o755);
  chmodSync(path.join(dir, 'photos'), 0o755);
  chmodSync(path.join(dir, 'notes.txt'), 0o644);
  chmodSync(path.join(dir, 'photos', 'cat.jpg'), 0o644);
}

describe('DATA_DIR on disk', () => {
  let parent: string;
  beforeAll(() => {
    parent = mkdtempSync(path.join(tmpdir(), 'sideport-data-dir-'));
  });
  afterAll(() => rmSync(parent, { recursive: true, force: true }));

  it(
    'holds nothing group or others can read or write after a start and the operator commands',
    { timeout: 180_000 },
    async () => {
      const dataDir = path.join(parent, 'fresh');
      const env = { DATA_DIR: dataDir, WEB_DIST_DIR: parent };
      const running = await startServer(env);
      try {
        const signUp = await fetch(`${running.url}/api/sign-up`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ id: 'private_owner', pw: md5('a long password') }),
        });
        expect(signUp.status).toBe(200);
      } finally {
        expect(await stopServer(running)).toBe(0);
      }
      // The database alone is a thousand files: the check means something only if they are there.
      expect(countEntries(path.join(dataDir, 'db'))).toBeGreaterThan(900);
      expect(openToOthers(dataDir)).toEqual([]);
      expect(running.output()).not.toContain('other users could read or write');

      // The operator commands that write into DATA_DIR: a user, a simulated device, a backup and a restore.
      const made = await runCli(['user:create', 'cli_owner', '--password-env', 'OWNER_PASSWORD'], {
        ...env,
        OWNER_PASSWORD: 'another long password',
      });
      expect(made.code, made.out).toBe(0);
      const simulated = await runCli(['device:simulate', 'cli_owner', '--paid'], env);
      expect(simulated.code, simulated.out).toBe(0);
      const backupFile = path.join(parent, 'backup.tar');
      const backedUp = await runCli(['backup', backupFile], env);
      expect(backedUp.code, backedUp.out).toBe(0);
      expect(statSync(backupFile).mode & 0o777).toBe(0o600);
      expect(openToOthers(dataDir)).toEqual([]);

      const restoredDir = path.join(parent, 'restored');
      const restored = await runCli(['restore', backupFile], { ...env, DATA_DIR: restoredDir });
      expect(restored.code, restored.out).toBe(0);
      expect(countEntries(path.join(restoredDir, 'db'))).toBeGreaterThan(900);
      expect(openToOthers(restoredDir)).toEqual([]);
    },
  );

  it(
    "keeps the embedded database's files private whatever the umask, new ones included",
    { timeout: 60_000 },
    async () => {
      // This test process has the usual umask (022): PGlite's own modes are masked as it sets them.
      expect(process.umask() & 0o077).not.toBe(0o077);
      const dir = path.join(parent, 'in-process', 'db');
      const database = await openDatabase({ pgliteDir: dir });
      try {
        await database.migrate();
        // Files made after the open: a new table, its index and the relation cache PostgreSQL rewrites.
        await database.db.execute(sql`create table private_probe (id integer primary key, note text)`);
        await database.db.execute(
          sql`insert into private_probe select n, 'x' from generate_series(1, 5000) as n`,
        );
        await database.db.execute(sql`checkpoint`);
      } finally {
        await database.close();
      }
      expect(countEntries(dir)).toBeGreaterThan(900);
      expect(openToOthers(dir)).toEqual([]);
    },
  );

  it(
    'makes every file of a new embedded database private as it is created, not only after',
    { timeout: 60_000 },
    async () => {
      // PGlite alone, without the check openDatabase makes after opening: initdb's files are born private.
      const dir = path.join(parent, 'born-private', 'db');
      mkdirSync(path.dirname(dir));
      const client = await PGlite.create({ fs: ownerOnlyFs(dir) });
      try {
        await client.exec('create table private_probe (id integer primary key); checkpoint;');
      } finally {
        await client.close();
      }
      expect(countEntries(dir)).toBeGreaterThan(900);
      expect(openToOthers(dir)).toEqual([]);
    },
  );

  it(
    'takes group and other bits off a DATA_DIR made 0777 beforehand, and says so in a warning',
    { timeout: 120_000 },
    async () => {
      const dataDir = path.join(parent, 'wide-open');
      mkdirSync(path.join(dataDir, 'files', 'ipa'), { recursive: true });
      writeFileSync(path.join(dataDir, 'files', 'ipa', 'app.ipa'), 'not really an ipa');
      for (const folder of [dataDir, path.join(dataDir, 'files'), path.join(dataDir, 'files', 'ipa')])
        chmodSync(folder, 0o777);
      chmodSync(path.join(dataDir, 'files', 'ipa', 'app.ipa'), 0o666);
      expect(openToOthers(dataDir)).toHaveLength(4);

      const running = await startServer({ DATA_DIR: dataDir, WEB_DIST_DIR: parent });
      try {
        const warning = running
          .output()
          .split('\n')
          .filter((line) => line.includes('"dataDir"'))
          .map((line) => JSON.parse(line) as { level: number; msg: string; fixed: number });
        expect(warning).toEqual([
          {
            ...warning[0],
            level: 40,
            fixed: 4,
            msg:
              `DATA_DIR ${dataDir} held 4 files or folders that other users could read or write ` +
              `(${dataDir} was 0777); they are now this user's alone (folders 0700, files 0600).`,
          },
        ]);
        expect(openToOthers(dataDir)).toEqual([]);
        expect(statSync(dataDir).mode & 0o777).toBe(0o700);
        expect(statSync(path.join(dataDir, 'files', 'ipa', 'app.ipa')).mode & 0o777).toBe(0o600);
      } finally {
        expect(await stopServer(running)).toBe(0);
      }
      // Fixed once, it stays fixed: the next start has nothing to say.
      const again = await startServer({ DATA_DIR: dataDir, WEB_DIST_DIR: parent });
      expect(await stopServer(again)).toBe(0);
      expect(again.output()).not.toContain('other users could read or write');
    },
  );

  it(
    "changes no mode in a folder restore refuses, nor in what is not Sideport's in DATA_DIR",
    { timeout: 120_000 },
    async () => {
      const dataDir = path.join(parent, 'someone-elses');
      folderOfOtherThings(dataDir);
      const before = modesUnder(dataDir);
      expect(before).toEqual(['notes.txt 644', 'photos 755', 'photos/cat.jpg 644']);
      const backup = path.join(parent, 'any.tar');
      writeFileSync(backup, 'refused before it is read');

      const restore = await runCli(['restore', backup], { DATA_DIR: dataDir });
      expect(restore.code).not.toBe(0);
      expect(restore.out).toContain(`DATA_DIR ${dataDir} is not empty`);
      expect(modesUnder(dataDir)).toEqual(before);
      expect(statSync(dataDir).mode & 0o777).toBe(0o755);

      // A command that uses the folder makes what Sideport keeps there private, and nothing else.
      const created = await runCli(['user:create', 'modes_user', '--password-env', 'PW'], {
        DATA_DIR: dataDir,
        PW: 'a long password',
      });
      expect(created.code, created.out).toBe(0);
      expect(modesUnder(dataDir).filter((line) => !line.startsWith('db'))).toEqual(before);
      expect(openToOthers(path.join(dataDir, 'db'))).toEqual([]);
    },
  );
});
