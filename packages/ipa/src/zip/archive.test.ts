import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Uint8ArrayReader, Uint8ArrayWriter, ZipWriter } from '@zip.js/zip.js';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import yauzl from 'yauzl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IpaError } from '../errors.js';
import { buildZip, SYMLINK_MODE, type TestZipEntry } from '../test-support/build-zip.js';
import { openZip, openZipFromBuffer, openZipFromReader } from './archive.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ipa-zip-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const app = 'Payload/Demo.app/';
const goodEntries: TestZipEntry[] = [
  { name: 'Payload/' },
  { name: app },
  { name: `${app}Info.plist`, data: '<plist/>' },
  { name: `${app}Frameworks/A.framework/A`, data: 'binary' },
  { name: `${app}Frameworks/A.framework/Current`, data: 'A', mode: SYMLINK_MODE },
];

async function writeFixture(name: string, bytes: Buffer): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, bytes);
  return path;
}

async function refusal(path: string): Promise<IpaError> {
  const error = await openZip(path).then(
    (archive) => {
      archive.close();
      return undefined;
    },
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(IpaError);
  return error as IpaError;
}

async function openAndReadAll(bytes: Buffer): Promise<void> {
  const archive = await openZipFromBuffer(bytes);
  try {
    for (const entry of archive.entries) if (!entry.isDirectory) await archive.readEntry(entry);
  } finally {
    archive.close();
  }
}

describe('openZip', () => {
  it('lists entries with sizes, directories and symlink targets', async () => {
    const archive = await openZip(await writeFixture('good.ipa', buildZip(goodEntries)));
    try {
      expect(archive.entries.map((e) => e.name)).toEqual(goodEntries.map((e) => e.name));
      const link = archive.find(`${app}Frameworks/A.framework/Current`);
      expect(link).toMatchObject({ isSymlink: true, symlinkTarget: 'A', isDirectory: false });
      expect(archive.find(app)).toMatchObject({ isDirectory: true });
      expect(archive.find(`${app}Info.plist`)).toMatchObject({
        uncompressedSizeBytes: 8,
        compressionMethod: 8,
      });
    } finally {
      archive.close();
    }
  });

  it('streams an entry inflated, or raw as stored', async () => {
    const text = 'hello '.repeat(1000);
    const bytes = buildZip([{ name: 'a.txt', data: text }]);
    const archive = await openZipFromBuffer(bytes);
    try {
      const entry = archive.find('a.txt')!;
      expect((await archive.readEntry(entry)).toString()).toBe(text);
      expect((await archive.readEntryHead(entry, 5)).toString()).toBe('hello');
      const raw: Buffer[] = [];
      for await (const chunk of await archive.openEntryStream(entry, { raw: true }))
        raw.push(chunk as Buffer);
      expect(Buffer.concat(raw).length).toBe(entry.compressedSizeBytes);
      expect(entry.compressedSizeBytes).toBeLessThan(text.length);
    } finally {
      archive.close();
    }
  });

  it('reads zip64 archives', async () => {
    const writer = new ZipWriter(new Uint8ArrayWriter(), { zip64: true });
    await writer.add(`${app}Info.plist`, new Uint8ArrayReader(Buffer.from('<plist/>')));
    const bytes = Buffer.from(await writer.close());
    const archive = await openZipFromBuffer(bytes);
    try {
      const entry = archive.find(`${app}Info.plist`)!;
      expect((await archive.readEntry(entry)).toString()).toBe('<plist/>');
    } finally {
      archive.close();
    }
  });

  it('reads through any random-access reader', async () => {
    // Larger than yauzl's end-record search window (64 KiB), so no single read may cover it all.
    const bytes = buildZip([
      ...goodEntries,
      { name: `${app}big.bin`, data: Buffer.alloc(200_000, 1), method: 0 },
    ]);
    const reads: number[] = [];
    class BufferReader extends yauzl.RandomAccessReader {
      override _readStreamForRange(start: number, end: number): Readable {
        reads.push(end - start);
        return Readable.from([bytes.subarray(start, end)]);
      }
    }
    const archive = await openZipFromReader(new BufferReader(), bytes.length);
    try {
      expect((await archive.readEntry(archive.find(`${app}Info.plist`)!)).toString()).toBe('<plist/>');
      expect(Math.max(...reads)).toBeLessThan(bytes.length);
    } finally {
      archive.close();
    }
  });

  it('refuses a file that is not a zip: NOT_A_ZIP', async () => {
    const error = await refusal(await writeFixture('NOT_A_ZIP.ipa', Buffer.from('%PDF-1.7 not an archive')));
    expect(error.code).toBe('NOT_A_ZIP');
    expect(error.message).toBe('Expected a zip archive (an IPA), found bytes 0x25504446.');
  });

  it('refuses an empty file: NOT_A_ZIP', async () => {
    const error = await refusal(await writeFixture('NOT_A_ZIP_empty.ipa', Buffer.alloc(0)));
    expect(error.code).toBe('NOT_A_ZIP');
    expect(error.message).toBe('Expected a zip archive (an IPA), found an empty file.');
  });

  it('refuses a missing file: NOT_A_ZIP', async () => {
    const error = await refusal(join(dir, 'absent.ipa'));
    expect(error.code).toBe('NOT_A_ZIP');
    expect(error.message).toContain('Expected a readable file at');
  });

  it('refuses an archive cut short: ZIP_TRUNCATED', async () => {
    const whole = buildZip(goodEntries);
    const error = await refusal(
      await writeFixture('ZIP_TRUNCATED.ipa', whole.subarray(0, whole.length - 30)),
    );
    expect(error.code).toBe('ZIP_TRUNCATED');
    expect(error.message).toMatch(
      /^Expected a zip end of central directory record, found none .* truncated\.$/,
    );
  });

  it('refuses an archive whose data is cut short behind an intact directory: ZIP_TRUNCATED', async () => {
    // Keep the central directory and end record but drop most of the data before them.
    const whole = buildZip([{ name: 'big.bin', data: Buffer.alloc(4096, 7), method: 0 }]);
    const tail = whole.subarray(whole.length - (46 + 7 + 22));
    const cut = Buffer.concat([whole.subarray(0, 100), tail]);
    const error = await openAndReadAll(cut).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(IpaError);
    expect((error as IpaError).code).toBe('ZIP_TRUNCATED');
  });

  it('refuses an entry whose bytes do not match its CRC-32: ZIP_INVALID', async () => {
    const bytes = buildZip([{ name: 'a.txt', data: 'hello world', method: 0 }]);
    bytes[30 + 'a.txt'.length] = 'H'.charCodeAt(0); // first data byte, after the local header and name
    const error = await openAndReadAll(bytes).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(IpaError);
    expect((error as IpaError).code).toBe('ZIP_INVALID');
    expect((error as IpaError).message).toMatch(
      /^Expected "a\.txt" to have CRC-32 0x0d4a1185, found 0x[0-9a-f]{8}: the archive is damaged\.$/,
    );
  });

  it('refuses a name climbing out with "..": ZIP_SLIP', async () => {
    const bytes = buildZip([...goodEntries, { name: `${app}../../../evil.txt`, data: 'x' }]);
    const error = await refusal(await writeFixture('ZIP_SLIP.ipa', bytes));
    expect(error.code).toBe('ZIP_SLIP');
    expect(error.message).toBe(
      'Expected entry names to stay inside the archive, found "Payload/Demo.app/../../../evil.txt" which climbs out with "..".',
    );
  });

  it('refuses a backslash name climbing out: ZIP_SLIP', async () => {
    const error = await refusal(
      await writeFixture('ZIP_SLIP_backslash.ipa', buildZip([{ name: '..\\evil.txt', data: 'x' }])),
    );
    expect(error.code).toBe('ZIP_SLIP');
  });

  it('refuses an absolute name: ZIP_ABSOLUTE_PATH', async () => {
    const error = await refusal(
      await writeFixture('ZIP_ABSOLUTE_PATH.ipa', buildZip([{ name: '/etc/evil', data: 'x' }])),
    );
    expect(error.code).toBe('ZIP_ABSOLUTE_PATH');
    expect(error.message).toBe('Expected relative entry names, found the absolute path "/etc/evil".');
  });

  it('refuses a drive-letter name: ZIP_ABSOLUTE_PATH', async () => {
    const error = await refusal(
      await writeFixture('ZIP_ABSOLUTE_PATH_drive.ipa', buildZip([{ name: 'C:/evil', data: 'x' }])),
    );
    expect(error.code).toBe('ZIP_ABSOLUTE_PATH');
  });

  it('refuses a symlink leaving its app bundle: SYMLINK_ESCAPES_BUNDLE', async () => {
    const bytes = buildZip([
      ...goodEntries,
      { name: `${app}Frameworks/leak`, data: '../../../etc', mode: SYMLINK_MODE },
    ]);
    const error = await refusal(await writeFixture('SYMLINK_ESCAPES_BUNDLE.ipa', bytes));
    expect(error.code).toBe('SYMLINK_ESCAPES_BUNDLE');
    expect(error.message).toBe(
      'Expected symlink "Payload/Demo.app/Frameworks/leak" to point inside "Payload/Demo.app", found target "../../../etc".',
    );
  });

  it('refuses an absolute symlink target: SYMLINK_ESCAPES_BUNDLE', async () => {
    const bytes = buildZip([{ name: `${app}passwd`, data: '/etc/passwd', mode: SYMLINK_MODE }]);
    const error = await refusal(await writeFixture('SYMLINK_ESCAPES_BUNDLE_absolute.ipa', bytes));
    expect(error.code).toBe('SYMLINK_ESCAPES_BUNDLE');
  });

  it('refuses a symlink escaping through another symlink: SYMLINK_ESCAPES_BUNDLE', async () => {
    // Lexically F.framework/up/../.. stays inside; once "up" is followed it lands in Payload/.
    const bytes = buildZip([
      { name: `${app}Frameworks/F.framework/up`, data: '..', mode: SYMLINK_MODE },
      { name: `${app}Frameworks/F.framework/out`, data: 'up/../..', mode: SYMLINK_MODE },
    ]);
    const error = await refusal(await writeFixture('SYMLINK_ESCAPES_BUNDLE_chained.ipa', bytes));
    expect(error.code).toBe('SYMLINK_ESCAPES_BUNDLE');
    expect(error.message).toBe(
      'Expected symlink "Payload/Demo.app/Frameworks/F.framework/out" to point inside "Payload/Demo.app", found target "up/../..".',
    );
  });

  it('refuses symlinks that loop: SYMLINK_ESCAPES_BUNDLE', async () => {
    const bytes = buildZip([
      { name: `${app}a`, data: 'b', mode: SYMLINK_MODE },
      { name: `${app}b`, data: 'a', mode: SYMLINK_MODE },
    ]);
    const error = await refusal(await writeFixture('SYMLINK_ESCAPES_BUNDLE_loop.ipa', bytes));
    expect(error.code).toBe('SYMLINK_ESCAPES_BUNDLE');
  });

  it('accepts framework-style symlinks that stay inside through other symlinks', async () => {
    const fw = `${app}Frameworks/F.framework/`;
    const bytes = buildZip([
      { name: `${fw}Versions/A/F`, data: 'binary' },
      { name: `${fw}Versions/Current`, data: 'A', mode: SYMLINK_MODE },
      { name: `${fw}F`, data: 'Versions/Current/F', mode: SYMLINK_MODE },
      { name: `${fw}Resources`, data: 'Versions/Current/../../Versions/A', mode: SYMLINK_MODE },
    ]);
    const archive = await openZipFromBuffer(bytes);
    expect(archive.find(`${fw}F`)?.symlinkTarget).toBe('Versions/Current/F');
    archive.close();
  });

  it('refuses a name seen twice: ZIP_DUPLICATE_NAME', async () => {
    const bytes = buildZip([...goodEntries, { name: `${app}Info.plist`, data: '<plist>other</plist>' }]);
    const error = await refusal(await writeFixture('ZIP_DUPLICATE_NAME.ipa', bytes));
    expect(error.code).toBe('ZIP_DUPLICATE_NAME');
    expect(error.message).toBe('Expected each entry name once, found "Payload/Demo.app/Info.plist" twice.');
  });

  it('refuses an entry inflating absurdly: ZIP_BOMB', async () => {
    const zeros = Buffer.alloc(4 * 1024 * 1024); // deflates about 1000:1
    const bytes = buildZip([...goodEntries, { name: `${app}zeros.bin`, data: zeros }]);
    const error = await refusal(await writeFixture('ZIP_BOMB.ipa', bytes));
    expect(error.code).toBe('ZIP_BOMB');
    expect(error.message).toMatch(
      /^Expected "Payload\/Demo\.app\/zeros\.bin" to compress at most 200:1, found \d+:1 \(\d+ bytes inflating to 4194304\)\.$/,
    );
  });

  it('accepts a compressible entry under the ratio threshold size', async () => {
    const archive = await openZipFromBuffer(
      buildZip([{ name: 'small.bin', data: Buffer.alloc(512 * 1024) }]),
    );
    archive.close();
  });

  it('refuses more uncompressed bytes than the cap: ZIP_TOO_LARGE', async () => {
    const bytes = buildZip([
      ...goodEntries,
      { name: `${app}data.bin`, data: Buffer.alloc(2048, 1), method: 0 },
    ]);
    const path = await writeFixture('ZIP_TOO_LARGE.ipa', bytes);
    const error = await openZip(path, { limits: { maxTotalUncompressedBytes: 1024 } }).catch(
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(IpaError);
    expect((error as IpaError).code).toBe('ZIP_TOO_LARGE');
    expect((error as IpaError).message).toMatch(
      /^Expected at most 1024 bytes once uncompressed, found more than \d+ bytes\.$/,
    );
  });

  it('refuses more entries than the cap: ZIP_TOO_LARGE', async () => {
    const error = await openZipFromBuffer(buildZip(goodEntries), { limits: { maxEntryCount: 2 } }).catch(
      (e: unknown) => e,
    );
    expect((error as IpaError).code).toBe('ZIP_TOO_LARGE');
    expect((error as IpaError).message).toBe('Expected at most 2 entries, found 5.');
  });

  it('writes nothing anywhere while refusing archives', async () => {
    const parent = dirname(dir);
    const before = await readdir(parent);
    await refusal(
      await writeFixture('ZIP_SLIP_again.ipa', buildZip([{ name: '../evil-from-ipa-test.txt', data: 'x' }])),
    );
    expect(await readdir(parent)).toEqual(before);
    expect((await readdir(dir)).every((name) => name.endsWith('.ipa'))).toBe(true);
  });

  it('gives IpaError, never a crash, on random bytes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 512 }), async (bytes) => {
        const result = await openZipFromBuffer(Buffer.from(bytes)).then(
          (archive) => archive.close(),
          (err: unknown) => err,
        );
        if (result !== undefined) expect(result).toBeInstanceOf(IpaError);
      }),
      { numRuns: 300 },
    );
  });

  it('gives IpaError, never a crash, on a damaged real archive', async () => {
    const whole = buildZip(goodEntries);
    await fc.assert(
      fc.asyncProperty(fc.nat(whole.length - 1), fc.integer({ min: 0, max: 255 }), async (at, value) => {
        const bytes = Buffer.from(whole);
        bytes[at] = value;
        try {
          await openAndReadAll(bytes);
        } catch (err) {
          expect(err).toBeInstanceOf(IpaError);
        }
      }),
      { numRuns: 300 },
    );
  });
});
