/** Reads what an existing signature says, for re-signing: the entitlements the app was built with. */
import { isMachOHead, parseMachO } from '../macho/index.js';
import { parsePlistDict, type PlistObject } from '../plist.js';
import { CSSLOT_ENTITLEMENTS, parseSuperBlob } from './blobs.js';

/** The XML entitlements of the first signed slice, or undefined when it has none. */
export function readEmbeddedEntitlements(bytes: Buffer, where = 'Mach-O file'): PlistObject | undefined {
  if (!isMachOHead(bytes)) return undefined;
  for (const slice of parseMachO(bytes, where).slices) {
    const signature = slice.codeSignature;
    if (signature === undefined) continue;
    const start = slice.offset + signature.dataOffset;
    const end = Math.min(start + signature.dataSize, slice.offset + slice.size);
    const blob = parseSuperBlob(bytes.subarray(start, end), where).get(CSSLOT_ENTITLEMENTS);
    // Entitlements blob: magic, length, XML plist
    if (blob === undefined || blob.length <= 8) return undefined;
    return parsePlistDict(blob.subarray(8), `the entitlements of ${where}`);
  }
  return undefined;
}
