/**
 * Hostile archives whose entries share, hide or misdescribe bytes, each written to a file named
 * after the error it raises (yauzl's test/failure/*.zip style) and opened as an upload would be.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IpaError } from '../errors.js';
import { assembleZip, buildZip, zipRecord, type ZipRecord } from '../test-support/build-zip.js';
import { openZip } from './archive.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ipa-layout-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const app = 'Payload/Demo.app/';

async function refusal(name: string, bytes: Buffer): Promise<IpaError> {
  const path = join(dir, name);
  await writeFile(path, bytes);
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

async function opens(bytes: Buffer): Promise<string[]> {
  const path = join(dir, 'good.ipa');
  await writeFile(path, bytes);
  const archive = await openZip(path);
  try {
    for (const entry of archive.entries) if (!entry.isDirectory) await archive.readEntry(entry);
    return archive.entries.map((entry) => entry.name);
  } finally {
    archive.close();
  }
}

/** Central headers pointing where `offsets` say, records laid out as `body` is. */
function withOffsets(records: readonly ZipRecord[], offsets: readonly number[]): Buffer[] {
  return records.map((record, i) => {
    const central = Buffer.from(record.central);
    central.writeUInt32LE(offsets[i]!, 42);
    return central;
  });
}

const recordBytes = (record: ZipRecord): Buffer => Buffer.concat([record.local, record.data]);

/** A copy of a local (30, 26) or central (46, 28) header with another name. */
function renamed(header: Buffer, fixedBytes: number, lengthAt: number, name: string): Buffer {
  const bytes = Buffer.concat([header.subarray(0, fixedBytes), Buffer.from(name)]);
  bytes.writeUInt16LE(Buffer.byteLength(name), lengthAt);
  return bytes;
}

describe('archive layout', () => {
  it('refuses central entries that share one local record: ZIP_OVERLAP', async () => {
    // The probe's shape: 100 entries over one 4 MiB record, a 4 MB upload declaring 419 MB.
    const data = randomBytes(4 * 1024 * 1024);
    const first = zipRecord({ name: `${app}asset-0.bin`, data, method: 0 });
    // Each central entry has the shared record's sizes and CRC, its own name, and offset 0.
    const centrals = Array.from({ length: 100 }, (_, i) =>
      renamed(first.central, 46, 28, `${app}asset-${i}.bin`),
    );
    const error = await refusal('ZIP_OVERLAP_shared_record.ipa', assembleZip(recordBytes(first), centrals));
    expect(error.code).toBe('ZIP_OVERLAP');
    expect(error.message).toBe(
      `Expected each entry's bytes to follow the previous entry's, found "${app}asset-1.bin" starting at offset 0, inside "${app}asset-0.bin" (which ends at ${recordBytes(first).length}).`,
    );
  });

  it("refuses an entry whose record lies inside another entry's data: ZIP_OVERLAP", async () => {
    // A's stored bytes carry a whole local record for B; B's central entry points into them.
    const inner = zipRecord({ name: `${app}B`, data: 'hidden', method: 0 });
    const outer = zipRecord({
      name: `${app}A`,
      data: Buffer.concat([Buffer.alloc(100, 1), recordBytes(inner), Buffer.alloc(50, 2)]),
      method: 0,
    });
    const body = recordBytes(outer);
    const bytes = assembleZip(body, withOffsets([outer, inner], [0, outer.local.length + 100]));
    const error = await refusal('ZIP_OVERLAP_nested_record.ipa', bytes);
    expect(error.code).toBe('ZIP_OVERLAP');
    expect(error.message).toBe(
      `Expected each entry's bytes to follow the previous entry's, found "${app}B" starting at offset ${outer.local.length + 100}, inside "${app}A" (which ends at ${body.length}).`,
    );
  });

  it('refuses an entry whose data runs into the central directory: ZIP_OVERLAP', async () => {
    const record = zipRecord({ name: `${app}A`, data: 'short', method: 0 });
    // Local and central headers agree on a size that covers the central directory too.
    const size = record.data.length + record.central.length;
    const local = Buffer.from(record.local);
    local.writeUInt32LE(size, 18);
    local.writeUInt32LE(size, 22);
    const central = Buffer.from(record.central);
    central.writeUInt32LE(size, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt32LE(0, 42);
    const body = Buffer.concat([local, record.data]);
    const error = await refusal('ZIP_OVERLAP_central_directory.ipa', assembleZip(body, [central]));
    expect(error.code).toBe('ZIP_OVERLAP');
    expect(error.message).toBe(
      `Expected "${app}A" to end before the central directory at offset ${body.length}, found it ends at ${local.length + size}.`,
    );
  });

  it('refuses a local record that no central entry lists: ZIP_UNLISTED_DATA', async () => {
    // A streaming extractor would install Hidden; a reader of the central directory never sees it.
    const a = zipRecord({ name: `${app}A`, data: 'a' });
    const hidden = zipRecord({ name: `${app}Hidden`, data: randomBytes(64) });
    const b = zipRecord({ name: `${app}B`, data: 'b' });
    const body = Buffer.concat([recordBytes(a), recordBytes(hidden), recordBytes(b)]);
    const bytes = assembleZip(
      body,
      withOffsets([a, b], [0, recordBytes(a).length + recordBytes(hidden).length]),
    );
    const error = await refusal('ZIP_UNLISTED_DATA.ipa', bytes);
    expect(error.code).toBe('ZIP_UNLISTED_DATA');
    expect(error.message).toBe(
      `Expected the entries to follow one another up to the central directory, found ${recordBytes(hidden).length} bytes at offset ${recordBytes(a).length} that no central directory entry lists.`,
    );
  });

  it('refuses bytes between the last entry and the central directory: ZIP_UNLISTED_DATA', async () => {
    const a = zipRecord({ name: `${app}A`, data: 'a' });
    const bytes = assembleZip(Buffer.concat([recordBytes(a), Buffer.alloc(10)]), withOffsets([a], [0]));
    expect((await refusal('ZIP_UNLISTED_DATA_trailing.ipa', bytes)).code).toBe('ZIP_UNLISTED_DATA');
  });

  const fields: Array<[string, (local: Buffer) => void, string]> = [
    [
      'name',
      (local) => local.write('X', 30 + app.length),
      `name its central directory entry gives ("${app}A.txt"), found "${app}X.txt"`,
    ],
    [
      'compression method',
      (local) => local.writeUInt16LE(0, 8),
      'compression method its central directory entry gives (8), found 0',
    ],
    ['CRC-32', (local) => local.writeUInt32LE(0x12345678, 14), 'found 0x12345678'],
    [
      'compressed size',
      (local) => local.writeUInt32LE(local.readUInt32LE(18) + 1, 18),
      'compressed size its central directory entry gives',
    ],
    [
      'uncompressed size',
      (local) => local.writeUInt32LE(999, 22),
      'uncompressed size its central directory entry gives (2000), found 999',
    ],
    [
      'data descriptor flag',
      (local) => local.writeUInt16LE(0x0808, 6),
      'data descriptor flag its central directory entry gives (clear), found set',
    ],
  ];
  it.each(fields)(
    'refuses a local header whose %s differs from the central entry: ZIP_HEADER_MISMATCH',
    async (field, edit, found) => {
      const record = zipRecord({ name: `${app}A.txt`, data: 'x'.repeat(2000) });
      const local = Buffer.from(record.local);
      edit(local);
      const bytes = assembleZip(Buffer.concat([local, record.data]), withOffsets([record], [0]));
      const error = await refusal(`ZIP_HEADER_MISMATCH_${field.replace(/\W/g, '_')}.ipa`, bytes);
      expect(error.code).toBe('ZIP_HEADER_MISMATCH');
      expect(error.message).toContain(
        `Expected the local header of "${app}A.txt" at offset 0 to give the ${field}`,
      );
      expect(error.message).toContain(found);
    },
  );

  /** A record whose CRC and sizes follow its data in a descriptor (flag bit 3), as streaming writers make them. */
  function withDescriptor(
    name: string,
    content: Buffer,
    descriptor: (crc: number, compressed: number, size: number) => Buffer,
  ): { body: Buffer; central: Buffer } {
    const record = zipRecord({ name, data: content });
    const local = Buffer.from(record.local);
    const crc = local.readUInt32LE(14);
    local.writeUInt16LE(0x0808, 6);
    local.fill(0, 14, 26);
    const central = Buffer.from(record.central);
    central.writeUInt16LE(0x0808, 8);
    central.writeUInt32LE(0, 42);
    return {
      body: Buffer.concat([local, record.data, descriptor(crc, record.data.length, content.length)]),
      central,
    };
  }
  const descriptor32 =
    (signed: boolean) =>
    (crc: number, compressed: number, size: number): Buffer => {
      const bytes = Buffer.alloc(16);
      bytes.writeUInt32LE(0x08074b50, 0);
      bytes.writeUInt32LE(crc, 4);
      bytes.writeUInt32LE(compressed, 8);
      bytes.writeUInt32LE(size, 12);
      return signed ? bytes : bytes.subarray(4);
    };

  it('reads entries with data descriptors, signed or not', async () => {
    const content = Buffer.from('descriptor '.repeat(100));
    for (const signed of [true, false]) {
      const { body, central } = withDescriptor(`${app}D.txt`, content, descriptor32(signed));
      const b = zipRecord({ name: `${app}B.txt`, data: 'after' });
      const bytes = assembleZip(Buffer.concat([body, recordBytes(b)]), [
        central,
        withOffsets([b], [body.length])[0]!,
      ]);
      expect(await opens(bytes)).toEqual([`${app}D.txt`, `${app}B.txt`]);
    }
  });

  it('refuses a data descriptor that differs from the central entry: ZIP_HEADER_MISMATCH', async () => {
    const content = Buffer.from('descriptor '.repeat(100));
    const { body, central } = withDescriptor(`${app}D.txt`, content, (crc, compressed, size) =>
      descriptor32(true)(crc, compressed * 100, size),
    );
    const error = await refusal('ZIP_HEADER_MISMATCH_descriptor.ipa', assembleZip(body, [central]));
    expect(error.code).toBe('ZIP_HEADER_MISMATCH');
    expect(error.message).toMatch(
      /^Expected the data descriptor of "Payload\/Demo\.app\/D\.txt" at offset \d+ to repeat the CRC-32 0x[0-9a-f]{8} and sizes \d+\/1100 of its central directory entry, found bytes 0x504b0708[0-9a-f]+\.$/,
    );
  });

  it('refuses a zip64 local size that differs from the central entry: ZIP_HEADER_MISMATCH', async () => {
    const record = zipRecord({ name: `${app}Z.bin`, data: randomBytes(300), method: 0 });
    // Both sizes 0xffffffff, then a zip64 extra field (id 1) with uncompressed and compressed sizes.
    const extra = Buffer.alloc(20);
    extra.writeUInt16LE(1, 0);
    extra.writeUInt16LE(16, 2);
    extra.writeBigUInt64LE(300n, 4);
    extra.writeBigUInt64LE(301n, 12);
    const local = Buffer.from(record.local);
    local.writeUInt32LE(0xffffffff, 18);
    local.writeUInt32LE(0xffffffff, 22);
    local.writeUInt16LE(extra.length, 28);
    const bytes = assembleZip(Buffer.concat([local, extra, record.data]), withOffsets([record], [0]));
    const error = await refusal('ZIP_HEADER_MISMATCH_zip64.ipa', bytes);
    expect(error.code).toBe('ZIP_HEADER_MISMATCH');
    expect(error.message).toBe(
      `Expected the local header of "${app}Z.bin" at offset 0 to give the compressed size its central directory entry gives (300), found 301.`,
    );
  });

  it('refuses thousands of entries each under the per-entry ratio that inflate to gigabytes: ZIP_BOMB', async () => {
    // The probe's shape: 4,000 entries of 1 MiB of zeros, a 4.7 MB upload declaring 4.2 GB.
    const zeros = deflateRawSync(Buffer.alloc(1024 * 1024));
    const template = zipRecord({ name: `${app}z`, data: Buffer.alloc(1024 * 1024) });
    expect(template.data).toEqual(zeros);
    const body: Buffer[] = [];
    const centrals: Buffer[] = [];
    let offset = 0;
    for (let i = 0; i < 4000; i++) {
      const local = renamed(template.local, 30, 26, `${app}zeros/${i}.bin`);
      const central = renamed(template.central, 46, 28, `${app}zeros/${i}.bin`);
      central.writeUInt32LE(offset, 42);
      body.push(local, zeros);
      centrals.push(central);
      offset += local.length + zeros.length;
    }
    const bytes = assembleZip(Buffer.concat(body), centrals);
    const error = await refusal('ZIP_BOMB_archive.ipa', bytes);
    expect(error.code).toBe('ZIP_BOMB');
    expect(error.message).toMatch(
      /^Expected the archive to compress at most 40:1 as a whole, found \d+:1 \(4000 entries of \d+ stored bytes inflating to 4194304000\)\.$/,
    );
  });

  it('accepts a small archive that compresses well', async () => {
    const bytes = buildZip([
      { name: `${app}a.txt`, data: Buffer.alloc(512 * 1024, 'a') },
      { name: `${app}b.txt`, data: Buffer.alloc(512 * 1024, 'b') },
    ]);
    expect(await opens(bytes)).toEqual([`${app}a.txt`, `${app}b.txt`]);
  });

  it('refuses entries it could not inflate to check: ZIP_INVALID', async () => {
    const encrypted = zipRecord({ name: `${app}E`, data: 'secret' });
    for (const header of [encrypted.local, encrypted.central])
      header.writeUInt16LE(0x0801, header === encrypted.local ? 6 : 8);
    let error = await refusal(
      'ZIP_INVALID_encrypted.ipa',
      assembleZip(recordBytes(encrypted), withOffsets([encrypted], [0])),
    );
    expect(error.message).toBe(`Expected entries without zip encryption, found "${app}E" encrypted.`);
    const bzip2 = zipRecord({ name: `${app}B`, data: 'bzip2' });
    bzip2.local.writeUInt16LE(12, 8);
    bzip2.central.writeUInt16LE(12, 10);
    error = await refusal(
      'ZIP_INVALID_method.ipa',
      assembleZip(recordBytes(bzip2), withOffsets([bzip2], [0])),
    );
    expect(error.code).toBe('ZIP_INVALID');
    expect(error.message).toBe(
      `Expected "${app}B" to be stored (method 0) or deflated (method 8), found method 12.`,
    );
  });
});
