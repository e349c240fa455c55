import type { SignType, UpdateEvent } from '@sideport/contracts';
import type { Database } from '../../db/client.js';
import { AppError } from '../../platform/errors.js';
import type { EventBus } from '../../platform/events.js';
import type { DecryptService } from '../decrypt/service.js';
import type { SignService } from '../sign/service.js';
import { notInPlaceReason, teamOf } from './installed.js';
import * as q from './queries.js';

export interface UpdateRunsDeps {
  db: Database;
  clock: () => Date;
  bus: Pick<EventBus, 'publish'>;
  decrypt: Pick<DecryptService, 'requestApp'>;
  sign: Pick<SignService, 'request'>;
  /** Told of each update that became Ready (a notification). */
  onReady?: (run: q.RunRow) => Promise<void>;
  log: { warn(obj: object, msg: string): void };
}

/** Open runs one advance pass looks at; the rest wait for the next. */
const ADVANCE_BATCH = 500;

/** A refusal that will not pass by itself (no device, a mode not offered): the run stops with its sentence. */
const isRefusal = (err: unknown): err is AppError => err instanceof AppError && err.status < 500;

/**
 * An update's way (docs/architecture.md, Update tracking): the new version's decryption is asked
 * like any request (the user's plan and daily limit, premium first), then, once Done, its sign in
 * the installed artifact's mode for the user's Registered devices, then Ready for Install. Each step
 * moves a run only from the state it read, so processes that advance at once move it once.
 */
export function createUpdateRuns(deps: UpdateRunsDeps) {
  const { db, clock, bus, log } = deps;

  const tell = (run: q.RunRow) => {
    const event: UpdateEvent = {
      type: 'update',
      app_id: String(run.appId),
      sign_type: run.signType,
      state: run.state,
    };
    return bus.publish({ kind: 'live', event, userId: run.userId });
  };

  async function fail(run: q.RunRow, from: q.RunRow['state'], reason: string) {
    const moved = await q.moveRun(db, run.id, from, { state: 'Failed', reason, updatedAt: clock() });
    if (moved) await tell(moved);
    return moved;
  }

  /** Decrypting: once the version is Done, its sign in the same mode is asked. */
  async function afterDecrypt(run: q.RunRow) {
    const entry = await q.entryOfVersion(db, run.appId, run.toVersion);
    if (!entry) return fail(run, 'Decrypting', 'The decrypt request of this version was removed.');
    if (entry.status === 'Not')
      return fail(run, 'Decrypting', entry.reason ?? 'This version cannot be decrypted.');
    if (entry.status !== 'Done' || entry.appVerId === null) return run;
    try {
      await deps.sign.request(run.userId, run.appId, entry.appVerId, run.signType);
    } catch (err) {
      if (!isRefusal(err)) throw err;
      return fail(run, 'Decrypting', err.message);
    }
    const moved = await q.moveRun(db, run.id, 'Decrypting', {
      state: 'Signing',
      toAppVerId: entry.appVerId,
      updatedAt: clock(),
    });
    if (moved) await tell(moved);
    return moved && afterSign(moved);
  }

  /** Signing: once the sign is Done the update is Ready, with whether iOS updates in place. */
  async function afterSign(run: q.RunRow) {
    if (run.toAppVerId === null) return run;
    const signed = await q.signOf(db, run.userId, run.appId, run.toAppVerId, run.signType);
    if (!signed) return fail(run, 'Signing', 'The sign of this version was removed.');
    if (signed.state !== 'idle') return run;
    if (signed.status !== 'Done' || !signed.fileKey)
      return fail(run, 'Signing', signed.lastReason ?? 'The new version could not be signed.');
    const certs = new Map(
      (
        await q.certificatesOf(
          db,
          [run.fromCertFingerprint, signed.certFingerprint].filter((f): f is string => f !== null),
        )
      ).map((c) => [c.fingerprint, c.certPem]),
    );
    const why = notInPlaceReason(
      { bundleId: run.fromBundleId, team: teamOf(certs.get(run.fromCertFingerprint ?? '')) },
      { bundleId: signed.bundleId, team: teamOf(certs.get(signed.certFingerprint ?? '')) },
    );
    const moved = await q.moveRun(db, run.id, 'Signing', {
      state: 'Ready',
      inPlace: why === null,
      reason: why,
      updatedAt: clock(),
    });
    if (moved) {
      await tell(moved);
      await deps.onReady?.(moved);
    }
    return moved;
  }

  async function advance(run: q.RunRow): Promise<q.RunRow | undefined> {
    if (run.state === 'Decrypting') return afterDecrypt(run);
    if (run.state === 'Signing') return afterSign(run);
    return run;
  }

  return {
    /**
     * Starts a user's update of an installed artifact to `toVersion` (the store's): asks for the
     * version's decryption, records the run and moves it as far as it goes now. A refusal of the
     * decrypt request (the daily limit, a blacklisted app) is the caller's to answer.
     */
    async start(installed: q.InstalledRow, toVersion: string, automatic: boolean) {
      const answer = await deps.decrypt.requestApp(installed.userId, installed.country, installed.appId);
      const now = clock();
      const run = await q.startRun(db, {
        userId: installed.userId,
        appId: installed.appId,
        signType: installed.signType as SignType,
        country: installed.country,
        fromAppVerId: installed.appVerId,
        fromBundleId: installed.bundleId,
        fromCertFingerprint: installed.certFingerprint,
        toVersion: answer.version ?? toVersion,
        toAppVerId: null,
        state: 'Decrypting',
        automatic,
        inPlace: true,
        reason: null,
        createdAt: now,
        updatedAt: now,
      });
      await tell(run);
      return (await advance(run)) ?? run;
    },

    /** Moves every open run as far as it goes (after a decrypt or sign event, and periodically). */
    async advanceOpen() {
      for (const run of await q.openRuns(db, ADVANCE_BATCH)) {
        try {
          await advance(run);
        } catch (err) {
          log.warn({ err, update: run.id }, 'an update could not move on');
        }
      }
    },
  };
}

export type UpdateRuns = ReturnType<typeof createUpdateRuns>;
