import {
  NO_SIGN_STATUSES,
  type AppEntry,
  type DecryptStatus,
  type QueueStatus,
  type SignStatuses,
} from '@sideport/contracts';
import type { Database } from '../../db/client.js';
import { fail, notFound } from '../../platform/errors.js';
import { ERRORS } from '../../platform/error-codes.js';
import type { RecordAudit } from '../audit/service.js';
import type { ItunesClient, StoreApp } from './itunes.js';
import * as q from './queries.js';

export interface CatalogServiceDeps {
  db: Database;
  itunes: Pick<ItunesClient, 'search' | 'lookup' | 'lookupBundle' | 'lookupMany'>;
  clock: () => Date;
  cacheTtlMs: number;
  /** DECRYPT_ALLOW_PAID: false shows paid apps Not before anyone asks (the request would be refused). */
  allowPaid?: boolean;
  log?: { warn(obj: object, msg: string): void };
  /** Writes the audit log: an admin's removals and blacklistings. */
  audit: RecordAudit;
  /** Told of every entry an admin removed (its stored file goes, open pages hear of it). */
  onRemoved?: (removed: q.RemovedEntry[]) => Promise<void>;
}

const MB = 1024 * 1024;

/**
 * An agent that has not called for this long is taken as gone: a working one long-polls for jobs
 * every half minute or so, and heartbeats a third of its lease while it works.
 */
export const AGENT_QUIET_MS = 3 * 60_000;

/** The sentence of a paid app on a server that refuses them (docs/architecture.md, Operator policy). */
export const PAID_REFUSED = ERRORS.PAID_REFUSED.sentence;
export const BLACKLISTED = ERRORS.BLACKLISTED.sentence;

/** The facts of a decrypt entry that an app / version entry shows over the app's own. */
export interface EntryFacts {
  appVerId: number | null;
  version: string | null;
  status: string;
  premium: boolean;
  /** Of the decrypted IPA, once Done. */
  minimumOs?: string | null;
  sizeBytes?: number | null;
  doneAt?: Date | null;
  /** Why it is Not, where the viewer may see it (see AppEntry.reason). */
  reason?: string | null;
  /** Its place among the waiting entries, on the queue. */
  position?: number | null;
}

/** MB to the hundredth; anything above 0 bytes is at least 0.01 MB, so a small IPA never shows as 0 MB. */
export function megabytes(bytes: number | null | undefined) {
  if (bytes == null) return null;
  if (bytes <= 0) return 0;
  return Math.max(0.01, Math.round((bytes / MB) * 100) / 100);
}

/** The store answers both http and https for its icons; a page served over https cannot show http images. */
export const httpsIcon = (url: string) => url.replace(/^http:\/\//i, 'https://');

/**
 * An app / version entry of docs/product.md, Entities and fields: the app's store facts, overridden by the entry's own
 * (the decrypted IPA's size and minimum iOS once Done, the store listing's kept beside them).
 * Lists show no sign statuses (they are per user and version); the version modal does.
 */
export function toEntry(app: q.AppRow, e: EntryFacts, signs: SignStatuses = NO_SIGN_STATUSES): AppEntry {
  const hasIpaFacts = e.sizeBytes != null || e.minimumOs != null;
  return {
    app_id: String(app.appId),
    app_ver_id: e.appVerId === null ? null : String(e.appVerId),
    country: app.country,
    name: app.name,
    developer: app.developer,
    version: e.version ?? app.version,
    icon: httpsIcon(app.iconUrl),
    itunes: app.storeUrl,
    raiting: app.rating,
    raiting_count: app.ratingCount,
    bundle_id: app.bundleId,
    require: e.minimumOs ?? app.minimumOs,
    size: megabytes(e.sizeBytes ?? app.sizeBytes),
    premium: e.premium,
    status: e.status as DecryptStatus,
    ...signs,
    store_size: hasIpaFacts ? megabytes(app.sizeBytes) : null,
    store_require: hasIpaFacts ? app.minimumOs : null,
    decrypted_at: e.status === 'Done' ? (e.doneAt?.toISOString() ?? null) : null,
    reason: e.status === 'Not' ? (e.reason ?? null) : null,
    position: e.position ?? null,
  };
}

/** Who sees an entry's agent reason: the person who requested it, and admins. */
export interface Viewer {
  id: string;
  isAdmin: boolean;
}
export const maySeeReason = (viewer: Viewer | undefined, requestedBy: string | null) =>
  viewer !== undefined && (viewer.isAdmin || (requestedBy !== null && requestedBy === viewer.id));

/** An agent's reason on an entry of a shared answer (a cached search), shown only to whom maySeeReason allows. */
export interface PrivateReason {
  appId: string;
  reason: string;
  requestedBy: string | null;
}

/** A search answer with the agent reasons its viewers may or may not see. */
export interface SearchAnswer {
  entries: AppEntry[];
  privateReasons: PrivateReason[];
}

/** The entries as `viewer` sees them: the private reasons they may see filled in. */
export function entriesFor(answer: SearchAnswer, viewer: Viewer): AppEntry[] {
  const visible = new Map(
    answer.privateReasons.filter((r) => maySeeReason(viewer, r.requestedBy)).map((r) => [r.appId, r.reason]),
  );
  if (visible.size === 0) return answer.entries;
  return answer.entries.map((e) => (visible.has(e.app_id) ? { ...e, reason: visible.get(e.app_id)! } : e));
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
    /** Done versions, newest first; `country`: each with that country's store record of its app where known. */
    async latest(page: number, anchor?: number, country?: string) {
      const top = anchor ?? (await q.maxDoneSeq(db));
      const rows = top === undefined ? [] : await q.listLatest(db, page, top, country);
      return { entries: rows.map((r) => toEntry(r.app, r.entry)), anchor: top };
    },

    async queue(page: number, anchor?: number) {
      const top = anchor ?? (await q.maxSeq(db));
      const rows = top === undefined ? [] : await q.listQueue(db, page, top);
      const positions = await q.queuePositions(
        db,
        rows.filter((r) => r.entry.status === 'Pending').map((r) => r.entry.seq),
      );
      return {
        entries: rows.map((r) =>
          toEntry(r.app, { ...r.entry, position: positions.get(r.entry.seq) ?? null }),
        ),
        anchor: top,
      };
    },

    /** Whether requests wait for an agent (GET /api/queue-status); `agentSeenAt`: an agent's latest call. */
    async queueStatus(agentSeenAt: Date | null): Promise<QueueStatus> {
      const waiting = await q.countPending(db);
      const isQuiet = agentSeenAt === null || clock().getTime() - agentSeenAt.getTime() > AGENT_QUIET_MS;
      return {
        waiting,
        agent_seen_at: agentSeenAt?.toISOString() ?? null,
        waiting_for_agent: waiting > 0 && isQuiet,
      };
    },

    /** Store search, cached for cacheTtlMs; a store failure falls back to a stale cache when there is one. */
    async search(country: string, keyword: string): Promise<SearchAnswer> {
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
      const privateReasons: PrivateReason[] = [];
      const entries = rows.map(({ app, status, appVerId, premium, blacklisted, reason, requestedBy }) => {
        // Policies are everyone's to know, before anyone asks: the request would be refused.
        const isPaidRefused = !deps.allowPaid && (app.price ?? 0) > 0 && status !== 'Done';
        const policy = blacklisted && status !== 'Done' ? BLACKLISTED : isPaidRefused ? PAID_REFUSED : null;
        const shown = policy ? 'Not' : (status ?? 'Available');
        if (!policy && shown === 'Not' && reason)
          privateReasons.push({ appId: String(app.appId), reason, requestedBy });
        return toEntry(app, {
          appVerId: appVerId === null ? null : Number(appVerId),
          version: null,
          status: shown,
          premium,
          reason: policy,
        });
      });
      return { entries, privateReasons };
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

    /**
     * The store's current records of these apps in one storefront, in one Lookup call, kept as the
     * cached records (the update check: a newer version shows on the app's pages at once). An app
     * the store no longer lists is simply absent from the answer.
     */
    async refreshApps(country: string, appIds: readonly number[]): Promise<StoreApp[]> {
      if (appIds.length === 0) return [];
      const wanted = new Set(appIds);
      const found = (await itunes.lookupMany(country, appIds)).filter((a) => wanted.has(a.appId));
      if (found.length > 0) await q.upsertApps(db, country, found, clock());
      return found;
    },

    /** The store's app of a bundle id (an operator's IPA import); 404 with a sentence when the store has none. */
    async lookupAppByBundleId(country: string, bundleId: string) {
      const app = (await itunes.lookupBundle(country, bundleId)).find((a) => a.bundleId === bundleId);
      if (!app) throw fail('APP_NOT_IN_STORE', country, bundleId);
      await q.upsertApps(db, country, [app], clock());
      return (await q.findApp(db, country, app.appId))!;
    },

    /** Whether an admin refused the app, from any country's entry (a track id is every storefront's). */
    async isBlacklisted(appId: number) {
      return q.isBlacklisted(db, appId);
    },

    /** Admin: removes a decrypted version from the latest list, and its stored file. */
    async deleteDone(actor: string, appId: number, appVerId: number) {
      const removed = await q.deleteVersions(db, appId, appVerId, ['Done']);
      if (removed.length === 0) throw notFound('This version');
      await deps.audit(actor, 'delete-version', { appId, appVerId });
      await deps.onRemoved?.(removed);
    },

    /**
     * Admin: removes a queue entry (app_ver_id null = an app-level request), optionally blacklisting
     * the app. An app-level request is its country's: `country` names it (every country's without).
     * A blacklist refuses the app in every country, so it removes every country's app-level request.
     */
    async deleteQueued(
      actor: string,
      appId: number,
      appVerId: number | null,
      options: { blacklist: boolean; country?: string | undefined },
    ) {
      const only = options.blacklist ? undefined : options.country;
      const removed = await q.deleteVersions(db, appId, appVerId, [...q.ACTIVE_STATUSES, 'Not'], only);
      if (removed.length === 0) throw notFound('This queue entry');
      if (options.blacklist) {
        for (const country of new Set(removed.map((r) => r.country)))
          await q.addToBlacklist(db, country, appId, actor);
      }
      await deps.audit(actor, options.blacklist ? 'delete-queue-blacklist' : 'delete-queue', {
        appId,
        appVerId,
        ...(only !== undefined && appVerId === null ? { country: only } : {}),
      });
      await deps.onRemoved?.(removed);
    },
  };
}

export type CatalogService = ReturnType<typeof createCatalogService>;
