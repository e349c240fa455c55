/** Whether bytes start like a Mach-O: small enough for the digest threads to import as well. */
import * as C from './constants.js';

/**
 * True when the first 4 bytes are a Mach-O magic: a thin header in either byte order, or a fat
 * header. Nothing else is asked of the file: one that starts like a Mach-O is code to its loader,
 * so it is parsed, and refused when damaged. (A Java class file shares 0xcafebabe and is refused
 * with the damaged ones: telling them apart by the architecture count would let a fat file with
 * many architectures through unchecked.)
 */
export function isMachO(head: Buffer): boolean {
  if (head.length < 4) return false;
  const be = head.readUInt32BE(0);
  // 0xfeedface/0xfeedfacf read big-endian: a big-endian file; 0xcefaedfe/0xcffaedfe: a little-endian one.
  return (
    be === C.MH_MAGIC ||
    be === C.MH_MAGIC_64 ||
    be === C.MH_CIGAM ||
    be === C.MH_CIGAM_64 ||
    be === C.FAT_MAGIC ||
    be === C.FAT_MAGIC_64
  );
}
