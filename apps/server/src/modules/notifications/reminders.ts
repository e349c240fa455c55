/**
 * The notifications no event tells of (docs/architecture.md, Notifications): what time brings. A
 * periodic pass (lifecycle.ts) looks for
 * - 'needs-sign': an installed app whose certificate is revoked or whose certificate or profile
 *   ends within EXPIRY_NOTICE_DAYS, that recovery (modules/sign/recovery.ts) will not sign again:
 *   its re-sign was given up, or it is a day past the point (RENEW_BEFORE_DAYS) where recovery
 *   signs again and it was not (recovery does not run, or cannot);
 * - 'expiring': a certificate or profile a person's installed apps depend on that ends within
 *   EXPIRY_NOTICE_DAYS with nothing to renew it: no identity signs for them any more (no
 *   Registered device, or their developer account left the pool);
 * - 'plan-ending': a premium plan that ends within PLAN_ENDING_NOTICE_DAYS and will not renew.
 * Each is keyed by its subject and the end it tells of, so a pass run again, or by another
 * process, tells nothing twice; a new sign (a new artifact) or a new end is a new notification.
 */
import type { Database } from '../../db/client.js';
import { planLabel } from '../billing/schemas.js';
import * as q from './reminder-queries.js';
import type { Notice, NotificationsService } from './service.js';

export interface RemindersDeps {
  db: Database;
  clock: () => Date;
  notifications: Pick<NotificationsService, 'notify'>;
  /** Whether an identity signs for the user now (modules/identity/signing.ts). */
  signing: { canSignFor(userId: string): Promise<boolean> };
  settings: {
    /** EXPIRY_NOTICE_DAYS, in ms. */
    expiryNoticeMs: number;
    /** PLAN_ENDING_NOTICE_DAYS, in ms. */
    planEndingMs: number;
    /** RENEW_BEFORE_DAYS, in ms: recovery signs again what ends within it. */
    renewBeforeMs: number;
  };
  log: { warn(obj: object, msg: string): void };
}

const day = (date: Date) => date.toISOString().slice(0, 10);

/** The search page of an app in a country: its card opens the version modal, where Sign is. */
const appPage = (country: string, name: string) =>
  `/search/${country.toLowerCase()}/${encodeURIComponent(name)}`;

/** What an artifact's owner is told, if anything: see the file's comment. */
export type Reminder =
  | { kind: 'needs-sign'; why: string }
  | { kind: 'expiring'; subject: 'profile' | 'certificate'; id: string; endsAt: Date }
  | undefined;

/** How long past its due point an artifact recovery should have signed again counts as left by it. */
const RECOVERY_GRACE_MS = 86_400_000;

/**
 * Decides one artifact. Recovery signs again by itself an artifact whose last re-sign did not fail,
 * for a user an identity signs for (`canSign`): at once when its certificate is revoked, and once it
 * ends within `renewBeforeMs`; until a day past that point it is left to recovery.
 */
export function reminderFor(
  a: q.ThreatenedArtifact,
  context: { now: Date; renewBeforeMs: number; canSign: boolean },
): Reminder {
  const { now, renewBeforeMs, canSign } = context;
  const ends = [
    a.certNotAfter && {
      subject: 'certificate' as const,
      id: a.certFingerprint ?? '',
      endsAt: a.certNotAfter,
    },
    a.profileExpiresAt && {
      subject: 'profile' as const,
      id: a.profileUuid ?? '',
      endsAt: a.profileExpiresAt,
    },
  ]
    .filter((e) => !!e)
    .sort((x, y) => x.endsAt.getTime() - y.endsAt.getTime());
  const first = ends[0];
  const recoveryDueBy = now.getTime() + renewBeforeMs - RECOVERY_GRACE_MS;
  const isLeftToRecovery =
    canSign &&
    a.lastReason === null &&
    (a.certRevoked || (first !== undefined && first.endsAt.getTime() > recoveryDueBy));
  if (isLeftToRecovery) return undefined;
  const hasEnded = first !== undefined && first.endsAt <= now;
  if (a.certRevoked) return { kind: 'needs-sign', why: 'Its signing certificate was revoked.' };
  if (hasEnded) return { kind: 'needs-sign', why: `Its ${first.subject} expired on ${day(first.endsAt)}.` };
  if (!first) return undefined;
  // It still opens: with an identity for the user, their own sign renews it; without one, nothing does.
  if (canSign) return { kind: 'needs-sign', why: `Its ${first.subject} expires on ${day(first.endsAt)}.` };
  return { kind: 'expiring', ...first };
}

export function createReminders(deps: RemindersDeps) {
  const { db, clock, notifications, signing, settings } = deps;

  async function artifactNotices(now: Date): Promise<Array<[string, Notice]>> {
    const threatened = await q.threatenedArtifacts(db, new Date(now.getTime() + settings.expiryNoticeMs));
    const canSign = new Map<string, boolean>();
    const notices: Array<[string, Notice]> = [];
    // One 'expiring' per person and certificate or profile, naming how many apps it takes with it.
    const expiring = new Map<string, { userId: string; titles: string[]; subject: string; endsAt: Date }>();
    for (const a of threatened) {
      if (!canSign.has(a.userId)) canSign.set(a.userId, await signing.canSignFor(a.userId));
      const reminder = reminderFor(a, {
        now,
        renewBeforeMs: settings.renewBeforeMs,
        canSign: canSign.get(a.userId)!,
      });
      if (reminder?.kind === 'needs-sign') {
        notices.push([
          a.userId,
          {
            kind: 'needs-sign',
            key: `needs-sign:${a.artifactId}`,
            title: `${a.title} needs a new sign`,
            body: `${reminder.why} Sign it again, then install it.`,
            // The version's card has Sign; without an identity for them, the Device tab says why not.
            url: canSign.get(a.userId) && a.country && a.name ? appPage(a.country, a.name) : '/my?tab=device',
          },
        ]);
      } else if (reminder?.kind === 'expiring') {
        const key = `expiring:${reminder.subject}:${reminder.id}:${reminder.endsAt.toISOString()}`;
        const entry = expiring.get(`${a.userId}\u0000${key}`) ?? {
          userId: a.userId,
          titles: [],
          subject: reminder.subject,
          endsAt: reminder.endsAt,
        };
        entry.titles.push(a.title);
        expiring.set(`${a.userId}\u0000${key}`, entry);
      }
    }
    for (const [id, e] of expiring) {
      const [first, ...rest] = e.titles;
      const apps = rest.length === 0 ? first! : `${first!} and ${rest.length} more`;
      notices.push([
        e.userId,
        {
          kind: 'expiring',
          key: id.slice(id.indexOf('\u0000') + 1),
          title: `${apps} stop${rest.length === 0 ? 's' : ''} opening on ${day(e.endsAt)}`,
          body: `The ${e.subject} ${rest.length === 0 ? 'it' : 'they'} were signed with expires then, and nothing can renew it until a device of yours is Registered again.`,
          url: '/my?tab=device',
        },
      ]);
    }
    return notices;
  }

  async function planNotices(now: Date): Promise<Array<[string, Notice]>> {
    const ending = await q.plansEnding(db, now, new Date(now.getTime() + settings.planEndingMs));
    return ending.map(({ userId, endsAt, plan }) => [
      userId,
      {
        kind: 'plan-ending',
        key: `plan-ending:${endsAt.toISOString()}`,
        title: `Your plan ends on ${day(endsAt)}`,
        body: `${planLabel(plan)} will not renew: choose a plan to keep premium decrypts.`,
        url: '/my?tab=product',
      },
    ]);
  }

  return {
    /** One pass: tells each person what is due (once per subject and end); returns how many were told. */
    async runPass(): Promise<number> {
      const now = clock();
      let told = 0;
      for (const [userId, notice] of [...(await artifactNotices(now)), ...(await planNotices(now))]) {
        try {
          if (await notifications.notify(userId, notice)) told++;
        } catch (err) {
          deps.log.warn({ err, userId, kind: notice.kind }, 'a reminder could not be made');
        }
      }
      return told;
    },
  };
}

export type Reminders = ReturnType<typeof createReminders>;
