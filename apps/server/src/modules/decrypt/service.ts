import type { AppEntry, DecryptAnswer, SignStatuses, VersionHistoryAnswer } from '@sideport/contracts';
import type { Database } from '../../db/client.js';
import { fail } from '../../platform/errors.js';
import { waitForEvent, type EventBus } from '../../platform/events.js';
import type { FileStore } from '../../platform/storage.js';
import type { UrlSigner } from '../../platform/signed-urls.js';
import type { BillingService } from '../billing/service.js';
import { maySeeReason, PAID_REFUSED, toEntry, type CatalogService, type Viewer } from '../catalog/service.js';
import type { RemovedEntry } from '../catalog/queries.js';
import type { VersionReadModel } from '../versions/read-model.js';
import { publishEntry } from './entry-events.js';
import * as q from './queries.js';

export interface DecryptSettings {
  /** DECRYPT_ALLOW_PAID: decrypt apps whose store price is above 0. */
  allowPaid: boolean;
  /** How long a downgrade waits for an agent's version list before answering what is known. */
  versionsWaitMs: number;
  /** How long a version list is reused before an agent is asked again. */
  versionListTtlMs: number;
  downloadUrlTtlSeconds: number;
}

export interface DecryptServiceDeps {
  db: Database;
  clock: () => Date;
  bus: EventBus;
  files: FileStore;
  urls: UrlSigner;
  catalog: Pick<CatalogService, 'lookupApp' | 'isBlacklisted'>;
  billing: Pick<BillingService, 'entitlement' | 'consumeDecrypt'>;
  settings: DecryptSettings;
  /** The caller's five signing statuses per version. */
  versions: Pick<VersionReadModel, 'signStatuses'> & Partial<Pick<VersionReadModel, 'capabilities'>>;
}

const PRIORITY_FREE = 0;
const PRIORITY_PREMIUM = 1;
/** Version lists come before decrypts: a person is waiting on the downgrade answer. */
export const PRIORITY_VERSIONS = 2;

const isActive = (status: string) => (q.ACTIVE_STATUSES as readonly string[]).includes(status);

/** A file name for a download: `{name}_{version}.ipa`, without path separators or control characters. */
export function ipaFileName(name: string, version: string) {
  // eslint-disable-next-line no-control-regex -- control characters are what it removes
  const clean = (s: string) => s.replace(/[\u0000-\u001f\u007f/\\:*?"<>|]+/g, ' ').trim() || 'app';
  return `${clean(name)}_${clean(version)}.ipa`;
}

/** Decrypt requests, version lists and downloads (docs/product.md, States to Calls), for signed-in people. */
export function createDecryptService(deps: DecryptServiceDeps) {
  const { db, clock, bus, files, urls, catalog, billing, settings } = deps;

  function answer(entry: q.EntryRow, joined: boolean): DecryptAnswer {
    const message =
      entry.status === 'Done'
        ? 'This version is already decrypted.'
        : joined
          ? 'This app is already requested; your request joined it.'
          : 'Requested.';
    return {
      status: entry.status as DecryptAnswer['status'],
      app_id: String(entry.appId),
      app_ver_id: entry.appVerId === null ? null : String(entry.appVerId),
      version: entry.version,
      premium: entry.premium,
      joined,
      message,
    };
  }

  /** What an existing entry means to a new request for it: ready, joined (and perhaps made premium), or refused. */
  async function join(tx: Database, entry: q.EntryRow, premium: boolean) {
    if (entry.status === 'Not') {
      throw fail('CANNOT_DECRYPT', entry.reason);
    }
    if (premium && !entry.premium && isActive(entry.status)) {
      const raised = await raiseToPremium(tx, entry);
      return answer(raised, true);
    }
    return answer(entry, true);
  }

  async function raiseToPremium(tx: Database, entry: q.EntryRow) {
    const raised = (await q.updateEntry(tx, entry.seq, { premium: true, updatedAt: clock() }))!;
    const job = await q.jobOfEntry(tx, entry.seq);
    if (job && job.priority < PRIORITY_PREMIUM) await q.updateJob(tx, job.id, { priority: PRIORITY_PREMIUM });
    await publishEntry(bus, raised, tx);
    return raised;
  }

  /** Policy refusals that do not depend on the user (blacklist, paid apps). */
  async function checkPolicy(
    country: string,
    appId: number,
    app: { price: number | null; version: string },
    userId: string,
  ) {
    if (await catalog.isBlacklisted(appId)) throw fail('BLACKLISTED');
    if (!settings.allowPaid && (app.price ?? 0) > 0) {
      // docs/architecture.md, Operator policy: the entry becomes Not with the reason, so lists show Not Support.
      const existing = await q.findByVersionString(db, country, appId, app.version);
      if (!existing) {
        const entry = await q
          .insertEntry(db, {
            country,
            appId,
            appVerId: null,
            version: app.version,
            status: 'Not',
            premium: false,
            requestedBy: userId,
            reason: PAID_REFUSED,
            now: clock(),
          })
          .catch(() => undefined);
        if (entry) await publishEntry(bus, entry);
      }
      throw fail('PAID_REFUSED');
    }
  }

  /** Retries once when a concurrent request made the same entry first: the second one joins it. */
  async function once<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (!q.isUniqueViolation(err)) throw err;
      return work();
    }
  }

  async function queueNew(
    tx: Database,
    userId: string,
    entry: Parameters<typeof q.insertEntry>[1],
  ): Promise<DecryptAnswer> {
    const row = await q.insertEntry(tx, entry);
    // Counted in the same transaction: a request refused later gives its count back.
    await billing.consumeDecrypt(userId, tx);
    await q.insertJob(tx, {
      kind: 'decrypt',
      versionSeq: row.seq,
      country: row.country,
      appId: row.appId,
      priority: row.premium ? PRIORITY_PREMIUM : PRIORITY_FREE,
      now: clock(),
    });
    await publishEntry(bus, row, tx);
    await bus.publish({ kind: 'jobs-queued' }, tx);
    return answer(row, false);
  }

  async function requirePremium(userId: string) {
    const entitlement = await billing.entitlement(userId);
    if (!entitlement.premium) throw fail('NEED_PREMIUM');
    return entitlement;
  }

  async function knownVersion(tx: Database, country: string, appId: number, appVerId: number) {
    const list = await q.findVersionList(tx, country, appId);
    return list?.versions.find((v) => v.appVerId === appVerId)?.version;
  }

  /** The viewer's entries: their signing statuses, and the reason of a Not entry when they may see it. */
  async function entriesFor(
    viewer: Viewer,
    app: Parameters<typeof toEntry>[0],
    rows: q.EntryRow[],
  ): Promise<AppEntry[]> {
    const done = rows.filter((r) => r.status === 'Done' && r.appVerId !== null);
    const signs = done.length
      ? await deps.versions.signStatuses(
          viewer.id,
          done.map((r) => ({ appId: r.appId, appVerId: r.appVerId! })),
        )
      : new Map<number, SignStatuses>();
    // What signing keeps of each Done version's capabilities for the viewer (modules/versions/capabilities).
    const kept = await deps.versions.capabilities?.(
      viewer.id,
      done
        .filter((r) => r.fileKey !== null)
        .map((r) => ({ appId: r.appId, appVerId: r.appVerId!, fileKey: r.fileKey! })),
    );
    return rows.map((r) => {
      const entry = toEntry(
        app,
        { ...r, reason: maySeeReason(viewer, r.requestedBy) ? r.reason : null },
        (r.appVerId !== null && signs.get(r.appVerId)) || undefined,
      );
      return kept && r.appVerId !== null && kept.has(r.appVerId)
        ? { ...entry, capabilities: kept.get(r.appVerId)! }
        : entry;
    });
  }

  return {
    /** GET /api/decrypt/{country}/{app_id}: the app's current store version. */
    async requestApp(userId: string, country: string, appId: number): Promise<DecryptAnswer> {
      const app = await catalog.lookupApp(country, appId);
      await checkPolicy(country, appId, app, userId);
      const { premium } = await billing.entitlement(userId);
      return once(() =>
        db.transaction(async (tx) => {
          const existing =
            (await q.findActiveAppLevel(tx, country, appId)) ??
            (await q.findByVersionString(tx, country, appId, app.version));
          if (existing) return join(tx, existing, premium);
          return queueNew(tx, userId, {
            country,
            appId,
            appVerId: null,
            version: app.version,
            status: 'Pending',
            premium,
            requestedBy: userId,
            now: clock(),
          });
        }),
      );
    },

    /** GET /api/decrypt/{country}/{app_id}/{app_ver_id}: one store version; premium only. */
    async requestVersion(
      userId: string,
      country: string,
      appId: number,
      appVerId: number,
    ): Promise<DecryptAnswer> {
      await requirePremium(userId);
      const app = await catalog.lookupApp(country, appId);
      await checkPolicy(country, appId, app, userId);
      return once(() =>
        db.transaction(async (tx) => {
          const existing = await q.findByAppVerId(tx, appId, appVerId);
          if (existing) return join(tx, existing, true);
          // In the transaction: PGlite has one connection, which the transaction holds.
          const version = await knownVersion(tx, country, appId, appVerId);
          if (version === undefined) {
            throw fail('VERSION_UNKNOWN');
          }
          return queueNew(tx, userId, {
            country,
            appId,
            appVerId,
            version,
            status: 'Pending',
            premium: true,
            requestedBy: userId,
            now: clock(),
          });
        }),
      );
    },

    /** PATCH /api/decrypt/...: moves a waiting request to the premium queue; premium only. */
    async moveToPremium(
      userId: string,
      country: string,
      appId: number,
      appVerId: number | null,
    ): Promise<DecryptAnswer> {
      await requirePremium(userId);
      return db.transaction(async (tx) => {
        const entry =
          appVerId === null
            ? await q.findActiveAppLevel(tx, country, appId)
            : await q.findByAppVerId(tx, appId, appVerId);
        // A versioned entry is every country's (one binary in every storefront): any listing may move it.
        if (!entry || !isActive(entry.status)) throw fail('NOT_QUEUED');
        return answer(entry.premium ? entry : await raiseToPremium(tx, entry), true);
      });
    },

    /** GET /api/version/{country}/{app_id}: the versions Sideport knows, newest first. */
    async versionList(viewer: Viewer, country: string, appId: number): Promise<AppEntry[]> {
      const app = await catalog.lookupApp(country, appId);
      const entries = await entriesFor(viewer, app, await q.entriesOfApp(db, country, appId));
      return entries.sort(newestFirst());
    },

    /**
     * POST /api/version/{country}/{app_id} (downgrade; premium): the store's version history from
     * an agent's versions job, reused while fresh; versions never requested are Available.
     */
    async history(viewer: Viewer, country: string, appId: number): Promise<VersionHistoryAnswer> {
      await requirePremium(viewer.id);
      const app = await catalog.lookupApp(country, appId);
      let list = await q.findVersionList(db, country, appId);
      const isFresh =
        list !== undefined && clock().getTime() - list.fetchedAt.getTime() < settings.versionListTtlMs;
      if (!isFresh) {
        const listed = waitForEvent(
          bus,
          (e) => e.kind === 'versions-listed' && e.country === country && e.appId === appId,
          settings.versionsWaitMs,
        );
        const job = await q.insertJob(db, {
          kind: 'versions',
          country,
          appId,
          priority: PRIORITY_VERSIONS,
          now: clock(),
        });
        if (job) await bus.publish({ kind: 'jobs-queued' });
        await listed;
        list = await q.findVersionList(db, country, appId);
      }
      const rows = await q.entriesOfApp(db, country, appId);
      const known = await entriesFor(viewer, app, rows);
      const byVersionId = new Map(known.filter((e) => e.app_ver_id !== null).map((e) => [e.app_ver_id!, e]));
      const fromStore = (list?.versions ?? []).map(
        (v) =>
          byVersionId.get(String(v.appVerId)) ??
          toEntry(app, { appVerId: v.appVerId, version: v.version, status: 'Available', premium: false }),
      );
      const listed = new Set(fromStore.map((e) => e.app_ver_id));
      const others = known.filter((e) => !listed.has(e.app_ver_id));
      // The agent lists the store's history newest first: that order decides between equal numbers.
      const listOrder = new Map(fromStore.map((e, index) => [e.app_ver_id, index]));
      const version_list = [...others, ...fromStore].sort(newestFirst(listOrder));
      return { name: app.name, version_list };
    },

    /** GET /api/download/{app_id}/{app_ver_id}: a signed URL that expires. */
    async downloadUrl(appId: number, appVerId: number, baseUrl: string): Promise<{ url: string }> {
      const entry = await q.findByAppVerId(db, appId, appVerId);
      if (!entry || entry.status !== 'Done' || !entry.fileKey) {
        throw fail('NOT_DECRYPTED');
      }
      const app = await catalog.lookupApp(entry.country, entry.appId);
      const fileName = ipaFileName(app.name, entry.version ?? app.version);
      const presigned = await files.presignGet(entry.fileKey, {
        expiresInSeconds: settings.downloadUrlTtlSeconds,
        fileName,
      });
      if (presigned) return { url: presigned };
      return {
        url: new URL(
          urls.sign(`/files/ipa/${appId}/${appVerId}`, settings.downloadUrlTtlSeconds),
          baseUrl,
        ).toString(),
      };
    },

    /** What the signed file route serves: the stored file of a Done version and its download name. */
    async downloadable(appId: number, appVerId: number) {
      const entry = await q.findByAppVerId(db, appId, appVerId);
      if (!entry || entry.status !== 'Done' || !entry.fileKey) return undefined;
      const app = await catalog.lookupApp(entry.country, entry.appId);
      return { fileKey: entry.fileKey, fileName: ipaFileName(app.name, entry.version ?? app.version) };
    },
  };
}

/** After an admin delete: the stored files go, and open pages hear of it. */
export function dropDecryptedFiles(deps: {
  files: Pick<FileStore, 'delete'>;
  bus: Pick<EventBus, 'publish'>;
  log: { warn(obj: object, msg: string): void };
}) {
  return async (removed: RemovedEntry[]) => {
    for (const entry of removed) {
      if (entry.fileKey) {
        await deps.files
          .delete(entry.fileKey)
          .catch((err: unknown) =>
            deps.log.warn({ err, key: entry.fileKey }, 'could not delete a stored file'),
          );
      }
      await publishEntry(deps.bus, { ...entry, status: 'Deleted' }, undefined, { deleted: true });
    }
  };
}

/**
 * Compares dotted version numbers part by part as numbers ('10.2' after '9.9', '2.0.1' after '2.0');
 * a part that is not a number compares as text. Negative when `a` is older.
 */
export function compareVersionNumbers(a: string, b: string): number {
  const pa = a.split('.');
  const pb = b.split('.');
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const [x = '0', y = '0'] = [pa[i], pb[i]];
    const [nx, ny] = [Number(x), Number(y)];
    const diff = Number.isFinite(nx) && Number.isFinite(ny) ? nx - ny : x.localeCompare(y);
    if (diff !== 0) return Math.sign(diff);
  }
  return 0;
}

/**
 * Newest first: app-level requests (no version id yet) on top, then by version number. Store
 * version ids are not in release order (they are not even in order on some stores), so they only
 * break ties, after the agent's own newest-first order when there is one (`listOrder`).
 */
function newestFirst(listOrder: Map<string | null, number> = new Map()) {
  return (a: AppEntry, b: AppEntry) => {
    if ((a.app_ver_id === null) !== (b.app_ver_id === null)) return a.app_ver_id === null ? -1 : 1;
    const byNumber = compareVersionNumbers(b.version, a.version);
    if (byNumber !== 0) return byNumber;
    const [ia, ib] = [listOrder.get(a.app_ver_id), listOrder.get(b.app_ver_id)];
    if (ia !== undefined && ib !== undefined) return ia - ib;
    return Number(b.app_ver_id ?? 0) - Number(a.app_ver_id ?? 0);
  };
}

export type DecryptService = ReturnType<typeof createDecryptService>;
