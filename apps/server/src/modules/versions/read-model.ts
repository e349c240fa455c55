import type { Database } from '../../db/client.js';
import type { CatalogService, SignStatuses } from '../catalog/service.js';
import * as q from './queries.js';

export interface VersionReadModelDeps {
  db: Database;
  catalog: Pick<CatalogService, 'lookupApp'>;
}

/** The version list's five sign statuses, by sign mode (0 normal ... 4 DUP). */
const STATUS_FIELDS = ['normal_sign', 'iap_sign', 'igg_sign', 'both_sign', 'dup_sign'] as const;

/**
 * What one domain needs to know of a version's state in the other: the decrypt service's version
 * list shows the caller's sign statuses, and the sign service signs only a Done version's stored
 * file. Both read it here, so neither calls the other (the decrypt domain writes a version's
 * decrypt state, the sign domain its sign state; this reads both and changes nothing).
 */
export function createVersionReadModel({ db, catalog }: VersionReadModelDeps) {
  return {
    /** The caller's five sign statuses of each of these versions (No where nothing was asked). */
    async signStatuses(
      userId: string,
      versions: Array<{ appId: number; appVerId: number }>,
    ): Promise<Map<number, SignStatuses>> {
      const rows = await q.signsOfVersions(
        db,
        userId,
        versions.map((v) => v.appVerId),
      );
      const wanted = new Set(versions.map((v) => `${v.appId}/${v.appVerId}`));
      const result = new Map<number, SignStatuses>();
      for (const row of rows) {
        if (!wanted.has(`${row.appId}/${row.appVerId}`)) continue;
        const statuses = result.get(row.appVerId) ?? {
          normal_sign: 'No',
          iap_sign: 'No',
          igg_sign: 'No',
          both_sign: 'No',
          dup_sign: 'No',
        };
        statuses[STATUS_FIELDS[row.signType]!] = row.status;
        result.set(row.appVerId, statuses);
      }
      return result;
    },

    /** What a sign needs of a Done version: its stored file and the app's name; undefined when not Done. */
    async signable(appId: number, appVerId: number) {
      const done = await q.findDoneVersion(db, appId, appVerId);
      if (!done) return undefined;
      const app = await catalog.lookupApp(done.country, done.appId);
      return { fileKey: done.fileKey, title: app.name };
    },
  };
}

export type VersionReadModel = ReturnType<typeof createVersionReadModel>;
