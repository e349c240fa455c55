import { mkdir, statfs } from 'node:fs/promises';
import { failWith } from './errors.js';
import type { FaultTracker } from './faults.js';

export interface DiskGuard {
  /**
   * Refuses work that would write `bytes` to the data disk when that would leave less than the
   * reserve free: DISK_FULL (503) naming the space needed and free, before anything is written.
   */
  ensureRoom(bytes: number): Promise<void>;
  /** Bytes free on the data disk for this process's user. */
  freeBytes(): Promise<number>;
}

/**
 * The data disk's free space (fs.statfs of DATA_DIR), checked before an upload, a sign or a backup
 * writes (docs/architecture.md, When a part fails): a full disk refuses new work with the space
 * it needs instead of failing half-way and leaving a partial file. `minFreeBytes` is kept free for
 * the database and the logs (DISK_MIN_FREE_MB).
 */
export function createDiskGuard(deps: {
  dir: string;
  minFreeBytes: number;
  faults?: Pick<FaultTracker, 'ok'>;
}): DiskGuard {
  async function freeBytes(): Promise<number> {
    await mkdir(deps.dir, { recursive: true });
    const stats = await statfs(deps.dir);
    return stats.bavail * stats.bsize;
  }
  return {
    freeBytes,
    async ensureRoom(bytes) {
      const free = await freeBytes();
      const needed = Math.max(0, bytes) + deps.minFreeBytes;
      if (free >= needed) {
        deps.faults?.ok('disk');
        return;
      }
      // Counted where it is answered (the error handler), like every refusal of a part.
      throw failWith('DISK_FULL', {}, needed, free);
    },
  };
}
