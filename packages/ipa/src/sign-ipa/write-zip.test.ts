import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openZip, type ZipArchive } from '../zip/index.js';
import { createSignedZipWriter } from '../zip/writer.js';
import { copyUnchanged } from './write-zip.js';
import { fixtureIpa } from '../test-support/fixtures.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('unzip');

/** What signIpa does with its writer: unchanged entries copied raw, then the changed ones added. */
async function writeSignedZip(
  source: ZipArchive,
  output: string,
  replaced: ReadonlyMap<string, Buffer>,
): Promise<void> {
  const writer = await createSignedZipWriter(source.path!, output);
  try {
    await copyUnchanged(writer, source, (entry) => !replaced.has(entry.name));
    for (const [name, bytes] of replaced) await writer.add(name, bytes);
    await writer.close();
  } catch (err) {
    await writer.abort();
    throw err;
  }
}

describe.skipIf(skip)('copyUnchanged with the signed zip writer', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'ipa-write-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('copies unchanged entries byte for byte, replaces and adds the changed ones', async () => {
    const out = path.join(dir, 'out.ipa');
    const source = await openZip(fixtureIpa);
    const replaced = new Map([
      ['Payload/very-capable-app.app/PkgInfo', Buffer.from('APPL????changed')],
      ['Payload/very-capable-app.app/new-file.txt', Buffer.from('added')],
    ]);
    await writeSignedZip(source, out, replaced);
    // unzip (not ours) checks every CRC and size of the result.
    execFileSync('unzip', ['-tq', out]);
    expect(execFileSync('unzip', ['-p', out, 'Payload/very-capable-app.app/PkgInfo']).toString()).toBe(
      'APPL????changed',
    );
    expect(execFileSync('unzip', ['-p', out, 'Payload/very-capable-app.app/new-file.txt']).toString()).toBe(
      'added',
    );

    const written = await openZip(out);
    for (const entry of source.entries) {
      if (replaced.has(entry.name) || entry.isDirectory) continue;
      const copy = written.find(entry.name)!;
      expect(copy.compressedSizeBytes).toBe(entry.compressedSizeBytes);
      expect(copy.crc32).toBe(entry.crc32);
      const [a, b] = await Promise.all([source.readEntry(entry), written.readEntry(copy)]);
      expect(b.equals(a)).toBe(true);
    }
    source.close();
    written.close();
    expect(readdirSync(dir)).toEqual(['out.ipa']);
  });

  it('leaves no partial file when writing fails', async () => {
    const out = path.join(dir, 'missing-dir', 'out.ipa');
    const source = await openZip(fixtureIpa);
    await expect(writeSignedZip(source, out, new Map())).rejects.toThrow();
    source.close();
    expect(existsSync(path.dirname(out))).toBe(false);
  });
});
