/**
 * Signs one Mach-O file of the IPA and writes it: in memory, or, above `streamAboveBytes`,
 * inflated to a temporary file and signed as it streams into the output (stream-binary.ts), so
 * memory stays flat whatever its size. A main executable keeps its own entitlements, read from it
 * first; a plain dylib carries none.
 */
import type { PlistObject } from '../plist.js';
import type { Profile } from '../profile.js';
import { mergeEntitlements } from '../sign/entitlements.js';
import { readEmbeddedEntitlements } from '../sign/read-signature.js';
import type { ZipEntry } from '../zip/index.js';
import type { DupRenaming } from './edits.js';
import { openKeptCode, recordCode, type KeptCode } from './code-cache.js';
import type { MachOSigner, MachOSignRequest } from './signer.js';
import type { SigningFiles } from './signing-files.js';
import { signBinaryStreaming, spoolBinary, type SpooledBinary } from './stream-binary.js';

export interface BinarySigner {
  /** Starts inflating a binary that will be streamed (spools are made one after another), ahead of its turn. */
  spoolAhead(name: string): void;
  /** Signs a file (its replacement when the mode changed it) and writes it; answers its cdhash. */
  sign(name: string, request: MachOSignRequest, isMain?: boolean): Promise<Buffer>;
  /**
   * Removes the spools of binaries never signed (the sign failed first), and closes the kept code
   * the output copies from when it is joined: call it once the writer is closed.
   */
  close(): Promise<void>;
}

export function createBinarySigner(options: {
  files: SigningFiles;
  signer: MachOSigner;
  profile: Profile;
  dup: DupRenaming | undefined;
  streamAboveBytes: number;
  /** Where large binaries' code is kept between signs of a version (code-cache.ts); nothing kept without it. */
  codeCacheDir?: string | undefined;
}): BinarySigner {
  const { files, signer, profile, dup, streamAboveBytes, codeCacheDir } = options;
  const { archive } = files;
  const spools = new Map<string, Promise<SpooledBinary>>();
  /** Kept code whose body the output reads when it is joined (output-file.ts, writeFrom). */
  const keptOpen: KeptCode[] = [];
  /** Binaries to stream are inflated to temporary files one after another. */
  let lastSpool: Promise<unknown> = Promise.resolve();
  const spoolOf = (entry: ZipEntry): Promise<SpooledBinary> => {
    let spooled = spools.get(entry.name);
    if (spooled === undefined) {
      spooled = lastSpool.then(() => spoolBinary(archive, entry));
      spooled.catch(() => undefined); // a failure surfaces when the binary is signed
      lastSpool = spooled.catch(() => undefined);
      spools.set(entry.name, spooled);
    }
    return spooled;
  };
  /** The entry to stream, when the file is one: in the archive as it was, and large. */
  const streamed = (name: string): ZipEntry | undefined => {
    const entry = archive.find(name);
    return !files.replaced.has(name) &&
      entry !== undefined &&
      entry.uncompressedSizeBytes > streamAboveBytes &&
      signer.signStream !== undefined
      ? entry
      : undefined;
  };

  return {
    spoolAhead(name) {
      const entry = streamed(name);
      if (entry !== undefined) void spoolOf(entry);
    },

    async sign(name, request, isMain = false) {
      const withOwn = (own: PlistObject | undefined): MachOSignRequest =>
        isMain
          ? { ...request, path: name, entitlements: entitlementsFor(profile, request.identifier, own, dup) }
          : { ...request, path: name };
      const entry = streamed(name);
      if (entry === undefined) {
        const binary = await files.read(name);
        const { signed, cdhash } = signer.sign(
          binary,
          withOwn(isMain ? ownEntitlements(binary, name) : undefined),
        );
        await files.write(name, signed);
        return cdhash;
      }
      const signStream = signer.signStream!.bind(signer);
      // A file another bundle seals needs the digest of all its signed bytes: read in full.
      const sealed = files.sealedByAnother(name);
      const kept = codeCacheDir === undefined || sealed ? undefined : await openKeptCode(codeCacheDir, entry);
      if (kept !== undefined) {
        // Only the first chunk is read, from the kept head; a file that turns out not to fit
        // what was kept (another code limit) is spooled after all.
        let spooled: Promise<SpooledBinary> | undefined;
        const read = async (offset: number, length: number): Promise<Buffer> =>
          offset + length <= kept.head.length
            ? kept.head.subarray(offset, offset + length)
            : (await (spooled ??= spoolOf(entry))).read(offset, length);
        try {
          const { cdhash } = await signBinaryStreaming(
            {
              read,
              sizeBytes: entry.uncompressedSizeBytes,
              own: { entitlements: kept.ownEntitlements },
              kept,
            },
            entry,
            files.out,
            { signStream },
            withOwn,
          );
          return cdhash;
        } finally {
          keptOpen.push(kept);
          // A spool made ahead (or here, after all) goes with the sign.
          const made = spools.get(name);
          spools.delete(name);
          await made?.then(
            (s) => s.close(),
            () => undefined,
          );
        }
      }
      const spooled = await spoolOf(entry);
      const record =
        codeCacheDir === undefined || sealed
          ? undefined
          : await recordCode(codeCacheDir, entry).catch(() => undefined);
      try {
        const { cdhash, digests } = await signBinaryStreaming(
          spooled,
          entry,
          files.out,
          { signStream },
          withOwn,
          {
            digests: sealed,
            ...(record === undefined ? {} : { record }),
          },
        );
        if (digests !== undefined) files.written.set(name, digests);
        await record?.finish();
        return cdhash;
      } catch (err) {
        await record?.abandon();
        throw err;
      } finally {
        spools.delete(name);
        await spooled.close();
      }
    },

    async close() {
      await Promise.all([
        ...[...spools.values()].map((spooled) =>
          spooled.then(
            (s) => s.close(),
            () => undefined,
          ),
        ),
        ...keptOpen.splice(0).map((kept) => kept.close().catch(() => undefined)),
      ]);
    },
  };
}

/**
 * A main executable's entitlements: the ones it was signed with, restricted to what the profile
 * grants and moved to the profile's team (and, under DUP, to the new identifiers), plus what the
 * profile grants for this bundle id. An executable that cannot be read keeps the profile's alone.
 */
function entitlementsFor(
  profile: Profile,
  bundleId: string,
  own: PlistObject | undefined,
  dup: DupRenaming | undefined,
): PlistObject {
  return mergeEntitlements({
    profile,
    bundleId,
    ...(own === undefined ? {} : { own }),
    ...(dup === undefined ? {} : { remapId: dup.renameId, remapGroup: dup.remapGroup }),
  });
}

/** The entitlements a binary was signed with; a damaged old signature counts as none (it is replaced). */
function ownEntitlements(binary: Buffer, where: string): PlistObject | undefined {
  try {
    return readEmbeddedEntitlements(binary, where);
  } catch {
    return undefined;
  }
}
