import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { FileStore } from '../../platform/storage.js';
import type { RunTask } from './run-task.js';

export interface SignCacheDeps {
  files: FileStore;
  /** This machine's cache folder (DATA_DIR/sign-cache). */
  dir: string;
  /** Where sources fetched from S3 are kept while they are read. */
  tmpDir: string;
  run: RunTask;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

/** A stored IPA as a local file for the length of a task: the stored file itself on local disk, a copy from S3. */
export interface LocalSource {
  path: string;
  /** Marks a copy as in use, so the file sweep (modules/files/sweep.ts) leaves it while a long sign runs. */
  refresh(): Promise<void>;
  release(): Promise<void>;
}

const noop = async () => {};

const DIGESTS = 'resource-digests';

/**
 * The per-version digest caches of packages/ipa, one folder per version on each machine. A
 * version's cache is filled when it becomes Done (warm). With S3 storage, where sign workers run
 * on other machines, the filled cache is also kept in the store (`sign-cache/{app}/{version}.json`,
 * a few hundred KB) and a worker that lacks it locally fetches it before signing.
 */
export function createSignCache({ files, dir, tmpDir, run, log }: SignCacheDeps) {
  const versionDir = (appId: number, appVerId: number) => path.join(dir, 'versions', `${appId}-${appVerId}`);
  const storeKey = (appId: number, appVerId: number) => `sign-cache/${appId}/${appVerId}.json`;
  const shared = files.kind === 's3';

  async function localSource(fileKey: string): Promise<LocalSource> {
    const local = files.localPath(fileKey);
    if (local) return { path: local, refresh: noop, release: noop };
    await mkdir(tmpDir, { recursive: true });
    const copy = path.join(tmpDir, `source-${randomUUID()}.ipa`);
    try {
      await pipeline(await files.read(fileKey), createWriteStream(copy));
    } catch (err) {
      await rm(copy, { force: true });
      throw err;
    }
    return {
      path: copy,
      refresh: () => utimes(copy, new Date(), new Date()).catch(() => {}),
      release: () => rm(copy, { force: true }),
    };
  }

  /** Keeps this machine's cache of a version in the store, for workers elsewhere. */
  async function publish(appId: number, appVerId: number) {
    const folder = path.join(versionDir(appId, appVerId), DIGESTS);
    const names = (await readdir(folder).catch(() => [] as string[])).filter((n) => n.endsWith('.json'));
    if (names.length === 0) return;
    const bundle: Record<string, string> = {};
    for (const name of names) bundle[name] = await readFile(path.join(folder, name), 'utf8');
    await mkdir(tmpDir, { recursive: true });
    const file = path.join(tmpDir, `cache-${randomUUID()}.json`);
    await writeFile(file, JSON.stringify({ files: bundle }));
    await files.putFile(storeKey(appId, appVerId), file).finally(() => rm(file, { force: true }));
  }

  return {
    localSource,

    featherDir: path.join(dir, 'feather'),

    /** The version's cache folder, fetched from the store first when this machine has none. */
    async versionCache(appId: number, appVerId: number): Promise<{ dir: string; wasEmpty: boolean }> {
      const target = versionDir(appId, appVerId);
      const folder = path.join(target, DIGESTS);
      const present = (await readdir(folder).catch(() => [] as string[])).length > 0;
      if (present || !shared) return { dir: target, wasEmpty: !present };
      try {
        const stream = await files.read(storeKey(appId, appVerId));
        const chunks: Buffer[] = [];
        for await (const chunk of stream) chunks.push(chunk as Buffer);
        const { files: bundle } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          files: Record<string, string>;
        };
        await mkdir(folder, { recursive: true });
        for (const [name, text] of Object.entries(bundle)) {
          // Names come from our own writer; anything else in that object is ignored.
          if (/^[0-9a-f]{64}\.json$/.test(name)) await writeFile(path.join(folder, name), text);
        }
        return { dir: target, wasEmpty: false };
      } catch {
        return { dir: target, wasEmpty: true }; // not kept yet: the sign digests as it copies
      }
    },

    /** After a sign that had to digest: keep what it learnt for the other machines. */
    async afterColdSign(appId: number, appVerId: number) {
      if (shared)
        await publish(appId, appVerId).catch((err: unknown) =>
          log.warn({ err }, 'could not keep a digest cache in the store'),
        );
    },

    /**
     * Fills a version's cache when it becomes Done (docs/sign-service.md: no user waits for a cold
     * sign). Runs in a signing process; the upload's own file is read when it is at hand.
     */
    async warm(done: { appId: number; appVerId: number; fileKey: string; localFile?: string }) {
      const source = done.localFile
        ? { path: done.localFile, refresh: noop, release: noop }
        : await localSource(done.fileKey);
      try {
        const started = Date.now();
        const result = await run({
          kind: 'warm',
          input: source.path,
          cacheDir: versionDir(done.appId, done.appVerId),
        });
        if (!result.ok) throw new Error(result.message);
        log.info(
          { appId: done.appId, appVerId: done.appVerId, ms: Date.now() - started },
          'sign digest cache warmed',
        );
      } finally {
        await source.release();
      }
      if (shared) await publish(done.appId, done.appVerId);
    },

    /** A removed version's cache goes with it, here and in the store. */
    async drop(appId: number, appVerId: number) {
      await rm(versionDir(appId, appVerId), { recursive: true, force: true });
      if (shared) await files.delete(storeKey(appId, appVerId)).catch(() => {});
    },
  };
}

export type SignCache = ReturnType<typeof createSignCache>;
