/**
 * cdhashes of a signed Mach-O: the hash of each CodeDirectory, by the CodeDirectory's own hash
 * type. CodeResources seals nested code by them, and the CMS lists them (truncated to 20 bytes).
 */
import { createHash } from 'node:crypto';
import { IpaError } from '../errors.js';
import { readCodeSignature } from '../macho/code-signature.js';
import { parseMachO } from '../macho/parse.js';
import { CSMAGIC_CODEDIRECTORY, CSSLOT_ALTERNATE_CODEDIRECTORIES, CSSLOT_CODEDIRECTORY } from './blobs.js';

export interface CodeDirectoryHash {
  /** CS_HASHTYPE_*: 1 SHA-1, 2 SHA-256, 3 SHA-256 truncated, 4 SHA-384. */
  readonly hashType: number;
  /** 0 for the primary CodeDirectory, 0x1000... for alternates. */
  readonly slot: number;
  /** The full digest of the CodeDirectory blob. */
  readonly digest: Buffer;
  /** Its first 20 bytes: what the kernel, the CMS plist and CodeResources call the cdhash. */
  readonly cdhash: Buffer;
}

export interface SliceCodeDirectoryHashes {
  readonly arch: string;
  readonly codeDirectories: readonly CodeDirectoryHash[];
}

// Security's CS_HASHTYPE_* values; 3 is SHA-256 whose digest is cut to 20 bytes.
const HASH_BY_TYPE: Record<number, { algorithm: string; size: number }> = {
  1: { algorithm: 'sha1', size: 20 },
  2: { algorithm: 'sha256', size: 32 },
  3: { algorithm: 'sha256', size: 20 },
  4: { algorithm: 'sha384', size: 48 },
};
// CSSLOT_ALTERNATE_CODEDIRECTORIES allows five alternates (0x1000-0x1004).
const ALTERNATE_SLOTS = 5;

/** The cdhashes of every slice of a signed thin or fat Mach-O, primary CodeDirectory first. */
export function codeDirectoryHashes(signed: Buffer, where = 'Mach-O file'): SliceCodeDirectoryHashes[] {
  return parseMachO(signed, where).slices.map((slice) => {
    const signature = readCodeSignature(signed, slice, where);
    if (signature === undefined) {
      throw new IpaError(
        'SIGNATURE_INVALID',
        `Expected ${where} (${slice.arch}) to be signed, found no LC_CODE_SIGNATURE.`,
      );
    }
    const codeDirectories = signature.blobs
      .filter(
        (b) =>
          b.slot === CSSLOT_CODEDIRECTORY ||
          (b.slot >= CSSLOT_ALTERNATE_CODEDIRECTORIES &&
            b.slot < CSSLOT_ALTERNATE_CODEDIRECTORIES + ALTERNATE_SLOTS),
      )
      .map((b) => {
        const blob = signature.bytes.subarray(b.offset, b.offset + b.length);
        // CodeDirectory: magic, length, version, flags, hashOffset, identOffset, nSpecialSlots,
        // nCodeSlots, codeLimit, hashSize (36), hashType (37), ...
        if (b.magic !== CSMAGIC_CODEDIRECTORY || blob.length < 38) {
          throw new IpaError(
            'SIGNATURE_INVALID',
            `Expected a CodeDirectory (0xfade0c02) in slot 0x${b.slot.toString(16)} of ${where}, found magic 0x${b.magic.toString(16)} in ${blob.length} bytes.`,
          );
        }
        const hashType = blob.readUInt8(37);
        const hash = HASH_BY_TYPE[hashType];
        if (hash === undefined)
          throw new IpaError(
            'SIGNATURE_INVALID',
            `Expected a known hash type (1 to 4) in the CodeDirectory of ${where}, found ${hashType}.`,
          );
        const digest = createHash(hash.algorithm).update(blob).digest().subarray(0, hash.size);
        return { hashType, slot: b.slot, digest, cdhash: digest.subarray(0, 20) };
      });
    return { arch: slice.arch, codeDirectories };
  });
}
