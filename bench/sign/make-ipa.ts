/**
 * Builds a benchmark IPA of about `targetBytes`: the shared fixture app with a large arm64
 * executable built here in place of its own, thousands of small resources (half compressible text, half random), and large assets of up to 24 MB, alternating compressible and not.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Writable } from 'node:stream';
import { configure, Uint8ArrayReader, ZipWriter } from '@zip.js/zip.js';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildDataObject, buildExecutable } from '../../packages/ipa/src/test-support/toolchain.js';
import { openZip } from '../../packages/ipa/src/zip/index.js';

configure({ useWebWorkers: false });

const WORDS =
  'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore'.split(
    ' ',
  );
/** Text-like bytes that deflate to about a third, like JSON, nibs and strings files. */
const text = (bytes: number) => {
  const noise = randomBytes(Math.ceil(bytes / 4));
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const word = `${WORDS[noise[i % noise.length]! % WORDS.length]}${noise[(i * 3) % noise.length]}`;
    parts.push(word);
    size += word.length + 1;
  }
  return Buffer.from(parts.join(' ').slice(0, bytes));
};

/**
 * A real arm64 executable of about `sizeBytes` built with clang and ld64.lld: half random, half
 * text in __TEXT,__const, like the code and tables of a large app.
 */
function buildLargeExecutable(sizeBytes: number): Buffer {
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-binary-'));
  try {
    const data = Buffer.concat([randomBytes(Math.floor(sizeBytes / 2)), text(Math.ceil(sizeBytes / 2))]);
    const blob = buildDataObject(dir, 'blob', data);
    const source = 'extern const unsigned char blob[];\nint main(void) { return blob[0]; }\n';
    return readFileSync(buildExecutable(dir, 'app', source, { objects: [blob] }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function makeBenchIpa(fixtureIpa: string, output: string, targetBytes: number) {
  const fixture = await openZip(fixtureIpa);
  const app = 'Payload/very-capable-app.app';
  const keep = await Promise.all(
    fixture.entries
      .filter((e) => !e.isDirectory && !e.name.includes('_CodeSignature/'))
      .map(async (e) => [e.name, await fixture.readEntry(e)] as const),
  );
  fixture.close();
  const file = createWriteStream(output);
  const writer = new ZipWriter(Writable.toWeb(file) as WritableStream, { level: 1, keepOrder: true });
  // The main executable: a built one of about a sixteenth of the IPA, up to 64 MB (signed as it streams).
  const executable = buildLargeExecutable(Math.min(64 * 1024 * 1024, Math.floor(targetBytes / 16)));
  for (const [name, data] of keep) {
    const isExecutable = name.endsWith('/very-capable-app');
    await writer.add(
      name,
      new Uint8ArrayReader(isExecutable ? executable : data),
      isExecutable ? { unixMode: 0o100755 } : {},
    );
  }
  let written = executable.length;
  // 15% of the size in small files (1-20 KB), the rest in large assets.
  const smallBudget = targetBytes * 0.15;
  for (let i = 0; written < smallBudget; i++) {
    const size = 1024 + ((i * 104_729) % (19 * 1024));
    const data = i % 2 === 0 ? text(size) : randomBytes(size);
    await writer.add(
      `${app}/Assets/small/res-${i}.${i % 2 === 0 ? 'json' : 'bin'}`,
      new Uint8ArrayReader(data),
      { level: i % 2 === 0 ? 1 : 0 },
    );
    written += size;
  }
  for (let i = 0; written < targetBytes; i++) {
    const size = Math.min(24 * 1024 * 1024, targetBytes - written);
    const compressible = i % 2 === 0;
    const data = compressible ? text(size) : randomBytes(size);
    await writer.add(
      `${app}/Assets/large/asset-${i}.${compressible ? 'txt' : 'dat'}`,
      new Uint8ArrayReader(data),
      { level: compressible ? 1 : 0 },
    );
    written += size;
  }
  await writer.close();
}
