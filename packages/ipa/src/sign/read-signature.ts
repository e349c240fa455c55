/** Reads what an existing signature says, for re-signing: the entitlements the app was built with. */
import { isMachOHead, parseMachO } from '../macho/index.js';
import { parseSliceHead } from '../macho/parse.js';
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

// An embedded signature this large is not one codesign wrote; do not read it into memory.
const MAX_SIGNATURE_BYTES = 16 * 1024 * 1024;

/** The same, for a binary read through a window (the first slice's signature only). */
export async function readEmbeddedEntitlementsAt(
  read: (offset: number, length: number) => Promise<Buffer>,
  sizeBytes: number,
  where = 'Mach-O file',
): Promise<PlistObject | undefined> {
  if (sizeBytes < 32) return undefined;
  const first = await read(0, 32);
  if (!isMachOHead(first)) return undefined;
  let offset = 0;
  let size = sizeBytes;
  // fat_header: magic, nfat_arch; the first fat_arch (or fat_arch_64) gives the first slice
  const magic = first.readUInt32BE(0);
  if (magic === 0xcafebabe || magic === 0xcafebabf) {
    const entry = await read(8, 32);
    offset = magic === 0xcafebabf ? Number(entry.readBigUInt64BE(8)) : entry.readUInt32BE(8);
    size = magic === 0xcafebabf ? Number(entry.readBigUInt64BE(16)) : entry.readUInt32BE(12);
  }
  if (offset + size > sizeBytes) return undefined;
  const header = await read(offset, Math.min(size, 32));
  // mach_header: sizeofcmds at 20; 28 or 32 bytes of header
  const headLength = Math.min(
    size,
    (header.readUInt32LE(0) === 0xfeedfacf ? 32 : 28) + header.readUInt32LE(20),
  );
  const slice = parseSliceHead(await read(offset, headLength), size, where);
  const signature = slice.codeSignature;
  if (signature === undefined || signature.dataSize > MAX_SIGNATURE_BYTES || signature.dataOffset >= size)
    return undefined;
  const bytes = await read(
    offset + signature.dataOffset,
    Math.min(signature.dataSize, size - signature.dataOffset),
  );
  const blob = parseSuperBlob(bytes, where).get(CSSLOT_ENTITLEMENTS);
  if (blob === undefined || blob.length <= 8) return undefined;
  return parsePlistDict(blob.subarray(8), `the entitlements of ${where}`);
}
