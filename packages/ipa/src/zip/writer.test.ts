import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXECUTABLE_MODE, SYMLINK_MODE, buildZip } from '../test-support/build-zip.js';
import { openZip } from './archive.js';
import { createSignedZipWriter } from './writer.js';
import {
  FLAG_UTF8,
  MADE_BY_UNIX,
  MAX_32,
  centralDirectory,
  localHeader,
  localHeaderLength,
} from './records.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('unzip');

const dir = mkdtempSync(join(tmpdir(), 'ipa-writer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const source = join(dir, 'source.zip');
const random = randomBytes(50_000);
writeFileSync(
  source,
  buildZip([
    { name: 'Payload/' },
    { name: 'Payload/A.app/' },
    { name: 'Payload/A.app/text.txt', data: 'hello '.repeat(500) },
    { name: 'Payload/A.app/random.bin', data: random, method: 0 },
    { name: 'Payload/A.app/A', data: 'binary', mode: EXECUTABLE_MODE },
    { name: 'Payload/A.app/link', data: 'text.txt', mode: SYMLINK_MODE },
    { name: 'Payload/A.app/naïve.txt', data: 'utf-8 name' },
  ]),
);

async function readAll(path: string): Promise<Map<string, { data: string; mode?: number }>> {
  const archive = await openZip(path);
  try {
    const result = new Map<string, { data: string; mode?: number }>();
    for (const entry of archive.entries) {
      const data = entry.isDirectory ? '' : (await archive.readEntry(entry)).toString('latin1');
      result.set(entry.name, { data, ...(entry.unixMode === undefined ? {} : { mode: entry.unixMode }) });
    }
    return result;
  } finally {
    archive.close();
  }
}

describe.skipIf(skip)('createSignedZipWriter', () => {
  it('copies entries byte for byte and adds new ones, readable by yauzl and unzip', async () => {
    const archive = await openZip(source);
    const output = join(dir, 'out.zip');
    const writer = await createSignedZipWriter(source, output);
    try {
      for (const entry of archive.entries) if (entry.name !== 'Payload/A.app/A') await writer.copy(entry);
      await writer.add('Payload/A.app/A', Buffer.from('signed binary '.repeat(100)), {
        unixMode: EXECUTABLE_MODE,
      });
      await writer.add('Payload/A.app/_CodeSignature/CodeResources', Buffer.from('<plist/>'));
      await writer.addDirectory('Payload/A.app/Frameworks');
      await writer.close();
    } finally {
      archive.close();
    }
    const before = await readAll(source);
    const after = await readAll(output);
    for (const [name, value] of before)
      if (name !== 'Payload/A.app/A') expect(after.get(name)).toEqual(value);
    expect(after.get('Payload/A.app/A')).toEqual({
      data: 'signed binary '.repeat(100),
      mode: EXECUTABLE_MODE,
    });
    expect(after.get('Payload/A.app/_CodeSignature/CodeResources')?.data).toBe('<plist/>');
    expect(after.has('Payload/A.app/Frameworks/')).toBe(true);
    expect(execFileSync('unzip', ['-tq', output], { encoding: 'utf8' })).toContain('No errors detected');
    expect(readdirSync(dir).filter((name) => name.includes('partial'))).toEqual([]);
  });

  it('adds a streamed entry whose header is completed after its content', async () => {
    const output = join(dir, 'streamed.zip');
    const parts = [
      Buffer.from('text '.repeat(50_000)),
      randomBytes(300_000),
      Buffer.alloc(0),
      Buffer.from('end'),
    ];
    const writer = await createSignedZipWriter(source, output);
    await writer.add('before.txt', Buffer.from('before'));
    await writer.addStream(
      'Payload/A.app/Big',
      async (sink) => {
        for (const part of parts) await sink(part);
      },
      { unixMode: EXECUTABLE_MODE },
    );
    await writer.add('after.txt', Buffer.from('after'));
    await writer.close();
    const after = await readAll(output);
    expect(after.get('Payload/A.app/Big')).toEqual({
      data: Buffer.concat(parts).toString('latin1'),
      mode: EXECUTABLE_MODE,
    });
    expect(after.get('after.txt')?.data).toBe('after');
    expect(execFileSync('unzip', ['-tq', output], { encoding: 'utf8' })).toContain('No errors detected');
  });

  it('lets the producer reuse one buffer for every chunk of a streamed entry', async () => {
    const output = join(dir, 'reused.zip');
    const content = Buffer.concat([Buffer.from('code '.repeat(400_000)), randomBytes(3_000_000)]);
    const writer = await createSignedZipWriter(source, output);
    await writer.addStream('Payload/A.app/Reused', async (sink) => {
      const buffer = Buffer.alloc(256 * 1024);
      for (let at = 0; at < content.length; at += buffer.length) {
        const n = content.copy(buffer, 0, at, at + buffer.length);
        await sink(buffer.subarray(0, n));
        buffer.fill(0xee); // what a careless producer does next must not reach the archive
      }
    });
    await writer.close();
    const after = await readAll(output);
    expect(after.get('Payload/A.app/Reused')?.data).toBe(content.toString('latin1'));
    expect(execFileSync('unzip', ['-tq', output], { encoding: 'utf8' })).toContain('No errors detected');
  });

  it('writes zip64 end records when the entries outnumber 65,535', async () => {
    const many = join(dir, 'many.zip');
    const writer = await createSignedZipWriter(source, many);
    for (let i = 0; i < 66_000; i++) await writer.add(`f/${i}`, Buffer.from(String(i)), { store: true });
    await writer.close();
    const archive = await openZip(many);
    try {
      expect(archive.entries).toHaveLength(66_000);
      expect((await archive.readEntry(archive.find('f/65999')!)).toString()).toBe('65999');
    } finally {
      archive.close();
    }
  });

  it('refuses the same name twice: ZIP_DUPLICATE_NAME', async () => {
    const writer = await createSignedZipWriter(source, join(dir, 'dup.zip'));
    await writer.add('a', Buffer.from('1'));
    await expect(writer.add('a', Buffer.from('2'))).rejects.toMatchObject({ code: 'ZIP_DUPLICATE_NAME' });
    await writer.abort();
    expect(readdirSync(dir).filter((name) => name.startsWith('dup.zip'))).toEqual([]);
  });
});

describe.skipIf(skip)('localHeaderLength', () => {
  it('is the length of the header localHeader writes, with and without zip64 sizes', () => {
    const record = {
      name: Buffer.from('Payload/A.app/naïve.txt'),
      flags: FLAG_UTF8,
      method: 8,
      dosTime: 0,
      dosDate: 0,
      crc: 0,
      externalAttributes: 0,
      versionMadeBy: MADE_BY_UNIX,
    };
    for (const [compressedSize, uncompressedSize] of [
      [10, 20],
      [1000, MAX_32 + 5],
      [MAX_32, MAX_32 + 1],
    ] as const) {
      expect(localHeaderLength({ ...record, compressedSize, uncompressedSize })).toBe(
        localHeader({ ...record, compressedSize, uncompressedSize }).length,
      );
    }
  });
});

describe('centralDirectory', () => {
  it('lays out each record as APPNOTE 4.3.12 says, with zip64 values for what overflows, in order', () => {
    const record = (name: string, compressedSize: number, uncompressedSize: number, offset: number) => ({
      name: Buffer.from(name),
      flags: FLAG_UTF8,
      method: 8,
      dosTime: 0x6000,
      dosDate: 0x5a21,
      crc: 0xdeadbeef,
      compressedSize,
      uncompressedSize,
      offset,
      externalAttributes: (0o100644 << 16) >>> 0,
      versionMadeBy: MADE_BY_UNIX,
    });
    const records = [
      record('small.txt', 10, 20, 0),
      record('big/naïve.bin', 1000, MAX_32 + 5, MAX_32 + 7),
      record('last', 3, 3, 4096),
    ];
    const bytes = centralDirectory(records);
    const read: Array<Record<string, unknown>> = [];
    for (let at = 0; at < bytes.length;) {
      expect(bytes.readUInt32LE(at)).toBe(0x02014b50);
      const nameLength = bytes.readUInt16LE(at + 28);
      const extraLength = bytes.readUInt16LE(at + 30);
      const extra = bytes.subarray(at + 46 + nameLength, at + 46 + nameLength + extraLength);
      read.push({
        needs: bytes.readUInt16LE(at + 6),
        crc: bytes.readUInt32LE(at + 16),
        compressed: bytes.readUInt32LE(at + 20),
        uncompressed: bytes.readUInt32LE(at + 24),
        name: bytes.subarray(at + 46, at + 46 + nameLength).toString('utf8'),
        offset: bytes.readUInt32LE(at + 42),
        zip64:
          extraLength === 0
            ? []
            : [
                extra.readUInt16LE(0),
                extra.readUInt16LE(2),
                ...[4, 12].map((i) => Number(extra.readBigUInt64LE(i))),
              ],
      });
      at += 46 + nameLength + extraLength;
    }
    expect(read).toEqual([
      {
        needs: 20,
        crc: 0xdeadbeef,
        compressed: 10,
        uncompressed: 20,
        name: 'small.txt',
        offset: 0,
        zip64: [],
      },
      {
        needs: 45,
        crc: 0xdeadbeef,
        compressed: 1000,
        uncompressed: MAX_32,
        name: 'big/naïve.bin',
        offset: MAX_32,
        // Extra field id 1, 16 bytes: the uncompressed size, then the offset (the compressed size fits).
        zip64: [1, 16, MAX_32 + 5, MAX_32 + 7],
      },
      { needs: 20, crc: 0xdeadbeef, compressed: 3, uncompressed: 3, name: 'last', offset: 4096, zip64: [] },
    ]);
  });
});
