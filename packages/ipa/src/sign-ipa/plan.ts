import { posix } from 'node:path';
import { findAppBundle, readInfoPlist } from '../bundle.js';
import { IpaError } from '../errors.js';
import { isMachOHead } from '../macho/index.js';
import type { PlistObject } from '../plist.js';
import type { ZipArchive, ZipEntry } from '../zip/index.js';

/** One bundle to sign: the app, or code nested in it (framework, app extension, watch app). */
export interface BundlePlan {
  /** Archive path of the bundle directory, e.g. 'Payload/A.app/PlugIns/B.appex'. */
  dir: string;
  kind: 'app' | 'appex' | 'framework' | 'bundle';
  info: PlistObject;
  bundleId: string;
  /** Archive path of CFBundleExecutable, when the bundle has one. */
  executable?: string;
  /** Apps and app extensions are main executables: they carry entitlements and the execSeg main flag. */
  isMain: boolean;
  /** Mach-O files that belong to this bundle but are not its executable (loose dylibs). */
  looseCode: string[];
}

export interface SigningPlan {
  app: BundlePlan;
  /** Every bundle, deepest first: nested code is signed before what contains it. */
  inOrder: BundlePlan[];
  /** Archive path -> the bundle directory it belongs to (the deepest containing bundle). */
  ownerOf(path: string): BundlePlan;
}

const NESTED_BUNDLE = /\.(framework|appex|app|xctest|bundle)$/;
const SNIFF_BYTES = 8;

const kindOf = (dir: string, isRoot: boolean): BundlePlan['kind'] => {
  if (isRoot || dir.endsWith('.app')) return 'app';
  if (dir.endsWith('.appex')) return 'appex';
  if (dir.endsWith('.framework')) return 'framework';
  return 'bundle';
};

/** Finds the bundles, their executables and loose code, reading only plists and 8-byte heads. */
export async function planSigning(archive: ZipArchive): Promise<SigningPlan> {
  const root = findAppBundle(archive.entries);
  const dirs = new Set<string>([root.dir]);
  for (const entry of archive.entries) {
    if (!entry.name.startsWith(`${root.dir}/`) || !entry.name.endsWith('/Info.plist')) continue;
    const dir = posix.dirname(entry.name);
    if (NESTED_BUNDLE.test(dir) && dir !== root.dir) dirs.add(dir);
  }
  const bundles: BundlePlan[] = [];
  for (const dir of dirs) {
    const info = await readInfoPlist(archive, dir);
    const bundleId = typeof info.CFBundleIdentifier === 'string' ? info.CFBundleIdentifier : '';
    if (!bundleId)
      throw new IpaError(
        'INFO_PLIST_INCOMPLETE',
        `Expected CFBundleIdentifier in ${dir}/Info.plist, found none.`,
      );
    const exe = typeof info.CFBundleExecutable === 'string' ? `${dir}/${info.CFBundleExecutable}` : undefined;
    const kind = kindOf(dir, dir === root.dir);
    bundles.push({
      dir,
      kind,
      info,
      bundleId,
      isMain: kind === 'app' || kind === 'appex',
      looseCode: [],
      ...(exe ? { executable: exe } : {}),
    });
  }
  const byDepth = [...bundles].sort(
    (a, b) => b.dir.split('/').length - a.dir.split('/').length || (a.dir < b.dir ? -1 : 1),
  );
  const ownerOf = (path: string) => byDepth.find((b) => path.startsWith(`${b.dir}/`))!;
  const executables = new Set(bundles.map((b) => b.executable).filter(Boolean));
  for (const entry of codeCandidates(archive, root.dir)) {
    if (executables.has(entry.name)) continue;
    if (!isMachOHead(await archive.readEntryHead(entry, SNIFF_BYTES))) continue;
    ownerOf(entry.name).looseCode.push(entry.name);
  }
  const app = bundles.find((b) => b.dir === root.dir)!;
  return { app, inOrder: byDepth, ownerOf };
}

/** Archive paths of every Mach-O signing signs: executables and loose dylibs. */
export const codeEntries = (plan: SigningPlan): Set<string> =>
  new Set(plan.inOrder.flatMap((b) => [...(b.executable ? [b.executable] : []), ...b.looseCode]));

/**
 * The entries whose digests CodeResources needs: the app's regular files that signing leaves as
 * they are (not code, not a file it replaces, not an old signature). Their set is the digest
 * cache's key, so it differs by mode only where a mode replaces files (DUP's Info.plists).
 */
export function resourceEntries(
  archive: ZipArchive,
  plan: SigningPlan,
  replaced: { has(name: string): boolean },
): ZipEntry[] {
  const code = codeEntries(plan);
  return archive.entries.filter(
    (e) =>
      !e.isDirectory &&
      !e.isSymlink &&
      e.name.startsWith(`${plan.app.dir}/`) &&
      !code.has(e.name) &&
      !replaced.has(e.name) &&
      !e.name.includes('/_CodeSignature/'),
  );
}

/** Entries that may be code: executable bit, no extension, or .dylib; never inside _CodeSignature or SC_Info. */
function codeCandidates(archive: ZipArchive, rootDir: string): ZipEntry[] {
  return archive.entries.filter((entry) => {
    if (
      entry.isDirectory ||
      entry.isSymlink ||
      entry.uncompressedSizeBytes < 4 ||
      !entry.name.startsWith(`${rootDir}/`)
    )
      return false;
    if (/\/(_CodeSignature|SC_Info)\//.test(entry.name)) return false;
    const ext = posix.extname(entry.name);
    const executableBit = entry.unixMode !== undefined && (entry.unixMode & 0o111) !== 0;
    return executableBit || ext === '' || ext === '.dylib';
  });
}
