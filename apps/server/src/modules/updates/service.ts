import type {
  AppUpdate,
  AutoUpdateSettings,
  SignType,
  UpdatesOverview,
  UpdateState,
} from '@sideport/contracts';
import type { Database } from '../../db/client.js';
import { conflict, fail, notFound } from '../../platform/errors.js';
import type { BillingService } from '../billing/service.js';
import { httpsIcon } from '../catalog/service.js';
import { hasUpdate, newestPerApp, runKey } from './installed.js';
import * as q from './queries.js';
import type { UpdateRuns } from './runs.js';
import type { StoreCheck, StoreCheckResult } from './store-check.js';

export interface UpdatesServiceDeps {
  db: Database;
  clock: () => Date;
  check: StoreCheck;
  runs: UpdateRuns;
  billing: Pick<BillingService, 'entitlement'>;
  /**
   * AUTO_UPDATE_DAILY_CAP: automatic updates started per UTC day, for all users together, unless
   * the operator set another in the admin console (kept in settings, read at each pass).
   */
  autoDailyCap: number;
  /** Writes the audit log (the operator's change of the cap). */
  audit(actor: string, action: string, subject: object): Promise<void>;
  log: { warn(obj: object, msg: string): void; info?(obj: object, msg: string): void };
}

/** app_id 0 in auto_updates: every app of the user. */
const ALL_APPS = 0;

const utcDay = (date: Date) => date.toISOString().slice(0, 10);

/**
 * Updates of installed apps (docs/architecture.md, Update tracking): My page's list and its
 * Update action, the automatic updates of premium users under the operator's daily cap, and
 * the admin's count of what waits. The store check (store-check.ts) finds new versions; the runs
 * (runs.ts) take an update through decrypt and sign to Install.
 */
export function createUpdatesService(deps: UpdatesServiceDeps) {
  const { db, clock, check, runs, billing } = deps;

  /** A run shown with an installed artifact: the one for the store's version, or a Ready one not yet installed. */
  function stateOf(row: q.InstalledRow, run: q.RunRow | undefined): { state: UpdateState; run?: q.RunRow } {
    if (run && row.storeVersion !== null && run.toVersion === row.storeVersion)
      return { state: run.state, run };
    if (run && run.state === 'Ready' && run.toAppVerId === row.appVerId) return { state: 'Ready', run };
    return { state: 'Available' };
  }

  async function entriesOf(userId: string): Promise<AppUpdate[]> {
    const [installed, userRuns, auto] = await Promise.all([
      q.installed(db, { userId }),
      q.runsOf(db, { userId }),
      q.autoOf(db, userId),
    ]);
    const runByKey = new Map(userRuns.map((r) => [runKey(r.userId, r.appId, r.signType), r]));
    const autoAll = auto.includes(ALL_APPS);
    const entries: AppUpdate[] = [];
    for (const row of newestPerApp(installed)) {
      const run = runByKey.get(runKey(row.userId, row.appId, row.signType));
      const isReadyNew = run?.state === 'Ready' && run.toAppVerId === row.appVerId;
      if (!hasUpdate(row) && !isReadyNew) continue;
      const { state, run: shown } = stateOf(row, run);
      if (isReadyNew) {
        // The newest artifact is the update's own: shown until its install link was fetched.
        const signed = await q.signOf(db, userId, row.appId, row.appVerId, row.signType);
        if (signed?.lastUsedAt && signed.lastUsedAt >= run.updatedAt) continue;
      }
      // What was installed before: the artifact the run updates, while it is still there.
      const before =
        (isReadyNew &&
          installed.find(
            (i) => i.appId === row.appId && i.signType === row.signType && i.appVerId === run.fromAppVerId,
          )) ||
        row;
      entries.push({
        app_id: String(row.appId),
        country: row.country,
        name: row.name ?? `App ${row.appId}`,
        icon: httpsIcon(row.iconUrl ?? ''),
        bundle_id: before.bundleId ?? '',
        installed_version: before.version ?? '',
        installed_app_ver_id: String(before.appVerId),
        store_version: row.storeVersion ?? row.version ?? '',
        sign_type: row.signType,
        udids: before.udids ?? [],
        state,
        app_ver_id: shown?.toAppVerId != null ? String(shown.toAppVerId) : null,
        automatic: autoAll || auto.includes(row.appId),
        in_place: shown?.inPlace ?? true,
        reason: shown?.reason ?? null,
      });
    }
    return entries.sort((a, b) => a.name.localeCompare(b.name) || a.sign_type - b.sign_type);
  }

  /** The installed artifact an update of (app, mode) replaces, or 404. */
  async function installedOf(userId: string, appId: number, signType: SignType) {
    const rows = newestPerApp(
      (await q.installed(db, { userId, appIds: [appId] })).filter((r) => r.signType === signType),
    );
    const row = rows[0];
    if (!row) throw notFound('This installed app');
    return row;
  }

  /** The operator's cap when they set one, else AUTO_UPDATE_DAILY_CAP. */
  const capInForce = async () => (await q.operatorCap(db)) ?? deps.autoDailyCap;

  /**
   * Starts the automatic updates that wait: for each premium user who turned them on, each
   * installed app whose store version is newer and whose update to it was not started, while
   * today's cap lasts. Returns how many it started.
   */
  async function startAutomatic(appIds?: number[]): Promise<number> {
    const choices = await q.autoFor(db, appIds ?? []);
    if (choices.length === 0) return 0;
    const usersAll = new Set(choices.filter((c) => c.appId === ALL_APPS).map((c) => c.userId));
    const chosen = new Set(choices.map((c) => `${c.userId}\u0000${c.appId}`));
    const wants = (userId: string, appId: number) =>
      usersAll.has(userId) || chosen.has(`${userId}\u0000${appId}`);
    const installed = newestPerApp(await q.installed(db, appIds ? { appIds } : {})).filter(
      (row) => hasUpdate(row) && wants(row.userId, row.appId),
    );
    if (installed.length === 0) return 0;
    const startedRuns = new Map(
      (await q.runsOf(db, { appIds: [...new Set(installed.map((r) => r.appId))] })).map((r) => [
        runKey(r.userId, r.appId, r.signType),
        r,
      ]),
    );
    const premium = new Map<string, boolean>();
    const cap = await capInForce();
    let started = 0;
    for (const row of installed) {
      const run = startedRuns.get(runKey(row.userId, row.appId, row.signType));
      if (run && run.toVersion === row.storeVersion) continue;
      if (!premium.has(row.userId)) premium.set(row.userId, (await billing.entitlement(row.userId)).premium);
      if (!premium.get(row.userId)) continue;
      if (!(await q.takeAutoSlot(db, utcDay(clock()), cap))) {
        deps.log.warn({ cap }, 'automatic updates reached the daily cap');
        break;
      }
      try {
        await runs.start(row, row.storeVersion!, true);
        started++;
      } catch (err) {
        deps.log.warn({ err, userId: row.userId, appId: row.appId }, 'an automatic update could not start');
      }
    }
    return started;
  }

  return {
    /** GET /api/updates: the caller's installed apps with a newer store version, and updates under way or ready. */
    list: entriesOf,

    /** POST /api/updates/{app_id}/{type}: the update of the installed app in that mode (decrypt, sign, Install). */
    async start(userId: string, appId: number, signType: SignType): Promise<AppUpdate> {
      const row = await installedOf(userId, appId, signType);
      if (!hasUpdate(row)) throw fail('UPDATE_CURRENT');
      const run = await q.findRun(db, userId, appId, signType);
      const isUnderWay = run && run.toVersion === row.storeVersion && run.state !== 'Failed';
      if (!isUnderWay) await runs.start(row, row.storeVersion!, false);
      const entry = (await entriesOf(userId)).find(
        (e) => e.app_id === String(appId) && e.sign_type === signType,
      );
      if (!entry) throw conflict('This update has already been installed.');
      return entry;
    },

    async autoSettings(userId: string): Promise<AutoUpdateSettings> {
      const apps = await q.autoOf(db, userId);
      return {
        all: apps.includes(ALL_APPS),
        app_ids: apps
          .filter((a) => a !== ALL_APPS)
          .map(String)
          .sort(),
      };
    },

    /** PUT /api/updates/auto: turning one on is premium's; turning one off is anyone's. */
    async setAuto(userId: string, appId: number | null, enabled: boolean): Promise<AutoUpdateSettings> {
      if (enabled && !(await billing.entitlement(userId)).premium) throw fail('NEED_PREMIUM');
      await q.setAuto(db, userId, appId ?? ALL_APPS, enabled, clock());
      if (enabled) {
        await startAutomatic(appId === null ? undefined : [appId]).catch((err: unknown) =>
          deps.log.warn({ err }, 'automatic updates could not start'),
        );
      }
      const apps = await q.autoOf(db, userId);
      return {
        all: apps.includes(ALL_APPS),
        app_ids: apps
          .filter((a) => a !== ALL_APPS)
          .map(String)
          .sort(),
      };
    },

    /** GET /api/admin/updates. */
    async overview(): Promise<UpdatesOverview> {
      const [rows, allRuns, running, tracked, today, set] = await Promise.all([
        q.installedWithStoreVersion(db),
        q.runsOf(db, {}),
        q.countRunning(db),
        q.trackedSummary(db),
        q.autoStarted(db, utcDay(clock())),
        q.operatorCap(db),
      ]);
      const runByKey = new Map(allRuns.map((r) => [runKey(r.userId, r.appId, r.signType), r]));
      const waiting = newestPerApp(rows).filter((row) => {
        if (!hasUpdate(row)) return false;
        const run = runByKey.get(runKey(row.userId, row.appId, row.signType));
        return !run || run.toVersion !== row.storeVersion;
      }).length;
      return {
        waiting,
        running,
        automatic_today: today,
        automatic_daily_cap: set ?? deps.autoDailyCap,
        automatic_daily_cap_default: deps.autoDailyCap,
        automatic_daily_cap_is_set: set !== undefined,
        tracked_apps: tracked.tracked,
        last_checked_at: tracked.lastCheckedAt?.toISOString() ?? null,
      };
    },

    /**
     * PUT /api/admin/updates/cap: the automatic updates a UTC day may start from now on (those
     * started today count against it), or null for AUTO_UPDATE_DAILY_CAP again; in the audit log.
     */
    async setAutoCap(cap: number | null, actor: string): Promise<UpdatesOverview> {
      await q.setOperatorCap(db, cap);
      await deps.audit(actor, 'set-auto-update-cap', { cap: cap ?? `default (${deps.autoDailyCap})` });
      // A higher cap lets the updates that waited for today's start now.
      if (cap === null || cap > 0)
        await startAutomatic().catch((err: unknown) =>
          deps.log.warn({ err }, 'automatic updates could not start'),
        );
      return this.overview();
    },

    /** The periodic pass: the store check, then the automatic updates it made possible. */
    async runPass(): Promise<StoreCheckResult & { automatic: number }> {
      const result = await check.run();
      const automatic = await startAutomatic();
      return { ...result, automatic };
    },

    /** Moves the updates under way on (a decrypt or sign of theirs changed). */
    advance: () => runs.advanceOpen(),
  };
}

export type UpdatesService = ReturnType<typeof createUpdatesService>;
