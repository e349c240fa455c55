/**
 * What `sideport restore` refuses and how it says so (docs/security.md, Backups): a backup whose
 * members are not each there once, a damaged one (the sentence names the member and what was
 * expected of it), and a database dump that unpacks past its caps. What it restores is streamed
 * to disk, never held whole in memory.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { sql } from 'drizzle-orm';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../db/client.js';
import { BackupError, restoreBackup, RESTORE_LIMITS, verifyBackup, writeBackup } from './backup.js';

interface Member {
  name: string;
  body: Buffer;
}

/** A tar of `members`, in order. */
async function tarOf(members: Member[]): Promise<Buffer> {
  const pack = tar.pack();
  for (const m of members) pack.entry({ name: m.name, size: m.body.length, mode: 0o600 }, m.body);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A ustar header of a regular file named `name` that says it holds `size` bytes (POSIX.1-1988). */
function tarHeader(name: string, size: number): Buffer {
  const header = Buffer.alloc(512);
  header.write(name, 0, 100);
  header.write('0000600\0', 100);
  header.write('0000000\0', 108);
  header.write('0000000\0', 116);
  header.write(`${size.toString(8).padStart(11, '0')}\0`, 124);
  header.write('00000000000\0', 136);
  header.write('0', 156); // a regular file
  header.write('ustar\u000000', 257);
  header.fill(' ', 148, 156); // the checksum is summed with its own field as spaces
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return header;
}

/** A backup as `sideport backup` writes it around `database` (a gzip), with `files` and a secret key. */
function backupMembers(database: Buffer, files: Member[] = []): Member[] {
  const json = (v: object) => Buffer.from(`${JSON.stringify(v)}\n`);
  const fileBytes = files.reduce((n, f) => n + f.body.length, 0);
  return [
    { name: 'sideport-backup.json', body: json({ format: 1, created_at: '2026-12-06T05:00:00.000Z' }) },
    { name: 'database.tar.gz', body: database },
    { name: 'secret-key', body: Buffer.from('k'.repeat(43)) },
    ...files.map((f) => ({ name: `files/${f.name}`, body: f.body })),
    {
      name: 'sideport-backup-end.json',
      body: json({ files: files.length, file_bytes: fileBytes, database_bytes: database.length }),
    },
  ];
}

describe('sideport restore of a damaged or hostile backup', () => {
  let work: string;
  /** A real backup, as writeBackup makes it of a real embedded database and two stored files. */
  let good: Buffer;
  let dump: Buffer;
  const files: Member[] = [
    { name: 'ipa/1/app.ipa', body: Buffer.alloc(70_000, 7) },
    { name: 'ipa/2/app.ipa', body: Buffer.from('second') },
  ];
  let n = 0;
  const emptyDir = () => {
    const dir = path.join(work, `restore-${n++}`);
    mkdirSync(dir, { mode: 0o700 });
    return dir;
  };

  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'sideport-restore-'));
    const source = path.join(work, 'source');
    for (const f of files) {
      mkdirSync(path.dirname(path.join(source, 'files', f.name)), { recursive: true });
      writeFileSync(path.join(source, 'files', f.name), f.body);
    }
    writeFileSync(path.join(source, 'secret-key'), 'k'.repeat(43));
    const database = await openDatabase({ pgliteDir: path.join(source, 'db') });
    try {
      await database.db.execute(sql`create table restored_probe (note text)`);
      await database.db.execute(sql`insert into restored_probe values ('was backed up')`);
      const chunks: Buffer[] = [];
      const out = new Writable({
        write(chunk: Buffer, _enc, done) {
          chunks.push(chunk);
          done();
        },
      });
      let dumped: Blob | undefined;
      await writeBackup(
        {
          dataDir: source,
          dumpDatabase: async () => (dumped = await database.dumpDataDir!()),
        },
        out,
      );
      good = Buffer.concat(chunks);
      dump = Buffer.from(await dumped!.arrayBuffer());
    } finally {
      await database.close();
    }
  }, 120_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  /** Restores `backup` into a new empty folder; the database check opens it when `open`. */
  async function restore(backup: Buffer, limits = RESTORE_LIMITS, open = false) {
    const dir = emptyDir();
    let opened: string | undefined;
    const summary = await restoreBackup(
      Readable.from([backup]),
      dir,
      async (pgliteDir) => {
        opened = pgliteDir;
        if (!open) return;
        const database = await openDatabase({ pgliteDir });
        try {
          const result = (await database.db.execute(sql`select note from restored_probe`)) as {
            rows: unknown[];
          };
          expect(result.rows).toEqual([{ note: 'was backed up' }]);
        } finally {
          await database.close();
        }
      },
      limits,
    );
    return { dir, summary, opened };
  }

  /** The sentence a refused restore gives. */
  async function refusal(backup: Buffer, limits = RESTORE_LIMITS): Promise<string> {
    const error = await restore(backup, limits).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(BackupError);
    return (error as Error).message;
  }

  it('restores a whole backup, its database unpacked onto disk and opened', async () => {
    const { dir, summary } = await restore(good, RESTORE_LIMITS, true);
    expect(summary).toEqual({ databaseBytes: dump.length, files: 2, fileBytes: 70_006 });
    expect(readFileSync(path.join(dir, 'files', 'ipa', '1', 'app.ipa')).equals(files[0]!.body)).toBe(true);
    expect(statSync(path.join(dir, 'db', 'PG_VERSION')).mode & 0o777).toBe(0o600);
  });

  it('refuses a backup that holds a member twice (a second secret-key), naming it', async () => {
    const members = backupMembers(dump, files);
    const twice = [
      ...members.slice(0, 3),
      { name: 'secret-key', body: Buffer.from('x'.repeat(43)) },
      ...members.slice(3),
    ];
    expect(await refusal(await tarOf(twice))).toBe(
      'The backup is damaged: it holds "secret-key" twice, and a Sideport backup holds each member once.',
    );
    const fileTwice = [...members.slice(0, 4), members[3]!, ...members.slice(4)];
    expect(await refusal(await tarOf(fileTwice))).toBe(
      'The backup is damaged: it holds "files/ipa/1/app.ipa" twice, and a Sideport backup holds each member once.',
    );
  });

  it('refuses a member a backup never holds', async () => {
    const members = backupMembers(dump, files);
    const extra = [
      ...members.slice(0, 3),
      { name: 'notes.txt', body: Buffer.from('hi') },
      ...members.slice(3),
    ];
    expect(await refusal(await tarOf(extra))).toBe(
      'The backup holds "notes.txt", which a Sideport backup never does.',
    );
  });

  it('says which member a damaged backup breaks off in, and what it should have held', async () => {
    const whole = await tarOf(backupMembers(dump, files));
    // Cut inside the first stored file: after its header and 1,000 of its 70,000 bytes.
    const at = whole.indexOf(Buffer.from('files/ipa/1/app.ipa')) + 512 + 1000;
    expect(await refusal(whole.subarray(0, at))).toBe(
      'The backup is damaged: it breaks off inside files/ipa/1/app.ipa, which should have 70000 bytes (Unexpected end of data).',
    );
    // The last entry's database size does not match the dump's.
    const members = backupMembers(dump, files);
    const end = members.at(-1)!;
    end.body = Buffer.from(
      `${JSON.stringify({ files: 2, file_bytes: 70_006, database_bytes: dump.length + 1 })}\n`,
    );
    expect(await refusal(await tarOf(members))).toBe(
      `The backup is damaged: sideport-backup-end.json says database.tar.gz has ${dump.length + 1} bytes, but it has ${dump.length}.`,
    );
    // A database dump cut short inside one of its files.
    const cutDump = gzipSync(Buffer.concat([tarHeader('base/1/1259', 8192), Buffer.alloc(100)]));
    expect(await refusal(await tarOf(backupMembers(cutDump)))).toBe(
      'The backup is damaged: database.tar.gz breaks off inside base/1/1259 (8192 bytes) (Unexpected end of data).',
    );
  });

  it('refuses a database dump of zeros past its caps before unpacking it', async () => {
    // A file that says it holds 2 GiB: past the 1 GiB a database file can be, refused at its header.
    const huge = gzipSync(Buffer.concat([tarHeader('base/1/zeros', 2 ** 31), Buffer.alloc(1024 * 1024)]));
    expect(huge.length).toBeLessThan(10_000);
    expect(await refusal(await tarOf(backupMembers(huge)))).toBe(
      `The backup is refused: database.tar.gz holds base/1/zeros of ${2 ** 31} bytes, and a database file is at most ${2 ** 30} bytes.`,
    );
    // 16 MiB of zeros in 16 KiB of gzip: past a cap of 8 MiB for the whole dump, and nothing of it kept.
    const zeros = await tarOf([{ name: 'base/1/zeros', body: Buffer.alloc(16 * 2 ** 20) }]);
    const bomb = gzipSync(zeros);
    expect(bomb.length).toBeLessThan(64 * 1024);
    const small = { ...RESTORE_LIMITS, databaseBytes: 8 * 2 ** 20 };
    expect(await refusal(await tarOf(backupMembers(bomb)), small)).toBe(
      `The backup is refused: database.tar.gz unpacks to more than ${8 * 2 ** 20} bytes (at base/1/zeros).`,
    );
    // Within the caps it is written to disk as it is read: the file is there whole.
    const { dir, opened } = await restore(await tarOf(backupMembers(bomb)));
    expect(opened).toBe(path.join(dir, 'db'));
    expect(statSync(path.join(dir, 'db', 'base', '1', 'zeros')).size).toBe(16 * 2 ** 20);
  });

  it('verifies a written backup, its database dump included, without writing anything', async () => {
    const file = path.join(work, 'verify.tar');
    writeFileSync(file, good);
    expect(await verifyBackup(file)).toEqual({ databaseBytes: dump.length, files: 2, fileBytes: 70_006 });
    const before = readdirSync(work).length;
    const bad = path.join(work, 'verify-bad.tar');
    const notGzip = Buffer.from('not a gzip at all');
    writeFileSync(bad, await tarOf(backupMembers(notGzip)));
    await expect(verifyBackup(bad)).rejects.toThrow(
      /^The backup is damaged: database\.tar\.gz is not a whole gzip file of a tar \(.+\)\.$/,
    );
    expect(readdirSync(work).length).toBe(before + 1);
  });
});
