/**
 * Reads the signed components of a Done version from its stored IPA, once, and keeps them
 * (version_components): when the version becomes Done, and for a version Done before this existed,
 * the first time someone looks at it. The read takes only plists and code signatures
 * (packages/ipa, readSignedComponents); an IPA it cannot read is logged and left unread.
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { openZip, readSignedComponents, type SignedComponent } from '@sideport/ipa';
import type { Database } from '../../../db/client.js';
import type { FileStore } from '../../../platform/storage.js';
import * as q from './queries.js';

export interface ComponentReaderDeps {
  db: Database;
  files: Pick<FileStore, 'localPath' | 'read'>;
  clock: () => Date;
  tmpDir: string;
  log: { warn(obj: object, msg: string): void };
}

export interface DoneVersion {
  appId: number;
  appVerId: number;
  fileKey: string;
  localFile?: string;
}

export function createComponentReader({ db, files, clock, tmpDir, log }: ComponentReaderDeps) {
  /** Reads under way, by version: a second ask waits for the first. */
  const reading = new Map<string, Promise<SignedComponent[] | undefined>>();

  async function readFromStore(version: DoneVersion): Promise<SignedComponent[]> {
    const local = version.localFile ?? files.localPath(version.fileKey);
    if (local) {
      const archive = await openZip(local);
      return readSignedComponents(archive).finally(() => archive.close());
    }
    await mkdir(tmpDir, { recursive: true });
    const copy = path.join(tmpDir, `components-${randomUUID()}.ipa`);
    try {
      await pipeline(await files.read(version.fileKey), createWriteStream(copy));
      const archive = await openZip(copy);
      return await readSignedComponents(archive).finally(() => archive.close());
    } finally {
      await rm(copy, { force: true });
    }
  }

  /** Reads and keeps a version's components; undefined when its IPA could not be read. */
  function read(version: DoneVersion): Promise<SignedComponent[] | undefined> {
    const key = `${version.appId}/${version.appVerId}`;
    let pending = reading.get(key);
    if (!pending) {
      pending = readFromStore(version)
        .then(async (components) => {
          await q.saveComponents(db, {
            appId: version.appId,
            appVerId: version.appVerId,
            components,
            readAt: clock(),
          });
          return components;
        })
        .catch((err: unknown) => {
          log.warn(
            { err, appId: version.appId, appVerId: version.appVerId },
            'reading the components of a version failed',
          );
          return undefined;
        })
        .finally(() => reading.delete(key));
      reading.set(key, pending);
    }
    return pending;
  }

  return {
    /** After a version became Done. */
    async record(version: DoneVersion): Promise<void> {
      await read(version);
    },

    /**
     * The components of these Done versions; those not read yet are read now, in the background,
     * and absent from this answer.
     */
    async componentsOf(versions: readonly DoneVersion[]): Promise<Map<string, SignedComponent[]>> {
      const found = await q.componentsOf(db, versions);
      for (const version of versions)
        if (!found.has(`${version.appId}/${version.appVerId}`)) void read(version); // logs its own failure
      return found;
    },

    /** Waits for the reads under way (a process that stops, a test that checks what was kept). */
    async settle(): Promise<void> {
      await Promise.all(reading.values());
    },
  };
}

export type ComponentReader = ReturnType<typeof createComponentReader>;
