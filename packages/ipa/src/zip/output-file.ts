/**
 * Where a signed zip's bytes go: a temporary file beside the output, renamed into place once
 * complete. When the output starts with a kept stretch (sign-ipa/copy-template.ts), the kernel
 * copies that stretch into the temporary file while the writer writes what follows it to a second
 * file; closing joins the two. The copy and the signing then overlap, and the writer never waits
 * for the stretch, which is most of the output.
 */
import { copyFile, open, rename, rm, type FileHandle } from 'node:fs/promises';

/** Positional writes, as a FileHandle takes them. */
export interface PositionalWriter {
  write(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesWritten: number }>;
  writev(buffers: Buffer[], position: number): Promise<{ bytesWritten: number }>;
}

export interface OutputFile extends PositionalWriter {
  /** Completes the file and moves it to `output`. */
  finish(output: string): Promise<void>;
  /** Deletes what was written. */
  discard(): Promise<void>;
}

const JOIN_BLOCK_BYTES = 2 * 1024 * 1024;

export async function openOutputFile(
  temporary: string,
  prefix?: { template: string; bytes: number },
): Promise<OutputFile> {
  if (prefix === undefined) {
    const handle = await open(temporary, 'w');
    return {
      write: (buffer, offset, length, position) => handle.write(buffer, offset, length, position),
      writev: (buffers, position) => handle.writev(buffers, position),
      async finish(output) {
        await handle.close();
        await rename(temporary, output);
      },
      async discard() {
        await handle.close().catch(() => undefined);
        await rm(temporary, { force: true });
      },
    };
  }
  const tailPath = `${temporary}.tail`;
  const copying = copyFile(prefix.template, temporary);
  copying.catch(() => undefined); // surfaces at finish
  let tail: FileHandle;
  try {
    tail = await open(tailPath, 'w+');
  } catch (err) {
    await copying.catch(() => undefined);
    await rm(temporary, { force: true });
    throw err;
  }
  const base = prefix.bytes;
  const below = (position: number): number => {
    if (position < base) throw new Error(`zip writer: a write at ${position}, inside the kept stretch`);
    return position - base;
  };
  return {
    write: (buffer, offset, length, position) => tail.write(buffer, offset, length, below(position)),
    writev: (buffers, position) => tail.writev(buffers, below(position)),
    async finish(output) {
      await copying;
      const joined = await open(temporary, 'r+');
      try {
        const { size } = await tail.stat();
        const block = Buffer.allocUnsafe(Math.min(JOIN_BLOCK_BYTES, Math.max(1, size)));
        for (let at = 0; at < size;) {
          const { bytesRead } = await tail.read(block, 0, Math.min(block.length, size - at), at);
          if (bytesRead === 0) throw new Error('zip writer: the tail ended early');
          for (let done = 0; done < bytesRead;)
            done += (await joined.write(block, done, bytesRead - done, base + at + done)).bytesWritten;
          at += bytesRead;
        }
      } finally {
        await joined.close();
      }
      await tail.close();
      await rm(tailPath, { force: true });
      await rename(temporary, output);
    },
    async discard() {
      await copying.catch(() => undefined);
      await tail.close().catch(() => undefined);
      await rm(tailPath, { force: true });
      await rm(temporary, { force: true });
    },
  };
}
