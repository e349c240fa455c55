/** Reads what an existing signature says, for re-signing: the entitlements the app was built with. */
import { isMachO } from '../macho/magic.js';
import { machOFile } from '../macho/parse.js';
import { runOnBuffer, runOnReader, type Parse } from '../macho/reader.js';
import { parsePlistDict, type PlistObject } from '../plist.js';
import { CSSLOT_ENTITLEMENTS, parseSuperBlob } from './blobs.js';

/** The XML entitlements of the first signed slice, or undefined when it has none. */
export function readEmbeddedEntitlements(bytes: Buffer, where = 'Mach-O file'): PlistObject | undefined {
  return runOnBuffer(bytes, embeddedEntitlements(bytes.length, where, Infinity));
}

// An embedded signature this large is not one codesign wrote; do not read it into memory.
const MAX_SIGNATURE_BYTES = 16 * 1024 * 1024;

/** The same, for a binary read through a window. */
export function readEmbeddedEntitlementsAt(
  read: (offset: number, length: number) => Promise<Buffer>,
  sizeBytes: number,
  where = 'Mach-O file',
): Promise<PlistObject | undefined> {
  return runOnReader({ sizeBytes, read }, embeddedEntitlements(sizeBytes, where, MAX_SIGNATURE_BYTES));
}

function* embeddedEntitlements(
  sizeBytes: number,
  where: string,
  maxSignatureBytes: number,
): Parse<PlistObject | undefined> {
  if (sizeBytes < 4 || !isMachO(yield { offset: 0, length: 4 })) return undefined;
  for (const slice of (yield* machOFile(sizeBytes, where)).slices) {
    const signature = slice.codeSignature;
    if (signature === undefined) continue;
    if (signature.dataSize > maxSignatureBytes) return undefined;
    // linkedit_data_command.dataoff is relative to the slice; what lies past the slice's end is not read.
    const start = Math.min(signature.dataOffset, slice.size);
    const superBlob = yield {
      offset: slice.offset + start,
      length: Math.min(signature.dataSize, slice.size - start),
    };
    const blob = parseSuperBlob(superBlob, where).get(CSSLOT_ENTITLEMENTS);
    // Entitlements blob: magic, length, XML plist
    if (blob === undefined || blob.length <= 8) return undefined;
    return parsePlistDict(blob.subarray(8), `the entitlements of ${where}`);
  }
  return undefined;
}
