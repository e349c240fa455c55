import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildZip } from '../test-support/build-zip.js';
import { centralFieldsOf, openZip } from '../zip/index.js';
import { createDigester, DIGEST_BYTES, MACHO_FLAG_AT } from './digester.js';
import { tasksOf } from './pool.js';

const dir = mkdtempSync(join(tmpdir(), 'ipa-digester-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('createDigester, the module the digest threads run', () => {
  it('digests stored, deflated and streamed entries on this thread, and knows a Mach-O by its magic', async () => {
    const files = [
      { name: 'stored.bin', data: randomBytes(5000), method: 0 as const },
      { name: 'small.txt', data: Buffer.from('hello '.repeat(1000)) },
      // Over a MiB deflated: it streams through an inflater on libuv's pool.
      { name: 'large.txt', data: Buffer.concat([randomBytes(1_500_000), Buffer.alloc(1_500_000, 'a')]) },
      { name: 'code.dat', data: Buffer.concat([Buffer.from('cffaedfe0c000001', 'hex'), randomBytes(100)]) },
    ];
    const path = join(dir, 'files.zip');
    writeFileSync(path, buildZip(files));
    const archive = await openZip(path);
    const digester = createDigester(path);
    try {
      const answer = await digester.run(tasksOf(archive.entries));
      if (!('digests' in answer)) throw new Error(`refused: ${answer.found}`);
      const digests = Buffer.from(answer.digests.buffer);
      files.forEach((file, i) => {
        const at = i * DIGEST_BYTES;
        expect(digests.subarray(at, at + 20)).toEqual(createHash('sha1').update(file.data).digest());
        expect(digests.subarray(at + 20, at + 52)).toEqual(createHash('sha256').update(file.data).digest());
        expect(digests[at + MACHO_FLAG_AT]).toBe(file.name === 'code.dat' ? 1 : 0);
      });
    } finally {
      digester.close();
      archive.close();
    }
  });

  it('answers which entry of a batch the file ends inside, and where', async () => {
    const bytes = buildZip([
      { name: 'a.txt', data: Buffer.from('first') },
      { name: 'b.bin', data: randomBytes(4000), method: 0 },
    ]);
    const path = join(dir, 'cut.zip');
    writeFileSync(path, bytes);
    const archive = await openZip(path);
    archive.close();
    // The same entries, read from a copy cut inside the second entry's data.
    const cutAt = centralFieldsOf(archive.entries[1]!).relativeOffsetOfLocalHeader + 100;
    writeFileSync(path, bytes.subarray(0, cutAt));
    const digester = createDigester(path);
    try {
      expect(await digester.run(tasksOf(archive.entries))).toEqual({
        failed: 1,
        kind: 'truncated',
        found: `the file ends at offset ${cutAt}`,
      });
    } finally {
      digester.close();
    }
  });
});
