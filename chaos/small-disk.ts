/**
 * The chaos run's data disk: a size-limited folder the server processes keep their DATA_DIR in,
 * which the dependencies scenario fills and empties again, as an operator's disk fills up with
 * something else and is cleared.
 *
 * A small tmpfs where the machine lets the run mount one (root, a container that allows it), as
 * apps/server/src/disk-full.test.ts does. Elsewhere the folder stays on the machine's own disk and
 * the server's reserve (DISK_MIN_FREE_MB) is set to all but a margin of what is free there at the
 * start: the filler then takes that margin, and the server sees the same full disk.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import path from 'node:path';
import type { Part } from './disruptions.js';

const MB = 1024 * 1024;
/** The tmpfs's size and the reserve the servers keep free on it. */
const TMPFS_MB = 64;
const RESERVE_MB = 16;
/** Without a tmpfs: the room left above the reserve at the start, which the filler takes. */
const MARGIN_MB = 256;

export interface SmallDisk extends Part {
  /** The folder the server processes' DATA_DIRs go in. */
  readonly dir: string;
  /** 'tmpfs' or 'reserve' (no mount: DISK_MIN_FREE_MB set near the free space). */
  readonly kind: 'tmpfs' | 'reserve';
  /** DISK_MIN_FREE_MB for every server process. */
  readonly minFreeMb: number;
  dispose(): void;
}

const freeBytes = async (dir: string) => {
  const stats = await statfs(dir);
  return stats.bavail * stats.bsize;
};

export async function createSmallDisk(work: string): Promise<SmallDisk> {
  const dir = path.join(work, 'disk');
  mkdirSync(dir, { recursive: true });
  let kind: SmallDisk['kind'] = 'tmpfs';
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${TMPFS_MB}m,mode=0700`, 'tmpfs', dir], {
      stdio: 'ignore',
    });
  } catch {
    kind = 'reserve';
  }
  const minFreeMb =
    kind === 'tmpfs' ? RESERVE_MB : Math.max(1, Math.floor((await freeBytes(dir)) / MB) - MARGIN_MB);
  const filler = path.join(dir, 'filler');
  return {
    dir,
    kind,
    minFreeMb,
    /**
     * Fills the disk until less than the reserve is free (half of it on the tmpfs, 64 MB under it
     * on the machine's disk): every upload and sign is refused before writing.
     */
    async stop() {
      const target = minFreeMb * MB - Math.min((minFreeMb * MB) / 2, 64 * MB);
      const room = Math.max(0, (await freeBytes(dir)) - target);
      // In steps, so the filler never holds one buffer of the whole size.
      const step = Buffer.alloc(16 * MB);
      writeFileSync(filler, '');
      for (let left = room; left > 0; left -= step.length)
        writeFileSync(filler, left >= step.length ? step : step.subarray(0, left), { flag: 'a' });
    },
    async start() {
      rmSync(filler, { force: true });
    },
    dispose() {
      rmSync(filler, { force: true });
      if (kind === 'tmpfs') {
        try {
          execFileSync('umount', [dir], { stdio: 'ignore' });
        } catch {
          // Left mounted (a process still in it); the work folder's removal says so.
        }
      }
    },
  };
}
