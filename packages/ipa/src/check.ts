import { describeBundle, findAppBundle, findMachOEntries, readInfoPlist } from './bundle.js';
import { IpaError } from './errors.js';
import { readSlicesFromStream } from './macho/stream-slices.js';
import { defaultMachOInspector, type MachOInspector } from './macho-inspector.js';
import { openZip, type OpenZipOptions, type ZipArchive, type ZipEntry } from './zip/index.js';

export interface SliceReport {
  /** 'arm64', 'arm64e', 'armv7', ... */
  readonly arch: string;
  /** 0 when the slice is not encrypted, including when it has no LC_ENCRYPTION_INFO command. */
  readonly cryptid: number;
}

export interface MachOReport {
  /** Path inside the IPA, e.g. 'Payload/Demo.app/Frameworks/Kit.framework/Kit'. */
  readonly path: string;
  readonly slices: readonly SliceReport[];
}

export interface CheckReport {
  readonly bundleId: string;
  readonly shortVersion: string | null;
  readonly bundleVersion: string | null;
  readonly minimumOsVersion: string | null;
  readonly executable: string;
  readonly sizeBytes: number;
  readonly machOs: readonly MachOReport[];
  /** True only when every slice of every Mach-O has cryptid 0. */
  readonly decrypted: boolean;
}

export interface CheckProgress {
  readonly done: number;
  readonly total: number;
  readonly path: string;
}

export interface CheckOptions extends OpenZipOptions {
  /** One Mach-O is read whole at a time; refuse any larger than this. */
  maxMachOBytes?: number;
  onProgress?: (progress: CheckProgress) => void;
  /** Replaces the Mach-O reader (tests). */
  machO?: MachOInspector;
}

// Buffers are limited to 4 GiB in Node 20; real executables stay far below 2 GiB.
const DEFAULT_MAX_MACHO_BYTES = 2 * 1024 * 1024 * 1024 - 1;

/** Reads an IPA and reports its identity and whether all of its code is decrypted. */
export async function check(ipaPath: string, options: CheckOptions = {}): Promise<CheckReport> {
  const inspector = options.machO ?? defaultMachOInspector;
  const maxMachOBytes = options.maxMachOBytes ?? DEFAULT_MAX_MACHO_BYTES;
  const archive = await openZip(ipaPath, options);
  try {
    const bundle = findAppBundle(archive.entries);
    const info = describeBundle(await readInfoPlist(archive, bundle.dir), `${bundle.dir}/Info.plist`);
    const entries = await findMachOEntries(archive, bundle, info.executable, inspector.isMachO);
    const machOs: MachOReport[] = [];
    for (const entry of entries) {
      if (entry.uncompressedSizeBytes > maxMachOBytes) {
        throw new IpaError(
          'MACHO_TOO_LARGE',
          `Expected ${entry.name} to be at most ${maxMachOBytes} bytes, found ${entry.uncompressedSizeBytes}.`,
        );
      }
      // One Mach-O in memory at a time; the buffer is dropped before the next is read.
      const slices =
        options.machO === undefined
          ? await readMachOSlices(archive, entry)
          : inspector.readSlices(await archive.readEntry(entry, maxMachOBytes), entry.name);
      machOs.push({ path: entry.name, slices });
      options.onProgress?.({ done: machOs.length, total: entries.length, path: entry.name });
    }
    return {
      bundleId: info.bundleId,
      shortVersion: info.shortVersion ?? null,
      bundleVersion: info.bundleVersion ?? null,
      minimumOsVersion: info.minimumOsVersion ?? null,
      executable: info.executable,
      sizeBytes: archive.sizeBytes,
      machOs,
      decrypted: machOs.every((machO) => machO.slices.every((slice) => slice.cryptid === 0)),
    };
  } finally {
    archive.close();
  }
}

/** Every slice's architecture and cryptid, keeping only each slice's header as the binary streams past. */
export async function readMachOSlices(archive: ZipArchive, entry: ZipEntry): Promise<SliceReport[]> {
  return readSlicesFromStream(await archive.openEntryStream(entry), entry.uncompressedSizeBytes, entry.name);
}

/**
 * Refuses Mach-O entries of which any slice is encrypted (MACHO_ENCRYPTED); one that does not
 * parse is refused by the parse. For what signing copies as it is, so it serves no encrypted code.
 */
export async function assertMachOsDecrypted(
  archive: ZipArchive,
  entries: readonly ZipEntry[],
): Promise<void> {
  for (const entry of entries) {
    const encrypted = (await readMachOSlices(archive, entry)).find((slice) => slice.cryptid !== 0);
    if (encrypted !== undefined) {
      throw new IpaError(
        'MACHO_ENCRYPTED',
        `Expected ${entry.name} (${encrypted.arch}) to be decrypted (cryptid 0), found cryptid ${encrypted.cryptid}: decrypt the version first.`,
      );
    }
  }
}
