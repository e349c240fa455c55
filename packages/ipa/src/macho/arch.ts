import * as C from './constants.js';

/** Names as lipo and Xcode print them. */
export function archName(cpuType: number, cpuSubtype: number): string {
  const subtype = cpuSubtype & C.CPU_SUBTYPE_MASK;
  switch (cpuType) {
    case C.CPU_TYPE_ARM64:
      return subtype === 2 ? 'arm64e' : 'arm64';
    case C.CPU_TYPE_ARM64_32:
      return 'arm64_32';
    case C.CPU_TYPE_ARM:
      // CPU_SUBTYPE_ARM_V6 6, V7 9, V7S 11, V7K 12
      return { 6: 'armv6', 9: 'armv7', 11: 'armv7s', 12: 'armv7k' }[subtype] ?? `arm(${subtype})`;
    case C.CPU_TYPE_X86_64:
      return 'x86_64';
    case C.CPU_TYPE_X86:
      return 'i386';
    default:
      return `cpu(${cpuType >>> 0},${subtype})`;
  }
}
