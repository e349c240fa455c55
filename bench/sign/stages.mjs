/**
 * The breakdown of a first sign: each stage of signing run alone over the same IPA, in one
 * process started with --expose-gc, with its wall and CPU time (and, for the entry table, the
 * memory it keeps). The stages run one after another, so each figure is that work's own cost on
 * this machine; a sign overlaps them. Prints one JSON line.
 *   node --expose-gc bench/sign/stages.mjs app.ipa id.p12 profile.mobileprovision
 */
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import { closeSync, openSync, readFileSync, readSync, rmSync, writeSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { constants as zlibConstants, crc32, deflateRawSync, inflateRawSync } from 'node:zlib';
import {
  buildCodeResources,
  createCmsSigner,
  loadIdentity,
  openZip,
  signMachO,
} from '../../packages/ipa/dist/index.js';
// Internal: the writer's choice of level per piece of a streamed binary.
import { deflatesWell } from '../../packages/ipa/dist/zip/writer.js';

const [input, p12Path] = process.argv.slice(2);
const BLOCK_BYTES = 4 * 1024 * 1024;
const stages = {};

/** Wall and CPU (every thread) of `work`; `extra` adds figures of its own. */
async function stage(name, work) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const extra = (await work()) ?? {};
  const used = process.cpuUsage(cpu);
  stages[name] = { wallMs: performance.now() - started, cpuMs: (used.user + used.system) / 1000, ...extra };
}

/** Memory kept after a full collection: V8 heap plus the Buffers outside it. */
function retained() {
  globalThis.gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}

// The entry table: yauzl's records and ours, for every entry of the archive.
const before = retained();
let archive;
await stage('entry table', async () => {
  archive = await openZip(input);
});
stages['entry table'].entries = archive.entries.length;
stages['entry table'].retainedMB = (retained() - before) / 1024 / 1024;

const fd = openSync(input, 'r');
const block = Buffer.allocUnsafe(BLOCK_BYTES);
const readRange = (offset, length) => {
  const out = length <= BLOCK_BYTES ? block.subarray(0, length) : Buffer.allocUnsafe(length);
  for (let done = 0; done < length;) done += readSync(fd, out, done, length - done, offset + done);
  return out;
};

await stage('read', () => {
  for (let at = 0; at < archive.sizeBytes; at += BLOCK_BYTES)
    readRange(at, Math.min(BLOCK_BYTES, archive.sizeBytes - at));
});

const executable = archive.entries.find((e) => /\.app\/very-capable-app$/.test(e.name));
const resources = archive.entries.filter(
  (e) => !e.isDirectory && e !== executable && !e.name.includes('_CodeSignature/'),
);
/** An entry's stored bytes (APPNOTE 4.3.7: 30 fixed bytes, then name and extra field). */
const storedBytes = (entry) => {
  const header = Buffer.from(readRange(entry.source.relativeOffsetOfLocalHeader, 30));
  return readRange(
    entry.source.relativeOffsetOfLocalHeader + 30 + header.readUInt16LE(26) + header.readUInt16LE(28),
    entry.compressedSizeBytes,
  );
};

// Inflating and hashing are timed apart over the same pass (both synchronous, main thread).
let inflateMs = 0;
let hashMs = 0;
let contentBytes = 0;
let inflatedBytes = 0;
await stage('inflate + hash', () => {
  for (const entry of resources) {
    const stored = storedBytes(entry);
    let at = performance.now();
    const content = entry.compressionMethod === 8 ? inflateRawSync(stored) : stored;
    inflateMs += performance.now() - at;
    if (entry.compressionMethod === 8) inflatedBytes += content.length;
    at = performance.now();
    createHash('sha1').update(content).digest();
    createHash('sha256').update(content).digest();
    // zlib checks a deflated entry's CRC-32 as it inflates; a stored one's is computed with its hashes.
    if (entry.compressionMethod === 0) crc32(content);
    hashMs += performance.now() - at;
    contentBytes += content.length;
  }
});
stages.inflate = { wallMs: inflateMs, cpuMs: inflateMs, MB: inflatedBytes / 1024 / 1024 };
stages.hash = { wallMs: hashMs, cpuMs: hashMs, MB: contentBytes / 1024 / 1024 };
delete stages['inflate + hash'];

const binary = inflateRawSync(storedBytes(executable));
await stage('deflate of changed entries', () => {
  // As the writer deflates a signed binary: 1 MiB pieces at level 1 (level 0, stored, for those
  // that would not shrink), each ending on a byte boundary.
  for (let at = 0; at < binary.length; at += 1024 * 1024) {
    const piece = binary.subarray(at, at + 1024 * 1024);
    deflateRawSync(piece, { level: deflatesWell(piece, 1) ? 1 : 0, finishFlush: zlibConstants.Z_SYNC_FLUSH });
  }
  return { MB: binary.length / 1024 / 1024 };
});

const output = `${input}.stages-write`;
await stage('write', () => {
  const out = openSync(output, 'w');
  try {
    for (let at = 0; at < archive.sizeBytes; at += BLOCK_BYTES)
      writeSync(out, block, 0, Math.min(BLOCK_BYTES, archive.sizeBytes - at), at);
  } finally {
    closeSync(out);
  }
});
rmSync(output);

const appDir = executable.name.slice(0, executable.name.lastIndexOf('/') + 1);
await stage('CodeResources', () => {
  const digest = { sha1: Buffer.alloc(20, 1), sha256: Buffer.alloc(32, 2) };
  const files = resources
    .filter((e) => e.name.startsWith(appDir))
    .map((e) => ({ path: e.name.slice(appDir.length), ...digest }));
  return { bytes: buildCodeResources(files).length };
});

const identity = loadIdentity({ p12: readFileSync(p12Path), password: 'secret' });
const cms = createCmsSigner(identity);
await stage('Mach-O signing', () => {
  // Page hashes (SHA-1 and SHA-256 of every 4 KiB), CodeDirectories and the CMS signature.
  signMachO(binary, executable.name, {
    identifier: 'org.example.bench',
    teamId: 'TEAM123456',
    isMainBinary: true,
    signer: cms,
    now: new Date(),
  });
  return { MB: binary.length / 1024 / 1024 };
});

closeSync(fd);
archive.close();
console.log(JSON.stringify(stages));
