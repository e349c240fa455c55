import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';

export interface FileDigests {
  sha1: Buffer;
  sha256: Buffer;
}

export function digestBuffer(bytes: Buffer): FileDigests {
  return {
    sha1: createHash('sha1').update(bytes).digest(),
    sha256: createHash('sha256').update(bytes).digest(),
  };
}

/** SHA-1 and SHA-256 of a stream in one pass, holding one chunk at a time. */
export async function digestStream(stream: Readable): Promise<FileDigests> {
  const sha1 = createHash('sha1');
  const sha256 = createHash('sha256');
  for await (const chunk of stream) {
    sha1.update(chunk as Buffer);
    sha256.update(chunk as Buffer);
  }
  return { sha1: sha1.digest(), sha256: sha256.digest() };
}
