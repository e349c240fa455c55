/**
 * The embedded code signature LC_CODE_SIGNATURE points at: a SuperBlob (Security's cscdefs.h)
 * listing its blobs by slot. Unlike the Mach-O header, every field here is big-endian.
 */
import { IpaError } from '../errors.js';
import type { MachOSlice } from './parse.js';

/** CSMAGIC_EMBEDDED_SIGNATURE */
export const SUPERBLOB_MAGIC = 0xfade0cc0;

export interface SignatureBlob {
  /** CSSLOT_*: 0 CodeDirectory, 2 requirements, 5 entitlements, 0x1000 alternate CodeDirectory, 0x10000 CMS... */
  readonly slot: number;
  readonly magic: number;
  /** From the start of the SuperBlob. */
  readonly offset: number;
  /** Including the blob's 8-byte magic and length. */
  readonly length: number;
}

/** The blob index of a SuperBlob; every entry is checked to lie inside it. */
export function readSuperBlobIndex(bytes: Buffer, where: string): SignatureBlob[] {
  const fail = (found: string): IpaError =>
    new IpaError(
      'SIGNATURE_INVALID',
      `Expected an embedded signature SuperBlob (0xfade0cc0) in ${where}, found ${found}.`,
    );
  // SuperBlob: magic, length, count, then count × BlobIndex { type, offset }
  if (bytes.length < 12) throw fail(`${bytes.length} bytes`);
  const magic = bytes.readUInt32BE(0);
  if (magic !== SUPERBLOB_MAGIC) throw fail(`magic 0x${magic.toString(16).padStart(8, '0')}`);
  const length = bytes.readUInt32BE(4);
  const count = bytes.readUInt32BE(8);
  if (length > bytes.length || 12 + count * 8 > length)
    throw fail(`length ${length} and ${count} entries in ${bytes.length} bytes`);
  const blobs: SignatureBlob[] = [];
  for (let i = 0; i < count; i++) {
    const slot = bytes.readUInt32BE(12 + i * 8);
    const offset = bytes.readUInt32BE(16 + i * 8);
    // Each blob starts with magic, length (including these 8 bytes).
    if (offset + 8 > length) throw fail(`slot 0x${slot.toString(16)} at offset ${offset}, past the end`);
    const blobLength = bytes.readUInt32BE(offset + 4);
    if (blobLength < 8 || offset + blobLength > length)
      throw fail(`slot 0x${slot.toString(16)} of ${blobLength} bytes, past the end`);
    blobs.push({ slot, magic: bytes.readUInt32BE(offset), offset, length: blobLength });
  }
  return blobs;
}

/**
 * The SuperBlob bytes of one slice of `file` (as parseMachO returned it) and their index, or
 * undefined when the slice is unsigned.
 */
export function readCodeSignature(
  file: Buffer,
  slice: MachOSlice,
  where = 'Mach-O file',
): { bytes: Buffer; blobs: SignatureBlob[] } | undefined {
  const signature = slice.codeSignature;
  if (signature === undefined) return undefined;
  // linkedit_data_command.dataoff is relative to the slice, not to the fat file.
  if (signature.dataOffset + signature.dataSize > slice.size || slice.offset + slice.size > file.length) {
    throw new IpaError(
      'MACHO_TRUNCATED',
      `Expected the code signature of ${where} (${slice.arch}) at ${signature.dataOffset}+${signature.dataSize} inside its ${slice.size} bytes, found it past the end.`,
    );
  }
  const start = slice.offset + signature.dataOffset;
  const bytes = file.subarray(start, start + signature.dataSize);
  return { bytes, blobs: readSuperBlobIndex(bytes, where) };
}
