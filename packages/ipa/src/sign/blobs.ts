/**
 * Code signature blobs (Security framework's cscdefs.h / CSCommon.h). Unlike the Mach-O header,
 * every field of a code signature is big-endian.
 */
import { readSuperBlobIndex } from '../macho/code-signature.js';

export const CSMAGIC_REQUIREMENT = 0xfade0c00;
export const CSMAGIC_REQUIREMENTS = 0xfade0c01;
export const CSMAGIC_CODEDIRECTORY = 0xfade0c02;
export const CSMAGIC_EMBEDDED_SIGNATURE = 0xfade0cc0;
export const CSMAGIC_EMBEDDED_ENTITLEMENTS = 0xfade7171;
export const CSMAGIC_EMBEDDED_DER_ENTITLEMENTS = 0xfade7172;
export const CSMAGIC_BLOBWRAPPER = 0xfade0b01;

export const CSSLOT_CODEDIRECTORY = 0;
export const CSSLOT_INFOSLOT = 1;
export const CSSLOT_REQUIREMENTS = 2;
export const CSSLOT_RESOURCEDIR = 3;
export const CSSLOT_ENTITLEMENTS = 5;
export const CSSLOT_DER_ENTITLEMENTS = 7;
export const CSSLOT_ALTERNATE_CODEDIRECTORIES = 0x1000;
export const CSSLOT_SIGNATURESLOT = 0x10000;

/** A blob: magic, length (including these 8 bytes), payload. */
export function wrapBlob(magic: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt32BE(magic, 0);
  header.writeUInt32BE(payload.length + 8, 4);
  return Buffer.concat([header, payload]);
}

/** SuperBlob: magic, length, count, then count × (type, offset) and the blobs themselves. */
export function buildSuperBlob(blobs: readonly { slot: number; blob: Buffer }[]): Buffer {
  const headerBytes = 12 + blobs.length * 8;
  const header = Buffer.alloc(headerBytes);
  header.writeUInt32BE(CSMAGIC_EMBEDDED_SIGNATURE, 0);
  header.writeUInt32BE(blobs.length, 8);
  let offset = headerBytes;
  blobs.forEach(({ slot, blob }, i) => {
    header.writeUInt32BE(slot, 12 + i * 8);
    header.writeUInt32BE(offset, 16 + i * 8);
    offset += blob.length;
  });
  header.writeUInt32BE(offset, 4);
  return Buffer.concat([header, ...blobs.map((b) => b.blob)]);
}

/** The blobs of an existing SuperBlob by slot; tolerant of what older tools wrote, strict on lengths. */
export function parseSuperBlob(bytes: Buffer, where: string): Map<number, Buffer> {
  return new Map(
    readSuperBlobIndex(bytes, where).map((b) => [b.slot, bytes.subarray(b.offset, b.offset + b.length)]),
  );
}

export type HashName = 'sha1' | 'sha256';
// CS_HASHTYPE_SHA1 1, CS_HASHTYPE_SHA256 2
export const HASH_TYPE: Record<HashName, number> = { sha1: 1, sha256: 2 };
export const HASH_SIZE: Record<HashName, number> = { sha1: 20, sha256: 32 };

export const PAGE_SIZE_LOG2 = 12;
export const PAGE_SIZE = 1 << PAGE_SIZE_LOG2;
/** CS_EXECSEG_MAIN_BINARY: the main executable of an app or app extension. */
export const CS_EXECSEG_MAIN_BINARY = 0x1;
/** CS_EXECSEG_ALLOW_UNSIGNED: set with get-task-allow, as codesign does for debuggable builds. */
export const CS_EXECSEG_ALLOW_UNSIGNED = 0x10;

export interface CodeDirectoryInput {
  readonly hash: HashName;
  readonly identifier: string;
  readonly teamId?: string;
  /** Hashes of special slots 1..n (index 0 is slot 1); undefined slots are zero-filled. */
  readonly specialHashes: readonly (Buffer | undefined)[];
  /** Every page's hash, one after another (hashSize bytes each). */
  readonly pageHashes: Buffer;
  readonly codeLimit: number;
  readonly execSegBase: number;
  readonly execSegLimit: number;
  readonly execSegFlags: number;
}

// CodeDirectory version 0x20400 (execSeg fields): 88 bytes of fixed header.
const CD_VERSION = 0x20400;
const CD_HEADER_BYTES = 88;

export function codeDirectorySize(
  identifier: string,
  teamId: string | undefined,
  hash: HashName,
  specialCount: number,
  pageCount: number,
): number {
  const strings =
    Buffer.byteLength(identifier) + 1 + (teamId === undefined ? 0 : Buffer.byteLength(teamId) + 1);
  return CD_HEADER_BYTES + strings + (specialCount + pageCount) * HASH_SIZE[hash];
}

export function buildCodeDirectory(input: CodeDirectoryInput): Buffer {
  const hashSize = HASH_SIZE[input.hash];
  const identifier = Buffer.from(`${input.identifier}\0`, 'utf8');
  const team = input.teamId === undefined ? Buffer.alloc(0) : Buffer.from(`${input.teamId}\0`, 'utf8');
  const specialCount = input.specialHashes.length;
  const identOffset = CD_HEADER_BYTES;
  const teamOffset = input.teamId === undefined ? 0 : identOffset + identifier.length;
  const hashOffset = identOffset + identifier.length + team.length + specialCount * hashSize;
  if (input.pageHashes.length % hashSize !== 0)
    throw new Error(`page hashes of ${input.pageHashes.length} bytes are not whole ${hashSize}-byte hashes`);
  const pageCount = input.pageHashes.length / hashSize;
  const length = hashOffset + input.pageHashes.length;
  const cd = Buffer.alloc(length);
  cd.writeUInt32BE(CSMAGIC_CODEDIRECTORY, 0); // magic
  cd.writeUInt32BE(length, 4); // length
  cd.writeUInt32BE(CD_VERSION, 8); // version
  cd.writeUInt32BE(0, 12); // flags
  cd.writeUInt32BE(hashOffset, 16); // hashOffset: slot 0; special slot -i sits at hashOffset - i*hashSize
  cd.writeUInt32BE(identOffset, 20); // identOffset
  cd.writeUInt32BE(specialCount, 24); // nSpecialSlots
  cd.writeUInt32BE(pageCount, 28); // nCodeSlots
  cd.writeUInt32BE(input.codeLimit, 32); // codeLimit (32-bit; codeLimit64 is for files over 4 GiB)
  cd.writeUInt8(hashSize, 36); // hashSize
  cd.writeUInt8(HASH_TYPE[input.hash], 37); // hashType
  cd.writeUInt8(0, 38); // platform
  cd.writeUInt8(PAGE_SIZE_LOG2, 39); // pageSize (log2)
  cd.writeUInt32BE(0, 40); // spare2
  cd.writeUInt32BE(0, 44); // scatterOffset
  cd.writeUInt32BE(teamOffset, 48); // teamOffset
  cd.writeUInt32BE(0, 52); // spare3
  cd.writeBigUInt64BE(0n, 56); // codeLimit64
  cd.writeBigUInt64BE(BigInt(input.execSegBase), 64); // execSegBase
  cd.writeBigUInt64BE(BigInt(input.execSegLimit), 72); // execSegLimit
  cd.writeBigUInt64BE(BigInt(input.execSegFlags), 80); // execSegFlags
  identifier.copy(cd, identOffset);
  team.copy(cd, identOffset + identifier.length);
  input.specialHashes.forEach((hash, i) => {
    if (hash === undefined) return;
    if (hash.length !== hashSize)
      throw new Error(`special slot ${i + 1} hash has ${hash.length} bytes, expected ${hashSize}`);
    hash.copy(cd, hashOffset - (i + 1) * hashSize);
  });
  input.pageHashes.copy(cd, hashOffset);
  return cd;
}

export function entitlementsBlob(xml: string): Buffer {
  return wrapBlob(CSMAGIC_EMBEDDED_ENTITLEMENTS, Buffer.from(xml, 'utf8'));
}

export function derEntitlementsBlob(der: Buffer): Buffer {
  return wrapBlob(CSMAGIC_EMBEDDED_DER_ENTITLEMENTS, der);
}

/** Wraps the CMS SignedData (BlobWrapper). */
export function signatureBlob(cms: Buffer): Buffer {
  return wrapBlob(CSMAGIC_BLOBWRAPPER, cms);
}
