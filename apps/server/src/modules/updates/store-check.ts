import type { Database } from '../../db/client.js';
import type { CatalogService } from '../catalog/service.js';
import * as q from './queries.js';

export interface StoreCheckSettings {
  /** UPDATE_CHECK_MINUTES: an app is asked of the store at most once in this long. */
  intervalMs: number;
  /** Apps per Lookup call (Apple's Lookup takes ids comma-separated). */
  batchSize: number;
  /** Apps one pass claims; the rest wait for the next pass. */
  passLimit: number;
}

export interface StoreCheckDeps {
  db: Database;
  clock: () => Date;
  catalog: Pick<CatalogService, 'refreshApps'>;
  settings: StoreCheckSettings;
}

/** What one pass did: the apps it asked about, the store calls it made, and the apps whose version changed. */
export interface StoreCheckResult {
  asked: number;
  calls: number;
  changed: Array<{ country: string; appId: number }>;
}

/**
 * The update check (docs/architecture.md, Update tracking): every app someone holds an artifact
 * of is looked up in its storefront once per interval for all of its users, in batched Lookup
 * calls per country. The claim marks each app checked, so two processes never ask for one app
 * twice; a store refusal (throttled, down) gives the apps not yet asked back and ends the pass
 * with the store's error, whose Retry-After puts the next pass off (platform/scheduler.ts); the
 * catalogue's client backs off on 403/429 by itself.
 */
export function createStoreCheck(deps: StoreCheckDeps) {
  const { db, clock, catalog, settings } = deps;

  return {
    async run(): Promise<StoreCheckResult> {
      await q.trackInstalledApps(db);
      const now = clock();
      const due = await q.claimDue(
        db,
        now,
        new Date(now.getTime() - settings.intervalMs),
        settings.passLimit,
      );
      const byCountry = new Map<string, number[]>();
      for (const row of due) byCountry.set(row.country, [...(byCountry.get(row.country) ?? []), row.appId]);
      const result: StoreCheckResult = { asked: due.length, calls: 0, changed: [] };
      const batches = [...byCountry].flatMap(([country, ids]) => {
        const out: Array<{ country: string; ids: number[] }> = [];
        for (let i = 0; i < ids.length; i += settings.batchSize)
          out.push({ country, ids: ids.slice(i, i + settings.batchSize) });
        return out;
      });
      for (const [index, batch] of batches.entries()) {
        let found;
        try {
          result.calls++;
          found = await catalog.refreshApps(batch.country, batch.ids);
        } catch (err) {
          for (const rest of batches.slice(index)) await q.releaseClaims(db, rest.country, rest.ids);
          throw err;
        }
        const changed = await q.recordVersions(
          db,
          batch.country,
          found.map((a) => ({ appId: a.appId, version: a.version })),
          clock(),
        );
        result.changed.push(...changed.map((appId) => ({ country: batch.country, appId })));
      }
      return result;
    },
  };
}

export type StoreCheck = ReturnType<typeof createStoreCheck>;
