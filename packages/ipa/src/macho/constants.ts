/** Values from <mach-o/loader.h> and <mach-o/fat.h>. */

// Thin headers are written in the target's byte order; every iOS target is little-endian.
export const MH_MAGIC = 0xfeedface;
export const MH_MAGIC_64 = 0xfeedfacf;
// The same magics as a little-endian file's first four bytes read big-endian.
export const MH_CIGAM = 0xcefaedfe;
export const MH_CIGAM_64 = 0xcffaedfe;
// Fat headers are always big-endian.
export const FAT_MAGIC = 0xcafebabe;
export const FAT_MAGIC_64 = 0xcafebabf;

export const MH_EXECUTE = 0x2;
export const MH_DYLIB = 0x6;
export const MH_BUNDLE = 0x8;

export const LC_REQ_DYLD = 0x80000000;
export const LC_SEGMENT = 0x1;
export const LC_LOAD_DYLIB = 0xc;
export const LC_ID_DYLIB = 0xd;
export const LC_CODE_SIGNATURE = 0x1d;
export const LC_SEGMENT_64 = 0x19;
export const LC_LAZY_LOAD_DYLIB = 0x20;
export const LC_ENCRYPTION_INFO = 0x21;
export const LC_ENCRYPTION_INFO_64 = 0x2c;
export const LC_VERSION_MIN_MACOSX = 0x24;
export const LC_VERSION_MIN_IPHONEOS = 0x25;
export const LC_VERSION_MIN_TVOS = 0x2f;
export const LC_VERSION_MIN_WATCHOS = 0x30;
export const LC_BUILD_VERSION = 0x32;
/** LC_BUILD_VERSION's platforms (PLATFORM_* of <mach-o/loader.h>). */
export const PLATFORM_MACOS = 1;
export const PLATFORM_IOS = 2;
export const PLATFORM_TVOS = 3;
export const PLATFORM_WATCHOS = 4;
export const LC_LOAD_WEAK_DYLIB = (0x18 | LC_REQ_DYLD) >>> 0;
export const LC_RPATH = (0x1c | LC_REQ_DYLD) >>> 0;
export const LC_REEXPORT_DYLIB = (0x1f | LC_REQ_DYLD) >>> 0;
export const LC_LOAD_UPWARD_DYLIB = (0x23 | LC_REQ_DYLD) >>> 0;

export const CPU_ARCH_ABI64 = 0x01000000;
export const CPU_ARCH_ABI64_32 = 0x02000000;
export const CPU_TYPE_X86 = 7;
export const CPU_TYPE_ARM = 12;
export const CPU_TYPE_ARM64 = CPU_TYPE_ARM | CPU_ARCH_ABI64;
export const CPU_TYPE_ARM64_32 = CPU_TYPE_ARM | CPU_ARCH_ABI64_32;
export const CPU_TYPE_X86_64 = CPU_TYPE_X86 | CPU_ARCH_ABI64;
// The top byte of cpusubtype carries capability bits (pointer authentication ABI on arm64e).
export const CPU_SUBTYPE_MASK = 0x00ffffff;
