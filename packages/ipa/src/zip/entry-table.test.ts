import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildZip, SYMLINK_MODE } from '../test-support/build-zip.js';
import { fixtureIpa } from '../test-support/fixtures.js';
import { centralFieldsOf, openZip, type ZipArchive } from './index.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ipa-entry-table-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Everything openZip answers of each entry, its central directory record included. */
const described = (archive: ZipArchive) =>
  archive.entries.map((entry) => ({
    ...entry,
    central: centralFieldsOf(entry),
    dataStart: (entry as unknown as { dataStart: number }).dataStart,
  }));

async function opened<T>(path: string, tables: string, use: (archive: ZipArchive) => Promise<T>) {
  const archive = await openZip(path, { entryTableDir: tables });
  try {
    return await use(archive);
  } finally {
    archive.close();
  }
}

const keptTables = async (tables: string) => (await readdir(tables)).filter((n) => n.endsWith('.json'));

describe('the entry table kept for a file', () => {
  it('opens the same file again with the very entries, records and contents the first opening checked', async () => {
    const tables = join(dir, 'same');
    const first = await opened(fixtureIpa, tables, async (a) => ({
      entries: described(a),
      info: (await a.readEntry(a.find('Payload/very-capable-app.app/Info.plist')!)).toString('base64'),
    }));
    expect(await keptTables(tables)).toHaveLength(1);
    const again = await opened(fixtureIpa, tables, async (a) => ({
      entries: described(a),
      info: (await a.readEntry(a.find('Payload/very-capable-app.app/Info.plist')!)).toString('base64'),
    }));
    expect(again.entries).toEqual(first.entries);
    expect(again.info).toBe(first.info);
    // A plain opening, with no table, agrees as well.
    const plain = await openZip(fixtureIpa);
    expect(described(plain)).toEqual(first.entries);
    plain.close();
  });

  it('keeps symlink targets and raw names, and answers from the table rather than the file', async () => {
    const app = 'Payload/Demo.app/';
    const path = join(dir, 'links.ipa');
    await writeFile(
      path,
      buildZip([
        { name: 'Payload/' },
        { name: app },
        { name: `${app}Info.plist`, data: '<plist/>' },
        { name: `${app}Frameworks/A.framework/A`, data: 'binary' },
        { name: `${app}Frameworks/A.framework/Current`, data: 'A', mode: SYMLINK_MODE },
      ]),
    );
    const tables = join(dir, 'links');
    const first = await opened(path, tables, async (a) => described(a));
    expect(first.find((e) => e.isSymlink)).toMatchObject({ symlinkTarget: 'A' });
    expect(await opened(path, tables, async (a) => described(a))).toEqual(first);

    // The table is what a second opening reads: an entry renamed in it shows renamed.
    const [table] = await keptTables(tables);
    const file = join(tables, table!);
    const text = await readFile(file, 'utf8');
    await writeFile(file, text.replace(`"${app}Info.plist"`, `"${app}Renamed.plist"`));
    expect(await opened(path, tables, async (a) => a.find(`${app}Renamed.plist`)?.name)).toBe(
      `${app}Renamed.plist`,
    );
  });

  it('reads a file written again, or a damaged table, afresh, and keeps one table per folder', async () => {
    const path = join(dir, 'copy.ipa');
    await copyFile(fixtureIpa, path);
    const tables = join(dir, 'renewed');
    const first = await opened(path, tables, async (a) => described(a));
    const [before] = await keptTables(tables);

    // Another file at the same path (another inode and times): another key, the old table gone.
    await rm(path);
    await copyFile(fixtureIpa, path);
    expect(await opened(path, tables, async (a) => described(a))).toEqual(first);
    const after = await keptTables(tables);
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(before);

    // A table that no longer fits the file's end record is read past, and replaced by one that does.
    const kept = join(tables, after[0]!);
    const table = JSON.parse(await readFile(kept, 'utf8')) as { centralStart: number };
    await writeFile(kept, JSON.stringify({ ...table, centralStart: table.centralStart - 1 }));
    expect(await opened(path, tables, async (a) => described(a))).toEqual(first);
    expect(JSON.parse(await readFile(kept, 'utf8'))).toMatchObject({ centralStart: table.centralStart });

    // A table that is not one (a crash mid-write cannot leave one: it is renamed into place whole).
    await writeFile(join(tables, after[0]!), '{"format":1,"rows":[');
    expect(await opened(path, tables, async (a) => described(a))).toEqual(first);
    expect(JSON.parse(await readFile(join(tables, after[0]!), 'utf8'))).toMatchObject({ format: 1 });
  });

  it('checks the file again against other limits: a table kept under looser ones does not let it through', async () => {
    const tables = join(dir, 'limits');
    await opened(fixtureIpa, tables, async () => undefined);
    await expect(
      openZip(fixtureIpa, { entryTableDir: tables, limits: { maxEntryCount: 3 } }),
    ).rejects.toMatchObject({
      code: 'ZIP_TOO_LARGE',
    });
  });
});
