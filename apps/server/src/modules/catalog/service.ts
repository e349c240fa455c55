import type { AppEntry, DecryptStatus } from '@sideport/contracts';
import type { Database } from '../../db/client.js';
import { AppError, notFound } from '../../platform/errors.js';
import type { ItunesClient, StoreApp } from './itunes.js';
import * as q from './queries.js';

export interface CatalogServiceDeps {
  db: Database;
  itunes: Pick<ItunesClient, 'search' | 'lookup' | 'lookupBundle'>;
  clock: () => Date;
  cacheTtlMs: number;
  log?: { warn(obj: object, msg: string): void };
  /** Told of every entry an admin removed (its stored file goes, open pages hear of it). */
  onRemoved?: (removed: q.RemovedEntry[]) => Promise<void>;
}

const MB = 1024 * 1024;

/** The facts of a decrypt entry that an app / version entry shows over the app's own. */
export interface EntryFacts {
  appVerId: number | null;
  version: string | null;
  status: string;
  premium: boolean;
  minimumOs?: string | null;
  sizeBytes?: number | null;
}

export type SignStatuses = Pick<AppEntry, 'normal_sign' | 'iap_sign' | 'igg_sign' | 'both_sign' | 'dup_sign'>;

/** Lists show no sign statuses (they are per user and version); the version modal does. */
export const NO_SIGN_STATUSES: SignStatuses = {
  normal_sign: 'No',
  iap_sign: 'No',
  igg_sign: 'No',
  both_sign: 'No',
  dup_sign: 'No',
};

const megabytes = (bytes: number | null | undefined) => (bytes == null ? null : Math.round((bytes / MB) * 10) / 10);

/** An app / version entry of docs/product.md, Entities and fields: the app's store facts, overridden by the entry's own. */
export function toEntry(app: q.AppRow, e: EntryFacts, signs: SignStatuses = NO_SIGN_STATUSES): AppEntry {
  return {
    app_id: String(app.appId),
    app_ver_id: e.appVerId === null ? null : String(e.appVerId),
    country: app.country,
    name: app.name,
    developer: app.developer,
    version: e.version ?? app.version,
    icon: app.iconUrl,
    itunes: app.storeUrl,
    raiting: app.rating,
    raiting_count: app.ratingCount,
    bundle_id: app.bundleId,
    require: e.minimumOs ?? app.minimumOs,
    size: megabytes(e.sizeBytes ?? app.sizeBytes),
    premium: e.premium,
    status: e.status as DecryptStatus,
    ...signs,
  };
}

/** Search terms compare without regard to case or spacing, so 'Kakao  talk' hits the cache of 'kakao talk'. */
export const normalizeTerm = (keyword: string) => keyword.trim().replace(/\s+/g, ' ').toLowerCase();

export function createCatalogService(deps: CatalogServiceDeps) {
  const { db, itunes, clock, cacheTtlMs } = deps;
  // One store call per (country, term) at a time: concurrent identical searches share it.
  const inFlight = new Map<string, Promise<number[]>>();

  async function fetchSearch(country: string, term: string, keyword: string): Promise<number[]> {
    const key = `${country}\u0000${term}`;
    let pending = inFlight.get(key);
    if (!pending) {
      pending = (async () => {
        const found: StoreApp[] = await itunes.search(country, keyword.trim());
        const now = clock();
        await q.upsertApps(db, country, found, now);
        const ids = [...new Set(found.map((a) => a.appId))];
        await q.saveSearch(db, country, term, ids, now);
        return ids;
      })().finally(() => inFlight.delete(key));
      inFlight.set(key, pending);
    }
    return pending;
  }

  const isFresh = (fetchedAt: Date) => clock().getTime() - fetchedAt.getTime() < cacheTtlMs;

  return {
    async latest(page: number, anchor?: number) {
      const top = anchor ?? (await q.maxDoneSeq(db));
      const rows = top === undefined ? [] : await q.listLatest(db, page, top);
      return { entries: rows.map((r) => toEntry(r.app, r.entry)), anchor: top };
    },

    async queue(page: number, anchor?: number) {
      const top = anchor ?? (await q.maxSeq(db));
      const rows = top === undefined ? [] : await q.listQueue(db, page, top);
      return { entries: rows.map((r) => toEntry(r.app, r.entry)), anchor: top };
    },

    /** Store search, cached for cacheTtlMs; a store failure falls back to a stale cache when there is one. */
    async search(country: string, keyword: string): Promise<AppEntry[]> {
      const term = normalizeTerm(keyword);
      const cached = await q.findCachedSearch(db, country, term);
      let ids: number[];
      if (cached && isFresh(cached.fetchedAt)) {
        ids = cached.appIds;
      } else {
        try {
          ids = await fetchSearch(country, term, keyword);
        } catch (err) {
          if (!cached) throw err;
          deps.log?.warn({ err, country }, 'store search failed; answering from the stale cache');
          ids = cached.appIds;
        }
      }
      const rows = await q.appsWithStatus(db, country, ids);
      return rows.map(({ app, status, appVerId, premium, blacklisted }) => {
        const shown = blacklisted && status !== 'Done' ? 'Not' : (status ?? 'Available');
        return toEntry(app, { appVerId: appVerId === null ? null : Number(appVerId), version: null, status: shown, premium });
      });
    },

    /** The store's record of one app (cached like searches); 404 when the store does not know it. */
    async lookupApp(country: string, appId: number) {
      const cached = await q.findApp(db, country, appId);
      if (cached && isFresh(cached.fetchedAt)) return cached;
      const found = await itunes.lookup(country, appId).catch((err: unknown) => {
        if (cached) return null;
        throw err;
      });
      if (found === null) return cached!;
      const app = found.find((a) => a.appId === appId);
      if (!app) throw notFound('This app');
      await q.upsertApps(db, country, [app], clock());
      return (await q.findApp(db, country, appId))!;
    },

    /** The store's app of a bundle id (an operator's IPA import); 404 with a sentence when the store has none. */
    async lookupAppByBundleId(country: string, bundleId: string) {
      const app = (await itunes.lookupBundle(country, bundleId)).find((a) => a.bundleId === bundleId);
      if (!app) throw new AppError(404, 'NOT_FOUND', `The store of ${country} has no app with the bundle id ${bundleId}.`);
      await q.upsertApps(db, country, [app], clock());
      return (await q.findApp(db, country, app.appId))!;
    },

    /** Who did what, and when (docs/architecture.md, Operator policy). */
    audit: (actor: string, action: string, subject: object) => q.recordAudit(db, actor, action, subject),
    auditPage: (page: number, pageSize: number) => q.auditPage(db, page, pageSize),

    async isBlacklisted(country: string, appId: number) {
      return q.isBlacklisted(db, country, appId);
    },

    /** Admin: removes a decrypted version from the latest list, and its stored file. */
    async deleteDone(actor: string, appId: number, appVerId: number) {
      const removed = await q.deleteVersions(db, appId, appVerId, ['Done']);
      if (removed.length === 0) throw notFound('This version');
      await q.recordAudit(db, actor, 'delete-version', { appId, appVerId });
      await deps.onRemoved?.(removed);
    },

    /** Admin: removes a queue entry (app_ver_id null = an app-level request), optionally blacklisting the app. */
    async deleteQueued(actor: string, appId: number, appVerId: number | null, options: { blacklist: boolean }) {
      const removed = await q.deleteVersions(db, appId, appVerId, [...q.ACTIVE_STATUSES, 'Not']);
      if (removed.length === 0) throw notFound('This queue entry');
      if (options.blacklist) {
        for (const country of new Set(removed.map((r) => r.country))) await q.addToBlacklist(db, country, appId, actor);
      }
      await q.recordAudit(db, actor, options.blacklist ? 'delete-queue-blacklist' : 'delete-queue', { appId, appVerId });
      await deps.onRemoved?.(removed);
    },
  };
}

export type CatalogService = ReturnType<typeof createCatalogService>;
