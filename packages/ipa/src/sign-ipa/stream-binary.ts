/**
 * Signs a binary too large to hold: inflates it to a temporary file, reads it through a window and
 * signs it straight into the output zip, keeping only its digests.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { FileDigests } from '../digest/index.js';
import type { PlistObject } from '../plist.js';
import { readEmbeddedEntitlementsAt } from '../sign/read-signature.js';
import type { ZipArchive, ZipEntry } from '../zip/index.js';
import type { SignedZipWriter } from '../zip/writer.js';
import type { MachOSigner, MachOSignRequest } from './sign-ipa.js';

const READ_WINDOW_BYTES = 1024 * 1024;

export interface StreamedBinary {
  readonly cdhash: Buffer;
  readonly digests: FileDigests;
}

/**
 * `requestFor` receives the entitlements the binary was signed with (undefined when it has none or
 * they cannot be read) and answers the signing request.
 */
export async function signBinaryStreaming(
  archive: ZipArchive,
  entry: ZipEntry,
  writer: SignedZipWriter,
  signer: Required<Pick<MachOSigner, 'signStream'>>,
  requestFor: (own: PlistObject | undefined) => MachOSignRequest,
): Promise<StreamedBinary> {
  const spoolDir = await mkdtemp(join(tmpdir(), 'sideport-sign-'));
  const file = join(spoolDir, 'binary');
  try {
    await pipeline(await archive.openEntryStream(entry), createWriteStream(file));
    const handle = await open(file, 'r');
    try {
      // The signer copies or parses what it reads before reading again, so one buffer serves.
      const scratch = Buffer.alloc(READ_WINDOW_BYTES);
      const readAt = async (offset: number, length: number): Promise<Buffer> => {
        const buffer = length <= READ_WINDOW_BYTES ? scratch.subarray(0, length) : Buffer.alloc(length);
        const { bytesRead } = await handle.read(buffer, 0, length, offset);
        return buffer.subarray(0, bytesRead);
      };
      const size = entry.uncompressedSizeBytes;
      let own: PlistObject | undefined;
      try {
        own = await readEmbeddedEntitlementsAt(readAt, size, entry.name);
      } catch {
        own = undefined; // a damaged old signature is replaced anyway
      }
      const sha1 = createHash('sha1');
      const sha256 = createHash('sha256');
      let cdhash: Buffer = Buffer.alloc(0);
      await writer.addStream(entry.name, async (sink) => {
        ({ cdhash } = await signer.signStream(readAt, size, requestFor(own), async (chunk) => {
          sha1.update(chunk);
          sha256.update(chunk);
          await sink(chunk);
        }));
      }, { unixMode: entry.unixMode ?? 0o100755 });
      return { cdhash, digests: { sha1: sha1.digest(), sha256: sha256.digest() } };
    } finally {
      await handle.close();
    }
  } finally {
    await rm(spoolDir, { recursive: true, force: true });
  }
}
