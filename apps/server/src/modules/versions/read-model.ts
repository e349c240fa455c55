import {
  NO_SIGN_STATUSES,
  signModeOf,
  type SignStatuses,
  type SignType,
  type VersionCapabilities,
} from '@sideport/contracts';
import type { Database } from '../../db/client.js';
import type { CatalogService } from '../catalog/service.js';
import { capabilitiesAnswer } from './capabilities/answer.js';
import type { CopyAppIds } from './capabilities/copy-app-ids.js';
import type { ComponentReader, DoneVersion } from './capabilities/reader.js';
import * as q from './queries.js';

export interface VersionReadModelDeps {
  db: Database;
  catalog: Pick<CatalogService, 'lookupApp'>;
  /** What each Done version's components were signed with; without it, entries carry no capability report. */
  capabilities?: {
    components: Pick<ComponentReader, 'componentsOf'>;
    /** The team that would sign for the user (identity/signing.ts). */
    teamOf(userId: string): Promise<string | null>;
    /** DUP's bundle id segment for a user and an app (modules/sign/worker.ts). */
    dupSuffix(userId: string, appId: number): string;
    /** Whether DUP copies are signed for explicit App IDs now (capabilities/copy-app-ids.ts). */
    copyAppIds?: Pick<CopyAppIds, 'enabled'>;
    /** With a pool: the user's move to another team not acknowledged yet (identity/pool/team-moves.ts). */
    pendingTeamMove?(userId: string): Promise<unknown>;
  };
}

/**
 * What one domain needs to know of a version's state in the other: the decrypt service's version
 * list shows the caller's sign statuses, and the sign service signs only a Done version's stored
 * file. Both read it here, so neither calls the other (the decrypt domain writes a version's
 * decrypt state, the sign domain its sign state; this reads both and changes nothing).
 */
export function createVersionReadModel({ db, catalog, capabilities }: VersionReadModelDeps) {
  return {
    /**
     * What signing keeps of each Done version's capabilities for the user, by app_ver_id; null for a
     * version whose components are still being read (its first look after it became Done).
     */
    async capabilities(
      userId: string,
      versions: readonly DoneVersion[],
    ): Promise<Map<number, VersionCapabilities | null>> {
      const result = new Map<number, VersionCapabilities | null>();
      if (!capabilities || versions.length === 0) return result;
      const [found, teamId, moved, explicit] = await Promise.all([
        capabilities.components.componentsOf(versions),
        capabilities.teamOf(userId),
        capabilities.pendingTeamMove?.(userId),
        capabilities.copyAppIds?.enabled(),
      ]);
      for (const v of versions) {
        const components = found.get(`${v.appId}/${v.appVerId}`);
        result.set(
          v.appVerId,
          components
            ? capabilitiesAnswer({
                components,
                teamId,
                dupSuffix: capabilities.dupSuffix(userId, v.appId),
                teamMoved: moved !== undefined,
                copyAppIds: explicit === true,
              })
            : null,
        );
      }
      return result;
    },

    /** The caller's five sign statuses of each of these versions (No where nothing was asked). */
    async signStatuses(
      userId: string,
      versions: Array<{ appId: number; appVerId: number }>,
    ): Promise<Map<number, SignStatuses & { resigning?: SignType[] }>> {
      const rows = await q.signsOfVersions(
        db,
        userId,
        versions.map((v) => v.appVerId),
      );
      const wanted = new Set(versions.map((v) => `${v.appId}/${v.appVerId}`));
      const result = new Map<number, SignStatuses & { resigning?: SignType[] }>();
      for (const row of rows) {
        if (!wanted.has(`${row.appId}/${row.appVerId}`)) continue;
        const statuses = result.get(row.appVerId) ?? { ...NO_SIGN_STATUSES };
        statuses[signModeOf(row.signType).statusField] = row.status;
        // The entry's `resigning` lists the modes recovery is signing again; absent when none is.
        if (row.resigning) statuses.resigning = [...(statuses.resigning ?? []), row.signType].sort();
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
