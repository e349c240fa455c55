/**
 * Where a signed zip's bytes go: a temporary file beside the output, renamed into place once
 * complete. When the output starts with a kept stretch (sign-ipa/copy-template.ts), the kernel
 * copies that stretch into the temporary file while the writer writes what follows it to a second
 * file; closing joins the two. The copy and the signing then overlap, and the writer never waits
 * for the stretch, which is most of the output. What the tail takes from another file as it is (a
 * kept executable's deflated body, tens of MB) is not written to the second file: it is copied
 * from its own file when the two are joined, once.
 */
import { copyFile, open, rename, rm, type FileHandle } from 'node:fs/promises';

/** Positional writes, as a FileHandle takes them. */
export interface PositionalWriter {
  write(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesWritten: number }>;
  writev(buffers: Buffer[], position: number): Promise<{ bytesWritten: number }>;
  /**
   * Writes `length` bytes of `source` from `offset` at `position`. Behind a kept stretch this is
   * only noted, and the bytes are copied once, when the file is joined: `source` must stay open
   * until then.
   */
  writeFrom(source: FileHandle, offset: number, length: number, position: number): Promise<void>;
}

export interface OutputFile extends PositionalWriter {
  /** Completes the file and moves it to `output`. */
  finish(output: string): Promise<void>;
  /** Deletes what was written. */
  discard(): Promise<void>;
}

const JOIN_BLOCK_BYTES = 2 * 1024 * 1024;

/** The temporary file an output is written to, beside it, before it is renamed into place. */
export const partialPathFor = (output: string) => `${output}.partial-${process.pid}-${Date.now()}`;

/** A kept stretch being copied by the kernel into the temporary file of an output. */
export interface StartedCopy {
  readonly template: string;
  readonly temporary: string;
  /** Settles once the stretch is in the temporary file; a failure surfaces where it is awaited. */
  readonly copying: Promise<void>;
}

/** Starts copying a kept stretch into a new temporary file for `output`, before the writer opens it. */
export function startPrefixCopy(template: string, output: string): StartedCopy {
  const temporary = partialPathFor(output);
  const copying = copyFile(template, temporary);
  copying.catch(() => undefined); // surfaces where it is awaited
  return { template, temporary, copying };
}

/** Removes a started copy that no writer took, once the kernel is done with it. */
export async function dropPrefixCopy(started: StartedCopy): Promise<void> {
  // The copy cannot be stopped; removing the file while it runs could leave the file it creates.
  await started.copying.catch(() => undefined);
  await rm(started.temporary, { force: true });
}

/**
 * `prefix.copying`: the stretch's copy into `temporary`, already started (startPrefixCopy);
 * else it starts here.
 */
export async function openOutputFile(
  temporary: string,
  prefix?: { template: string; bytes: number; copying?: Promise<void> },
): Promise<OutputFile> {
  if (prefix === undefined) {
    const handle = await open(temporary, 'w');
    return {
      write: (buffer, offset, length, position) => handle.write(buffer, offset, length, position),
      writev: (buffers, position) => handle.writev(buffers, position),
      writeFrom: (source, offset, length, position) =>
        copyRange(source, offset, length, handle, position, Buffer.allocUnsafe(blockFor(length))),
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
  const copying = prefix.copying ?? copyFile(prefix.template, temporary);
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
  // Ranges of other files that belong in the tail (a kept executable's body): copied straight into
  // the joined file, never written to the tail and read back.
  const borrowed: Array<{ at: number; source: FileHandle; offset: number; length: number }> = [];
  return {
    write: (buffer, offset, length, position) => tail.write(buffer, offset, length, below(position)),
    writev: (buffers, position) => tail.writev(buffers, below(position)),
    async writeFrom(source, offset, length, position) {
      borrowed.push({ at: below(position), source, offset, length });
    },
    async finish(output) {
      await copying;
      const joined = await open(temporary, 'r+');
      try {
        const { size } = await tail.stat();
        const ranges = [...borrowed].sort((a, b) => a.at - b.at);
        const end = Math.max(size, ...ranges.map((r) => r.at + r.length));
        const block = Buffer.allocUnsafe(blockFor(end));
        let at = 0;
        for (const range of ranges) {
          await copyRange(tail, at, range.at - at, joined, base + at, block);
          await copyRange(range.source, range.offset, range.length, joined, base + range.at, block);
          at = range.at + range.length;
        }
        await copyRange(tail, at, end - at, joined, base + at, block);
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

const blockFor = (length: number) => Math.min(JOIN_BLOCK_BYTES, Math.max(1, length));

/** Copies `length` bytes of `from` at `fromOffset` to `to` at `toOffset`, through `block`. */
async function copyRange(
  from: FileHandle,
  fromOffset: number,
  length: number,
  to: FileHandle,
  toOffset: number,
  block: Buffer,
): Promise<void> {
  for (let at = 0; at < length;) {
    const { bytesRead } = await from.read(block, 0, Math.min(block.length, length - at), fromOffset + at);
    if (bytesRead === 0) throw new Error(`zip writer: a file ended ${length - at} bytes early`);
    for (let done = 0; done < bytesRead;)
      done += (await to.write(block, done, bytesRead - done, toOffset + at + done)).bytesWritten;
    at += bytesRead;
  }
}
