import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import yazl from 'yazl';
import {
  buildBinaryPlist,
  buildXmlPlist,
  describeBundle,
  findAppBundle,
  openZip,
  parseMachO,
  readInfoPlist,
  type PlistObject,
} from '@sideport/ipa';

/** The repository's real Xcode-built arm64 app (cryptid 0), see fixtures/PROVENANCE.md. */
export const SAMPLE_SOURCE_IPA = path.resolve(
  import.meta.dirname,
  '../../../../fixtures/binaries/fastlane_very-capable-app_arm64_cryptid0.ipa',
);

export interface SampleIpaOptions {
  /** An IPA to relabel (the repository's sample app by default). */
  source?: string;
  output: string;
  bundleId: string;
  version: string;
  /** Shown as the app's name; prefixed 'DEMO ' when `demo` is set. */
  displayName?: string;
  /** Written to iTunesMetadata.plist (softwareVersionExternalIdentifier), as the store's IPAs carry it. */
  appVerId?: string;
  /** Sets the executable's LC_ENCRYPTION_INFO cryptid (1 makes an IPA the check refuses). */
  cryptid?: number;
  /** Marks the copy as a demo everywhere it shows: its name, and a DEMO.txt in the bundle. */
  demo?: boolean;
  /** Adds a stored (uncompressed) resource of this many random bytes: a large app for benchmarks. */
  padBytes?: number;
}

const DEMO_NOTE =
  "This is not the app it is named after. It is a sample app relabelled by Sideport's demo agent\n" +
  'so that the request -> queue -> Done -> download loop can be tried without a device.\n';

/**
 * A copy of a real app under another bundle id and version: the demo agent's "decrypted IPA" and
 * the tests' uploads. It relabels; it decrypts nothing (the source app was never encrypted).
 */
export async function makeSampleIpa(options: SampleIpaOptions): Promise<void> {
  const archive = await openZip(options.source ?? SAMPLE_SOURCE_IPA);
  try {
    const bundle = findAppBundle(archive.entries);
    const info = await readInfoPlist(archive, bundle.dir);
    const { executable } = describeBundle(info, `${bundle.dir}/Info.plist`);
    const relabelled: PlistObject = {
      ...info,
      CFBundleIdentifier: options.bundleId,
      CFBundleShortVersionString: options.version,
      CFBundleVersion: options.version,
      ...(options.displayName || options.demo
        ? {
            CFBundleDisplayName: `${options.demo ? 'DEMO ' : ''}${options.displayName ?? String(info.CFBundleName ?? 'App')}`,
          }
        : {}),
    };
    const zip = new yazl.ZipFile();
    const written = pipeline(zip.outputStream, createWriteStream(options.output));
    for (const entry of archive.entries) {
      if (entry.isDirectory) {
        zip.addEmptyDirectory(entry.name);
        continue;
      }
      let data = await archive.readEntry(entry);
      if (entry.name === `${bundle.dir}/Info.plist`) data = buildBinaryPlist(relabelled);
      if (entry.name === `${bundle.dir}/${executable}` && options.cryptid !== undefined)
        data = withCryptid(data, options.cryptid);
      zip.addBuffer(data, entry.name, entry.unixMode === undefined ? {} : { mode: entry.unixMode });
    }
    if (options.demo) zip.addBuffer(Buffer.from(DEMO_NOTE), `${bundle.dir}/DEMO.txt`);
    if (options.padBytes) {
      zip.addReadStream(Readable.from(randomChunks(options.padBytes)), `${bundle.dir}/Assets/padding.bin`, {
        compress: false,
        size: options.padBytes,
      });
    }
    if (options.appVerId !== undefined) {
      const metadata = buildXmlPlist({
        softwareVersionExternalIdentifier: Number(options.appVerId),
        softwareVersionBundleId: options.bundleId,
        bundleShortVersionString: options.version,
        itemName: `${options.demo ? 'DEMO ' : ''}${options.displayName ?? options.bundleId}`,
      });
      zip.addBuffer(Buffer.from(metadata), 'iTunesMetadata.plist');
    }
    zip.end();
    await written;
  } finally {
    archive.close();
  }
}

function* randomChunks(total: number) {
  const chunk = randomBytes(4 * 1024 * 1024);
  for (let left = total; left > 0; left -= chunk.length)
    yield left >= chunk.length ? chunk : chunk.subarray(0, left);
}

/** A copy of a thin Mach-O whose LC_ENCRYPTION_INFO(_64) says `cryptid` (cryptid is at +16 in the command). */
function withCryptid(macho: Buffer, cryptid: number): Buffer {
  const [slice] = parseMachO(macho, 'executable').slices;
  if (!slice || slice.encryptionCommandOffset === undefined)
    throw new Error('The sample executable has no encryption command.');
  const copy = Buffer.from(macho);
  copy.writeUInt32LE(cryptid, slice.offset + slice.encryptionCommandOffset + 16);
  return copy;
}
