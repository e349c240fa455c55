import { IpaError } from './errors.js';
import { parsePlistDict, readString, type PlistObject } from './plist.js';
import type { ZipArchive, ZipEntry } from './zip/index.js';

export interface AppBundle {
  /** 'Payload/Name.app', without a trailing slash. */
  readonly dir: string;
  /** 'Name.app' */
  readonly name: string;
}

export interface BundleInfo {
  readonly bundleId: string;
  readonly executable: string;
  readonly shortVersion?: string;
  readonly bundleVersion?: string;
  readonly minimumOsVersion?: string;
  readonly displayName?: string;
}

// Info.plist files are a few KiB; anything far larger is not one.
const MAX_INFO_PLIST_BYTES = 8 * 1024 * 1024;
// Mach-O magic and the fat magic fit in 4 bytes; 8 also show the error of a main executable.
const SNIFF_BYTES = 8;

/** The single top-level `Payload/<Name>.app`. Found from every entry's path, since directory entries are optional in zips. */
export function findAppBundle(entries: readonly ZipEntry[]): AppBundle {
  const names = new Set<string>();
  for (const entry of entries) {
    const [top, second] = entry.name.split('/');
    if (
      top === 'Payload' &&
      second !== undefined &&
      second.endsWith('.app') &&
      second.length > '.app'.length
    ) {
      names.add(second);
    }
  }
  const found = [...names].sort();
  if (found.length === 0) {
    throw new IpaError('NO_APP_BUNDLE', 'Expected one Payload/<Name>.app folder in the IPA, found none.');
  }
  if (found.length > 1) {
    throw new IpaError(
      'SEVERAL_APP_BUNDLES',
      `Expected one Payload/<Name>.app folder in the IPA, found ${found.length}: ${found.join(', ')}.`,
    );
  }
  const name = found[0]!;
  return { dir: `Payload/${name}`, name };
}

export async function readInfoPlist(archive: ZipArchive, bundleDir: string): Promise<PlistObject> {
  const path = `${bundleDir}/Info.plist`;
  const entry = archive.find(path);
  if (entry === undefined || entry.isDirectory || entry.isSymlink) {
    throw new IpaError('INFO_PLIST_MISSING', `Expected ${path} in the IPA, found none.`);
  }
  return parsePlistDict(await archive.readEntry(entry, MAX_INFO_PLIST_BYTES), path);
}

/** The fields every later step relies on; CFBundleIdentifier and CFBundleExecutable are required. */
export function describeBundle(info: PlistObject, where: string): BundleInfo {
  const bundleId = readString(info, 'CFBundleIdentifier');
  const executable = readString(info, 'CFBundleExecutable');
  for (const [key, value] of [
    ['CFBundleIdentifier', bundleId],
    ['CFBundleExecutable', executable],
  ] as const) {
    if (value === undefined || value.length === 0) {
      throw new IpaError('INFO_PLIST_INCOMPLETE', `Expected ${where} to name a ${key} string, found none.`);
    }
  }
  const optional = (key: string, field: keyof BundleInfo): Partial<Record<keyof BundleInfo, string>> => {
    const value = readString(info, key);
    return value === undefined ? {} : { [field]: value };
  };
  return {
    bundleId: bundleId!,
    executable: executable!,
    ...optional('CFBundleShortVersionString', 'shortVersion'),
    ...optional('CFBundleVersion', 'bundleVersion'),
    ...optional('MinimumOSVersion', 'minimumOsVersion'),
    ...optional('CFBundleDisplayName', 'displayName'),
  };
}

/**
 * Every Mach-O in the archive, found by its magic (thin in either byte order, or fat), whatever
 * its name, mode or folder: the main executable first (it must be one), then the rest by name.
 * A loader goes by the bytes, so a check that went by names could be walked around. Each entry's
 * first bytes are read in one pass through the file (ZipArchive.readEntryHeads).
 */
export async function findMachOEntries(
  archive: ZipArchive,
  bundle: AppBundle,
  executable: string,
  isMachO: (firstBytes: Buffer) => boolean,
): Promise<ZipEntry[]> {
  const mainPath = `${bundle.dir}/${executable}`;
  const main = archive.find(mainPath);
  if (main === undefined || main.isDirectory || main.isSymlink) {
    throw new IpaError(
      'EXECUTABLE_MISSING',
      `Expected the executable named by CFBundleExecutable at ${mainPath}, found none.`,
    );
  }
  // A symlink's content is its target path (checked to stay inside the bundle), never code.
  const others = archive.entries.filter((entry) => entry !== main && !entry.isDirectory && !entry.isSymlink);
  const [mainHead, ...heads] = await archive.readEntryHeads([main, ...others], SNIFF_BYTES);
  if (!isMachO(mainHead!)) {
    throw new IpaError(
      'MACHO_BAD_MAGIC',
      `Expected ${main.name} to be a Mach-O executable, found bytes 0x${mainHead!.toString('hex')}.`,
    );
  }
  const found = others.filter((_, i) => isMachO(heads[i]!));
  found.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return [main, ...found];
}
