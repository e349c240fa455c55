import { mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import type { Logger } from './log.js';

/**
 * The agent's job folders (`job-<id>-XXXXXX` in the work dir). An agent killed mid-job leaves its
 * folder, with what the command wrote (a whole IPA), and agents may share a work dir. So each
 * folder names its agent (OWNER: host and process id) and is touched while its job runs; a folder
 * is stale when its agent is gone from this machine, or when nothing touched it for STALE_MS (an
 * agent on another machine sharing the folder, or a marker never written).
 */
const PREFIX = 'job-';
const OWNER = '.sideport-agent';
/** Touched this often while the job runs. */
const TOUCH_MS = 60_000;
export const STALE_MS = 60 * 60_000;

interface Owner {
  host: string;
  pid: number;
}

/** A new folder for a job, marked as this process's and kept fresh until `release`. */
export async function openJobFolder(workDir: string, jobId: string) {
  const dir = await mkdtemp(path.join(workDir, `${PREFIX}${jobId.replace(/[^\w-]/g, '_')}-`));
  const owner: Owner = { host: hostname(), pid: process.pid };
  await writeFile(path.join(dir, OWNER), JSON.stringify(owner));
  const touch = setInterval(() => {
    const now = new Date();
    void utimes(dir, now, now).catch(() => {});
  }, TOUCH_MS);
  touch.unref();
  return {
    dir,
    async release() {
      clearInterval(touch);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: a live process of another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

async function readOwner(dir: string): Promise<Owner | undefined> {
  try {
    const owner = JSON.parse(await readFile(path.join(dir, OWNER), 'utf8')) as Partial<Owner>;
    return typeof owner.host === 'string' && Number.isInteger(owner.pid) ? (owner as Owner) : undefined;
  } catch {
    return undefined;
  }
}

async function bytesUnder(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) total += await bytesUnder(full);
    else if (entry.isFile()) total += (await stat(full).catch(() => ({ size: 0 }))).size;
  }
  return total;
}

async function isStale(dir: string, now: number): Promise<boolean> {
  const owner = await readOwner(dir);
  if (owner?.host === hostname() && (owner.pid === process.pid || !isAlive(owner.pid))) return true;
  const touched = await stat(dir).catch(() => undefined);
  return touched !== undefined && now - touched.mtimeMs > STALE_MS;
}

/** Removes the stale job folders of `workDir` and says so; answers how many and their bytes. */
export async function clearStaleJobFolders(workDir: string, log: Logger, now = Date.now()) {
  let folders = 0;
  let bytes = 0;
  for (const entry of await readdir(workDir, { withFileTypes: true }).catch(() => [])) {
    if (!entry.isDirectory() || !entry.name.startsWith(PREFIX)) continue;
    const dir = path.join(workDir, entry.name);
    if (!(await isStale(dir, now))) continue;
    bytes += await bytesUnder(dir);
    await rm(dir, { recursive: true, force: true });
    folders += 1;
  }
  if (folders > 0)
    log.info(
      `removed ${folders} stale job folder${folders === 1 ? '' : 's'} (${bytes} bytes) from ${workDir}`,
    );
  return { folders, bytes };
}
