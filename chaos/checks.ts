/**
 * What the chaos run checks of the files it gets back: a decrypted IPA is the one its job
 * produced, a signed artifact verifies and is for its user's device; and which stored files,
 * temporary files and agent folders nothing uses any more.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import {
  describeBundle,
  findAppBundle,
  openZipFromBuffer,
  parsePlistDict,
  parseProfile,
  type PlistObject,
} from '@sideport/ipa';
import {
  opensslVerifies,
  pageHashesMatch,
  readSignatures,
  specialSlotMatches,
} from '@sideport/ipa/test-support/verify-signature';
import type { FileStore } from '../apps/server/src/platform/storage.js';

export interface IpaFacts {
  bundleId: string;
  displayName: string;
  /** iTunesMetadata.plist's softwareVersionExternalIdentifier, when the IPA has one. */
  appVerId: number | undefined;
  info: PlistObject;
  infoBytes: Buffer;
  executable: Buffer;
  profile: Buffer | undefined;
}

export async function readIpa(bytes: Buffer): Promise<IpaFacts> {
  const archive = await openZipFromBuffer(bytes);
  try {
    const bundle = findAppBundle(archive.entries);
    const infoEntry = archive.find(`${bundle.dir}/Info.plist`)!;
    const infoBytes = await archive.readEntry(infoEntry);
    const info = parsePlistDict(infoBytes, 'Info.plist');
    const { executable } = describeBundle(info, `${bundle.dir}/Info.plist`);
    const metadataEntry = archive.find('iTunesMetadata.plist');
    const metadata = metadataEntry
      ? parsePlistDict(await archive.readEntry(metadataEntry), 'iTunesMetadata.plist')
      : undefined;
    const profileEntry = archive.find(`${bundle.dir}/embedded.mobileprovision`);
    return {
      bundleId: String(info.CFBundleIdentifier),
      displayName: String(info.CFBundleDisplayName ?? ''),
      appVerId: metadata ? Number(metadata.softwareVersionExternalIdentifier) : undefined,
      info,
      infoBytes,
      executable: await archive.readEntry(archive.find(`${bundle.dir}/${executable}`)!),
      profile: profileEntry ? await archive.readEntry(profileEntry) : undefined,
    };
  } finally {
    archive.close();
  }
}

/** Why a decrypted IPA is not the one its job produced, or undefined when it is. */
export function wrongDecrypted(
  ipa: IpaFacts,
  expected: { bundleId: string; displayName: string; appVerId: number },
) {
  if (ipa.bundleId !== expected.bundleId) return `bundle id ${ipa.bundleId}, not ${expected.bundleId}`;
  if (ipa.appVerId !== expected.appVerId) return `store version ${ipa.appVerId}, not ${expected.appVerId}`;
  if (ipa.displayName !== expected.displayName)
    return `made by "${ipa.displayName}", not "${expected.displayName}"`;
  return undefined;
}

/** Why a signed artifact would not install on its user's device, or undefined when it would. */
export function wrongSigned(
  ipa: IpaFacts,
  expected: { bundleId: string; displayName: string; udid: string; caPem: string },
) {
  if (ipa.bundleId !== expected.bundleId) return `bundle id ${ipa.bundleId}, not ${expected.bundleId}`;
  if (ipa.displayName !== expected.displayName)
    return `signed from "${ipa.displayName}", not "${expected.displayName}"`;
  if (!ipa.profile) return 'no embedded.mobileprovision';
  const devices = parseProfile(ipa.profile).provisionedDevices ?? [];
  if (devices.length !== 1 || devices[0] !== expected.udid)
    return `profile lists ${devices.join(', ')}, not ${expected.udid}`;
  const signatures = readSignatures(ipa.executable);
  if (signatures.length === 0) return 'the executable is not signed';
  for (const signature of signatures) {
    const cms = opensslVerifies(signature, expected.caPem);
    if (!cms.ok) return `the signature does not verify: ${cms.output.trim()}`;
    if (!pageHashesMatch(ipa.executable, signature)) return 'page hashes do not match the executable';
    if (!specialSlotMatches(signature, 1, ipa.infoBytes)) return 'the Info.plist hash does not match';
  }
  return undefined;
}

/** Stored files no row names (the rules of apps/server/src/modules/files/sweep.ts). */
export async function unnamedStoredFiles(
  files: FileStore,
  named: Set<string>,
  versions: Set<string>,
): Promise<Array<{ key: string; sizeBytes: number }>> {
  const found: Array<{ key: string; sizeBytes: number }> = [];
  for await (const file of files.list()) {
    const cache = /^sign-cache\/(\d+)\/(\d+)\.json$/.exec(file.key);
    if (cache) {
      if (!versions.has(`${cache[1]}-${cache[2]}`)) found.push(file);
    } else if (/\.partial$/.test(file.key) || (/^(ipa|signed)\//.test(file.key) && !named.has(file.key))) {
      found.push(file);
    }
  }
  return found;
}

/** Files under `dir` at any depth (nothing when it does not exist). */
export function filesUnder(dir: string): Array<{ path: string; sizeBytes: number }> {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(full);
    return entry.isFile() ? [{ path: full, sizeBytes: statSync(full).size }] : [];
  });
}

/** Folders in `dir` whose names start with `prefix`. */
export function foldersIn(dir: string, prefix: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && entry.name.startsWith(prefix))
      .map((entry) => path.join(dir, entry.name));
  } catch {
    return [];
  }
}
