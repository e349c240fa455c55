import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildZip } from '../test-support/build-zip.js';
import { openZip } from '../zip/index.js';
import { digestEntriesCached } from './cache.js';
import { digestEntries, type FileDigests } from './pool.js';

const dir = mkdtempSync(join(tmpdir(), 'ipa-digest-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const files = [
  { name: 'a.txt', data: Buffer.from('hello '.repeat(1000)) },
  { name: 'b.bin', data: randomBytes(70_000), method: 0 as const },
  { name: 'empty', data: Buffer.alloc(0) },
  // Larger than the worker's in-memory threshold: streamed.
  {
    name: 'big.txt',
    data: Buffer.concat(
      Array.from({ length: 40 }, () => Buffer.concat([randomBytes(100_000), Buffer.alloc(150_000, 'a')])),
    ),
  },
  // Contents that start like Mach-O files, stored, deflated and streamed: the digests say so.
  {
    name: 'thin.dat',
    data: Buffer.concat([Buffer.from('cffaedfe0c000001', 'hex'), randomBytes(100)]),
    method: 0 as const,
  },
  { name: 'fat', data: Buffer.concat([Buffer.from('cafebabe00000001', 'hex'), Buffer.alloc(5000)]) },
  { name: 'big-be', data: Buffer.concat([Buffer.from('feedfacf', 'hex'), randomBytes(3_000_000)]) },
];
const ipa = join(dir, 'in.zip');
writeFileSync(ipa, buildZip(files));
const expected = (data: Buffer) => ({
  sha1: createHash('sha1').update(data).digest(),
  sha256: createHash('sha256').update(data).digest(),
  isMachO:
    data.length >= 4 &&
    [0xfeedface, 0xfeedfacf, 0xcefaedfe, 0xcffaedfe, 0xcafebabe, 0xcafebabf].includes(data.readUInt32BE(0)),
});

/** Flips a bit of the CRC-32 of the entry whose central record is at `at`, in it and in its local header alike. */
function damageCrc(bytes: Buffer, at: number): void {
  const local = bytes.readUInt32LE(at + 42);
  for (const field of [at + 16, local + 14])
    bytes.writeUInt32LE((bytes.readUInt32LE(field) ^ 1) >>> 0, field);
}

describe('digestEntries', () => {
  it('digests stored, deflated, empty and large entries over worker threads', async () => {
    const archive = await openZip(ipa);
    try {
      const digests = await digestEntries(ipa, archive.entries, { workers: 2 });
      for (const file of files) expect(digests.get(file.name)).toEqual(expected(file.data));
    } finally {
      archive.close();
    }
  });

  // Enough entries for a dozen batches: this thread takes some once it is told to help.
  const many = Array.from({ length: 3000 }, (_, i) => ({
    name: `many/${i}.txt`,
    data: Buffer.concat([randomBytes(200 + (i % 7) * 300), Buffer.alloc(i % 5000, 'x')]),
  }));
  const manyZip = join(dir, 'many.zip');
  writeFileSync(manyZip, buildZip(many));

  it('digests with this thread helping a digest thread, the same as threads alone', async () => {
    const archive = await openZip(manyZip);
    try {
      const helped = await digestEntries(manyZip, archive.entries, { helpWhen: Promise.resolve() });
      expect(helped.size).toBe(many.length);
      for (const file of many) expect(helped.get(file.name)).toEqual(expected(file.data));
    } finally {
      archive.close();
    }
  });

  it('refuses a damaged entry that this thread digests: ZIP_INVALID', async () => {
    const bytes = buildZip(many);
    // The last entry's central record gets a wrong CRC-32. Batches go in file order and the digest
    // thread starts with the first few, so the last is most likely this thread's; either way it is refused.
    const end = bytes.length - 22;
    let at = bytes.readUInt32LE(end + 16);
    for (let i = 0; i < many.length - 1; i++)
      at += 46 + bytes.readUInt16LE(at + 28) + bytes.readUInt16LE(at + 30) + bytes.readUInt16LE(at + 32);
    damageCrc(bytes, at);
    const path = join(dir, 'many-bad.zip');
    writeFileSync(path, bytes);
    const archive = await openZip(path);
    try {
      await expect(
        digestEntries(path, archive.entries, { helpWhen: Promise.resolve() }),
      ).rejects.toMatchObject({ code: 'ZIP_INVALID', message: expect.stringContaining(many.at(-1)!.name) });
    } finally {
      archive.close();
    }
  });

  it('refuses an entry whose content does not match its CRC-32: ZIP_INVALID', async () => {
    const bytes = buildZip([{ name: 'a.txt', data: Buffer.from('hello '.repeat(1000)), method: 0 }]);
    bytes[40]! ^= 0xff; // a byte of the stored data (30-byte header + 5-byte name)
    const path = join(dir, 'bad.zip');
    writeFileSync(path, bytes);
    const archive = await openZip(path);
    try {
      await expect(digestEntries(path, archive.entries)).rejects.toMatchObject({ code: 'ZIP_INVALID' });
    } finally {
      archive.close();
    }
  });

  it('refuses a deflated entry, small or streamed, whose content does not match its CRC-32: ZIP_INVALID', async () => {
    // One entry inflated in one call, one streamed; the CRC-32 their headers agree on (offset 16 of
    // the central record, APPNOTE 4.3.12, and 14 of the local one) is off by one bit in both.
    const bytes = buildZip(
      [10_000, 3_000_000].map((size) => ({
        name: `${size}.txt`,
        data: Buffer.concat([randomBytes(size / 2), Buffer.alloc(size / 2, 'a')]),
      })),
    );
    // The end record (the last 22 bytes) gives where the central directory starts (offset 16).
    for (let at = bytes.readUInt32LE(bytes.length - 22 + 16), i = 0; i < 2; i++) {
      damageCrc(bytes, at);
      at += 46 + bytes.readUInt16LE(at + 28) + bytes.readUInt16LE(at + 30) + bytes.readUInt16LE(at + 32);
    }
    const path = join(dir, 'bad-deflated-crc.zip');
    writeFileSync(path, bytes);
    const archive = await openZip(path);
    const results = await Promise.allSettled(archive.entries.map((entry) => digestEntries(path, [entry])));
    archive.close();
    expect(
      results.map((result) => result.status === 'rejected' && (result.reason as { code?: string }).code),
    ).toEqual(['ZIP_INVALID', 'ZIP_INVALID']);
  });
});

describe('digestEntriesCached', () => {
  it("reuses a version's digests the second time", async () => {
    const cacheDir = join(dir, 'cache');
    const archive = await openZip(ipa);
    try {
      const first = await digestEntriesCached(ipa, archive.entries, { cacheDir });
      const second = await digestEntriesCached(ipa, archive.entries, { cacheDir });
      expect(first.fromCache).toBe(false);
      expect(second.fromCache).toBe(true);
      // Kept digests are read through getters: compare what each says.
      const plain = (digests: Map<string, FileDigests>) =>
        [...digests].map(([name, d]) => [
          name,
          d.sha1.toString('hex'),
          d.sha256.toString('hex'),
          d.isMachO ?? false,
        ]);
      expect(plain(second.digests)).toEqual(plain(first.digests));
      expect(readdirSync(join(cacheDir, 'resource-digests'))).toHaveLength(1);
    } finally {
      archive.close();
    }
  });

  it('misses when any entry changed', async () => {
    const cacheDir = join(dir, 'cache2');
    const other = join(dir, 'other.zip');
    writeFileSync(other, buildZip([...files.slice(0, 3), { name: 'big.txt', data: Buffer.from('changed') }]));
    const a = await openZip(ipa);
    const b = await openZip(other);
    try {
      await digestEntriesCached(ipa, a.entries, { cacheDir });
      const result = await digestEntriesCached(other, b.entries, { cacheDir });
      expect(result.fromCache).toBe(false);
      expect(result.digests.get('big.txt')).toEqual(expected(Buffer.from('changed')));
    } finally {
      a.close();
      b.close();
    }
  });
});
