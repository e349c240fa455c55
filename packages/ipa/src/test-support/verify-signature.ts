/**
 * An independent reader of embedded code signatures for tests: it walks the Mach-O and the
 * SuperBlob itself (not through src/), recomputes every page and special-slot hash and checks the
 * CMS with `openssl cms -verify` against the test CA.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface CodeDirectoryView {
  readonly hashType: number;
  readonly identifier: string;
  readonly teamId?: string;
  readonly specialSlotCount: number;
  readonly codeSlotCount: number;
  readonly codeLimit: number;
  readonly execSegFlags: bigint;
  readonly special: (slot: number) => Buffer;
  readonly bytes: Buffer;
}

export interface SliceSignature {
  readonly offset: number;
  readonly blobs: Map<number, Buffer>;
  readonly codeDirectories: CodeDirectoryView[];
  readonly cms: Buffer;
  readonly entitlementsXml?: string;
}

/** Every slice's signature; throws (with a plain Error) when one is missing or malformed. */
export function readSignatures(file: Buffer): SliceSignature[] {
  const magic = file.readUInt32BE(0);
  const slices: { offset: number; size: number }[] = [];
  if (magic === 0xcafebabe) {
    for (let i = 0; i < file.readUInt32BE(4); i++)
      slices.push({ offset: file.readUInt32BE(8 + i * 20 + 8), size: file.readUInt32BE(8 + i * 20 + 12) });
  } else {
    slices.push({ offset: 0, size: file.length });
  }
  return slices.map(({ offset, size }) => readSlice(file.subarray(offset, offset + size), offset));
}

function readSlice(slice: Buffer, offset: number): SliceSignature {
  const ncmds = slice.readUInt32LE(16);
  let at = slice.readUInt32LE(0) === 0xfeedfacf ? 32 : 28;
  let signatureAt = -1;
  let signatureSize = 0;
  for (let i = 0; i < ncmds; i++) {
    if (slice.readUInt32LE(at) === 0x1d) {
      signatureAt = slice.readUInt32LE(at + 8);
      signatureSize = slice.readUInt32LE(at + 12);
    }
    at += slice.readUInt32LE(at + 4);
  }
  if (signatureAt < 0) throw new Error('no LC_CODE_SIGNATURE');
  if (signatureAt + signatureSize !== slice.length) throw new Error('signature does not end the slice');
  const sb = slice.subarray(signatureAt, signatureAt + signatureSize);
  if (sb.readUInt32BE(0) !== 0xfade0cc0) throw new Error('no SuperBlob');
  const blobs = new Map<number, Buffer>();
  for (let i = 0; i < sb.readUInt32BE(8); i++) {
    const type = sb.readUInt32BE(12 + i * 8);
    const blobAt = sb.readUInt32BE(16 + i * 8);
    blobs.set(type, sb.subarray(blobAt, blobAt + sb.readUInt32BE(blobAt + 4)));
  }
  const codeDirectories = [0, 0x1000, 0x1001]
    .filter((slot) => blobs.has(slot))
    .map((slot) => viewCodeDirectory(blobs.get(slot)!));
  const cmsBlob = blobs.get(0x10000);
  if (cmsBlob === undefined) throw new Error('no CMS blob');
  const entitlements = blobs.get(5);
  return {
    offset,
    blobs,
    codeDirectories,
    cms: cmsBlob.subarray(8),
    ...(entitlements === undefined ? {} : { entitlementsXml: entitlements.subarray(8).toString('utf8') }),
  };
}

function viewCodeDirectory(cd: Buffer): CodeDirectoryView {
  const hashOffset = cd.readUInt32BE(16);
  const hashSize = cd.readUInt8(36);
  const cstring = (at: number): string => cd.toString('utf8', at, cd.indexOf(0, at));
  const teamOffset = cd.readUInt32BE(48);
  return {
    hashType: cd.readUInt8(37),
    identifier: cstring(cd.readUInt32BE(20)),
    ...(teamOffset === 0 ? {} : { teamId: cstring(teamOffset) }),
    specialSlotCount: cd.readUInt32BE(24),
    codeSlotCount: cd.readUInt32BE(28),
    codeLimit: cd.readUInt32BE(32),
    execSegFlags: cd.readBigUInt64BE(80),
    special: (slot) => cd.subarray(hashOffset - slot * hashSize, hashOffset - (slot - 1) * hashSize),
    bytes: cd,
  };
}

const hashName = (type: number): string => (type === 1 ? 'sha1' : 'sha256');

/** Recomputes every page hash of each CodeDirectory over the slice's bytes. */
export function pageHashesMatch(file: Buffer, signature: SliceSignature): boolean {
  const sliceStart = signature.offset;
  return signature.codeDirectories.every((cd) => {
    const hashOffset = cd.bytes.readUInt32BE(16);
    const hashSize = cd.bytes.readUInt8(36);
    for (let page = 0; page < cd.codeSlotCount; page++) {
      const start = sliceStart + page * 4096;
      const end = sliceStart + Math.min((page + 1) * 4096, cd.codeLimit);
      const expected = createHash(hashName(cd.hashType)).update(file.subarray(start, end)).digest();
      if (
        !expected.equals(cd.bytes.subarray(hashOffset + page * hashSize, hashOffset + (page + 1) * hashSize))
      )
        return false;
    }
    return cd.codeSlotCount === Math.ceil(cd.codeLimit / 4096);
  });
}

/** The special slot hash of `bytes` as each CodeDirectory should hold it. */
export function specialSlotMatches(signature: SliceSignature, slot: number, bytes: Buffer): boolean {
  return signature.codeDirectories.every((cd) =>
    createHash(hashName(cd.hashType)).update(bytes).digest().equals(cd.special(slot)),
  );
}

/** `openssl cms -verify` of the signature over the first CodeDirectory, chained to the CA. */
export function opensslVerifies(signature: SliceSignature, caPem: string): { ok: boolean; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'ipa-cms-'));
  try {
    writeFileSync(join(dir, 'sig.der'), signature.cms);
    writeFileSync(join(dir, 'cd.bin'), signature.codeDirectories[0]!.bytes);
    writeFileSync(join(dir, 'ca.pem'), caPem);
    const output = execFileSync(
      'openssl',
      [
        'cms',
        '-verify',
        '-binary',
        '-inform',
        'DER',
        '-in',
        'sig.der',
        '-content',
        'cd.bin',
        '-CAfile',
        'ca.pem',
        '-purpose',
        'any',
        '-out',
        '/dev/null',
      ],
      { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    return { ok: true, output };
  } catch (err) {
    return { ok: false, output: String((err as { stderr?: string }).stderr ?? err) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The CMS as `openssl cms -cmsout -print` shows it, to assert the Apple attributes. */
export function printCms(signature: SliceSignature): string {
  return execFileSync('openssl', ['cms', '-cmsout', '-print', '-inform', 'DER'], {
    input: signature.cms,
    encoding: 'utf8',
  });
}

/** The subjects' common names of the certificates the CMS carries, in its order, as `openssl pkcs7 -print_certs` lists them. */
export function cmsCertificateNames(signature: SliceSignature | Buffer): string[] {
  const der = Buffer.isBuffer(signature) ? signature : signature.cms;
  const printed = execFileSync('openssl', ['pkcs7', '-inform', 'DER', '-print_certs', '-noout'], {
    input: der,
    encoding: 'utf8',
  });
  return printed
    .split('\n')
    .filter((line) => line.startsWith('subject='))
    .map((line) => /(?:=|, )CN = (.+?)(?:, [A-Za-z]+ = |$)/.exec(line)?.[1] ?? line);
}
