/**
 * Signs one Mach-O (every slice): makes room for the signature at the end of __LINKEDIT, hashes
 * every page, builds the CodeDirectories, requirements, entitlements and the CMS signature.
 */
import { createHash, hash as oneShotHash } from 'node:crypto';
import { IpaError } from '../errors.js';
import { LC_CODE_SIGNATURE, MH_EXECUTE } from '../macho/constants.js';
import { parseMachO, type MachOSlice } from '../macho/parse.js';
import { rebuildMachO } from '../macho/rebuild.js';
import { buildXmlPlist, type PlistObject } from '../plist.js';
import {
  CSSLOT_ALTERNATE_CODEDIRECTORIES,
  CSSLOT_CODEDIRECTORY,
  CSSLOT_DER_ENTITLEMENTS,
  CSSLOT_ENTITLEMENTS,
  CSSLOT_REQUIREMENTS,
  CSSLOT_SIGNATURESLOT,
  CS_EXECSEG_ALLOW_UNSIGNED,
  CS_EXECSEG_MAIN_BINARY,
  PAGE_SIZE,
  buildCodeDirectory,
  HASH_SIZE,
  buildSuperBlob,
  codeDirectorySize,
  derEntitlementsBlob,
  entitlementsBlob,
  signatureBlob,
  type HashName,
} from './blobs.js';
import type { CmsSigner } from './cms.js';
import { encodeDerEntitlements } from './der-entitlements.js';
import { needsSha1 } from './digest-choice.js';
import { buildRequirementsBlob } from './requirements.js';

export interface CodeSignInput {
  readonly identifier: string;
  readonly teamId?: string;
  /** The certificate's common name, for the designated requirement of an Apple-issued identity. */
  readonly commonName?: string;
  /** SHA-1 of the root certificate, for the designated requirement of any other identity (see requirementSubjectFor). */
  readonly anchorSha1?: Buffer;
  /** Raw bytes of the bundle's Info.plist (special slot 1), for a bundle's main executable. */
  readonly infoPlist?: Buffer;
  /** Raw bytes of the bundle's _CodeSignature/CodeResources (special slot 3). */
  readonly codeResources?: Buffer;
  /** Only main executables of apps and app extensions carry entitlements. */
  readonly entitlements?: PlistObject;
  /** Sets CS_EXECSEG_MAIN_BINARY (app and app extension executables). */
  readonly isMainBinary: boolean;
  /** The app targets an iOS older than 11: a SHA-1 CodeDirectory whatever this file's own target (digest-choice.ts). */
  readonly appNeedsSha1?: boolean;
  readonly signer: CmsSigner;
  readonly now: Date;
}

export interface SignedCode {
  readonly bytes: Buffer;
  /** cdhash of the SHA-256 CodeDirectory (first 20 bytes), of the preferred slice. */
  readonly cdHash: Buffer;
}

const SEGMENT_ALIGN_64 = 0x4000;
const SEGMENT_ALIGN_32 = 0x1000;
const alignUp = (n: number, to: number): number => Math.ceil(n / to) * to;

export function signMachO(bytes: Buffer, where: string, input: CodeSignInput): SignedCode {
  const cdHashes: { arch: string; cdHash: Buffer }[] = [];
  const withSha1 = input.appNeedsSha1 === true || needsSha1(parseMachO(bytes, where).slices);
  const signed = rebuildMachO(bytes, where, (sliceBytes, slice) => {
    const result = signSlice(sliceBytes, slice, where, input, withSha1);
    cdHashes.push({ arch: slice.arch, cdHash: result.cdHash });
    return result.bytes;
  });
  const preferred = cdHashes.find((c) => c.arch === 'arm64') ?? cdHashes[0]!;
  return { bytes: signed, cdHash: preferred.cdHash };
}

function signSlice(
  bytes: Buffer,
  slice: MachOSlice,
  where: string,
  input: CodeSignInput,
  withSha1: boolean,
): SignedCode {
  const plan = planSlice(bytes, bytes.length, slice, where, input, withSha1);
  const out = Buffer.alloc(plan.codeLimit + plan.signatureSize);
  bytes.copy(out, 0, 0, Math.min(plan.codeLimit, bytes.length));
  plan.head.copy(out, 0);
  const code = out.subarray(0, plan.codeLimit);
  const { signature, cdHash } = plan.finish({
    sha1: withSha1 ? hashPages(code, 'sha1') : NO_HASHES,
    sha256: hashPages(code, 'sha256'),
  });
  signature.copy(out, plan.codeLimit);
  return { bytes: out, cdHash };
}

/** What signing a slice needs before its pages are hashed, and how to finish once they are. */
export interface SlicePlan {
  /** Code hashed and kept: the slice's bytes up to here (zero-padded past its end). */
  readonly codeLimit: number;
  /** Bytes reserved for the signature after codeLimit. */
  readonly signatureSize: number;
  /** The slice's first bytes with the header edits (LC_CODE_SIGNATURE, __LINKEDIT sizes) applied. */
  readonly head: Buffer;
  /** Whether the signature has a SHA-1 CodeDirectory (digest-choice.ts): its pages' SHA-1 are needed. */
  readonly withSha1: boolean;
  /**
   * Takes every page's SHA-1 (NO_HASHES without a SHA-1 CodeDirectory) and SHA-256, each kind in
   * one buffer (see hashPages).
   */
  finish(pageHashes: { sha1: Buffer; sha256: Buffer }): { signature: Buffer; cdHash: Buffer };
}

/** The SHA-1 page hashes of a signature that has no SHA-1 CodeDirectory. */
export const NO_HASHES = Buffer.alloc(0);

/**
 * Plans the signature of a slice from its first bytes (`bytes` holds at least the header, the load
 * commands and 16 bytes after them) and its size.
 */
/**
 * Where a slice's code ends and its new signature starts: where its old signature starts, or, for
 * a slice never signed, after __LINKEDIT (16-byte aligned). Undefined without __LINKEDIT;
 * planSlice checks the rest of what signing there takes.
 */
export function codeLimitOf(slice: MachOSlice): number | undefined {
  const linkedit = slice.segments.find((s) => s.name === '__LINKEDIT');
  if (linkedit === undefined) return undefined;
  return slice.codeSignature?.dataOffset ?? alignUp(linkedit.fileOffset + linkedit.fileSize, 16);
}

export function planSlice(
  bytes: Buffer,
  sliceSizeBytes: number,
  slice: MachOSlice,
  where: string,
  input: CodeSignInput,
  withSha1: boolean,
): SlicePlan {
  // Signing cannot make encrypted pages runnable on another device: refuse rather than ship an app that cannot launch.
  if (slice.cryptid !== 0) {
    throw new IpaError(
      'MACHO_ENCRYPTED',
      `Expected ${where} (${slice.arch}) to be decrypted (cryptid 0), found cryptid ${slice.cryptid}: decrypt the version first.`,
    );
  }
  const linkedit = slice.segments.find((s) => s.name === '__LINKEDIT');
  if (linkedit === undefined) {
    throw new IpaError(
      'MACHO_UNSUPPORTED',
      `Expected ${where} (${slice.arch}) to have a __LINKEDIT segment to hold the signature, found none.`,
    );
  }
  const lastEnd = Math.max(...slice.segments.map((s) => s.fileOffset + s.fileSize));
  if (lastEnd > sliceSizeBytes) {
    throw new IpaError(
      'MACHO_TRUNCATED',
      `Expected the segments of ${where} (${slice.arch}) to end within its ${sliceSizeBytes} bytes, found one ending at ${lastEnd}.`,
    );
  }
  if (linkedit.fileOffset + linkedit.fileSize !== lastEnd) {
    throw new IpaError(
      'MACHO_UNSUPPORTED',
      `Expected __LINKEDIT to be the last segment of ${where} (${slice.arch}), found another segment after it.`,
    );
  }
  const existing = slice.codeSignature;
  let codeLimit: number;
  if (existing !== undefined) {
    if (existing.dataOffset < linkedit.fileOffset || existing.dataOffset > sliceSizeBytes) {
      throw new IpaError(
        'SIGNATURE_INVALID',
        `Expected the signature of ${where} (${slice.arch}) inside __LINKEDIT, found it at offset ${existing.dataOffset}.`,
      );
    }
    codeLimit = codeLimitOf(slice)!;
  } else {
    const commandsEnd = slice.headerSizeBytes + slice.commandsSizeBytes;
    // The 16 bytes of linkedit_data_command go after the last load command; they must be padding.
    if (slice.freeCommandBytes < 16 || bytes.subarray(commandsEnd, commandsEnd + 16).some((b) => b !== 0)) {
      throw new IpaError(
        'LOAD_COMMANDS_FULL',
        `Expected 16 free zero bytes after the load commands of ${where} (${slice.arch}) for LC_CODE_SIGNATURE, found ${slice.freeCommandBytes}.`,
      );
    }
    codeLimit = codeLimitOf(slice)!;
    if (sliceSizeBytes > codeLimit) {
      throw new IpaError(
        'MACHO_UNSUPPORTED',
        `Expected ${where} (${slice.arch}) to end with __LINKEDIT at ${codeLimit}, found ${sliceSizeBytes - codeLimit} more bytes.`,
      );
    }
  }

  // CodeDirectory.codeLimit is 32-bit; codeLimit64 exists for larger files but no iOS binary needs it.
  if (codeLimit > 0xffffffff) {
    throw new IpaError(
      'MACHO_TOO_LARGE',
      `Expected ${where} (${slice.arch}) to hold under 4 GiB of code, found ${codeLimit} bytes.`,
    );
  }
  const requirements = buildRequirementsBlob({
    identifier: input.identifier,
    ...(input.commonName === undefined ? {} : { commonName: input.commonName }),
    ...(input.anchorSha1 === undefined ? {} : { anchorSha1: input.anchorSha1 }),
  });
  const entitlements =
    input.entitlements === undefined ? undefined : entitlementsBlob(buildXmlPlist(input.entitlements));
  const derEntitlements =
    input.entitlements === undefined
      ? undefined
      : derEntitlementsBlob(encodeDerEntitlements(input.entitlements));
  const specialBlobs: (Buffer | undefined)[] = [
    input.infoPlist,
    requirements,
    input.codeResources,
    undefined,
    entitlements,
    undefined,
    derEntitlements,
  ];
  let specialCount = specialBlobs.length;
  while (specialCount > 0 && specialBlobs[specialCount - 1] === undefined) specialCount--;

  const pageCount = Math.ceil(codeLimit / PAGE_SIZE);
  const otherBlobs = [requirements, entitlements, derEntitlements].filter(
    (b): b is Buffer => b !== undefined,
  );
  // The CodeDirectories (SHA-1 and SHA-256, or SHA-256 alone) and the CMS wrapper, plus these.
  const blobCount = (withSha1 ? 3 : 2) + otherBlobs.length;
  const signatureSize = alignUp(
    12 +
      blobCount * 8 +
      (withSha1 ? codeDirectorySize(input.identifier, input.teamId, 'sha1', specialCount, pageCount) : 0) +
      codeDirectorySize(input.identifier, input.teamId, 'sha256', specialCount, pageCount) +
      otherBlobs.reduce((n, b) => n + b.length, 0) +
      8 +
      input.signer.maxSizeBytes,
    16,
  );

  // The header edits all fall within the load commands and the 16 bytes after them.
  const headLength = Math.min(codeLimit, slice.headerSizeBytes + slice.commandsSizeBytes + 16);
  const out = Buffer.alloc(headLength);
  bytes.copy(out, 0, 0, Math.min(headLength, bytes.length));
  let signatureCommand = existing?.commandOffset;
  if (signatureCommand === undefined) {
    signatureCommand = slice.headerSizeBytes + slice.commandsSizeBytes;
    // mach_header: ncmds at 16, sizeofcmds at 20
    out.writeUInt32LE(slice.commandCount + 1, 16);
    out.writeUInt32LE(slice.commandsSizeBytes + 16, 20);
    out.writeUInt32LE(LC_CODE_SIGNATURE, signatureCommand);
    out.writeUInt32LE(16, signatureCommand + 4);
  }
  // linkedit_data_command: cmd, cmdsize, dataoff, datasize
  out.writeUInt32LE(codeLimit, signatureCommand + 8);
  out.writeUInt32LE(signatureSize, signatureCommand + 12);
  growLinkedit(
    out,
    slice,
    linkedit.commandOffset,
    linkedit.fileOffset,
    codeLimit + signatureSize,
    linkedit.vmSize,
  );

  const text = slice.segments.find((s) => s.name === '__TEXT');
  const isMain = input.isMainBinary && slice.fileType === MH_EXECUTE;
  const getTaskAllow = input.entitlements?.['get-task-allow'] === true;
  const directory = (hash: HashName, pageHashes: Buffer): Buffer =>
    buildCodeDirectory({
      hash,
      identifier: input.identifier,
      ...(input.teamId === undefined ? {} : { teamId: input.teamId }),
      specialHashes: specialBlobs
        .slice(0, specialCount)
        .map((blob) => (blob === undefined ? undefined : digest(hash, blob))),
      pageHashes,
      codeLimit,
      execSegBase: text?.fileOffset ?? 0,
      execSegLimit: text?.fileSize ?? 0,
      execSegFlags: isMain ? CS_EXECSEG_MAIN_BINARY | (getTaskAllow ? CS_EXECSEG_ALLOW_UNSIGNED : 0) : 0,
    });
  return {
    codeLimit,
    signatureSize,
    head: out,
    withSha1,
    finish(pageHashes) {
      if (
        pageHashes.sha1.length !== (withSha1 ? pageCount * HASH_SIZE.sha1 : 0) ||
        pageHashes.sha256.length !== pageCount * HASH_SIZE.sha256
      ) {
        throw new Error(
          `expected ${pageCount} page hashes of ${where}, got ${pageHashes.sha1.length} and ${pageHashes.sha256.length} bytes of them`,
        );
      }
      const cd1 = withSha1 ? directory('sha1', pageHashes.sha1) : undefined;
      const cd256 = directory('sha256', pageHashes.sha256);
      const cd256Hash = digest('sha256', cd256);
      // The CMS signs the first CodeDirectory and lists every one's hash (hash agility).
      const cms = input.signer.sign(
        cd1 ?? cd256,
        [
          ...(cd1 === undefined ? [] : [{ hash: 'sha1' as const, digest: digest('sha1', cd1) }]),
          { hash: 'sha256', digest: cd256Hash },
        ],
        input.now,
      );
      const superBlob = buildSuperBlob([
        { slot: CSSLOT_CODEDIRECTORY, blob: cd1 ?? cd256 },
        { slot: CSSLOT_REQUIREMENTS, blob: requirements },
        ...(entitlements === undefined ? [] : [{ slot: CSSLOT_ENTITLEMENTS, blob: entitlements }]),
        ...(derEntitlements === undefined ? [] : [{ slot: CSSLOT_DER_ENTITLEMENTS, blob: derEntitlements }]),
        ...(cd1 === undefined ? [] : [{ slot: CSSLOT_ALTERNATE_CODEDIRECTORIES, blob: cd256 }]),
        { slot: CSSLOT_SIGNATURESLOT, blob: signatureBlob(cms) },
      ]);
      if (superBlob.length > signatureSize) {
        throw new Error(`signature of ${superBlob.length} bytes exceeds the ${signatureSize} reserved`);
      }
      const signature = Buffer.alloc(signatureSize);
      superBlob.copy(signature);
      return { signature, cdHash: cd256Hash.subarray(0, 20) };
    },
  };
}

/** __LINKEDIT must cover the signature: filesize to the new end, vmsize rounded to the segment alignment. */
function growLinkedit(
  out: Buffer,
  slice: MachOSlice,
  commandOffset: number,
  fileOffset: number,
  end: number,
  oldVmSize: bigint,
): void {
  const fileSize = end - fileOffset;
  if (slice.is64) {
    // segment_command_64: vmsize at 32, filesize at 48
    const vmSize = BigInt(alignUp(fileSize, SEGMENT_ALIGN_64));
    out.writeBigUInt64LE(vmSize > oldVmSize ? vmSize : oldVmSize, commandOffset + 32);
    out.writeBigUInt64LE(BigInt(fileSize), commandOffset + 48);
  } else {
    // segment_command: vmsize at 28, filesize at 36
    const vmSize = BigInt(alignUp(fileSize, SEGMENT_ALIGN_32));
    out.writeUInt32LE(Number(vmSize > oldVmSize ? vmSize : oldVmSize), commandOffset + 28);
    out.writeUInt32LE(fileSize, commandOffset + 36);
  }
}

export function digest(hash: HashName, bytes: Buffer): Buffer {
  return createHash(hash).update(bytes).digest();
}

/**
 * The hash of every page of `code`, one after another in one buffer (into `out` at `at` when
 * given): two small objects per 4 KiB page would weigh some 10 MB on the heap for a 64 MB binary.
 */
export function hashPages(code: Buffer, hash: HashName, out?: Buffer, at = 0): Buffer {
  const size = HASH_SIZE[hash];
  const hashes = out ?? Buffer.alloc(Math.ceil(code.length / PAGE_SIZE) * size);
  // crypto.hash: one call per page, a third faster than a Hash object per page.
  for (let page = 0, to = at; page < code.length; page += PAGE_SIZE, to += size) {
    oneShotHash(hash, code.subarray(page, Math.min(page + PAGE_SIZE, code.length)), 'buffer').copy(
      hashes,
      to,
    );
  }
  return hashes;
}
