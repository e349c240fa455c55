// zod/mini, like account.ts: My page parses these in the web app.
import * as z from 'zod/mini';
import { signType } from './sign-modes.js';

/**
 * Where an update of an installed app stands: the store has a newer version (Available); its
 * decryption was asked (Decrypting); the new version is being signed like the installed one
 * (Signing); its artifact waits for Install, which only the phone can do (Ready); or it stopped
 * with a reason (Failed).
 */
export const updateState = z.enum(['Available', 'Decrypting', 'Signing', 'Ready', 'Failed']);
export type UpdateState = z.infer<typeof updateState>;

/** One entry of GET /api/updates: an app the caller installed in one mode, and the store's newer version. */
export const appUpdate = z.object({
  app_id: z.string(),
  country: z.string(),
  name: z.string(),
  icon: z.string(),
  bundle_id: z.string(),
  /** The version of the caller's newest artifact of the app in this mode, and its store version id. */
  installed_version: z.string(),
  installed_app_ver_id: z.string(),
  /** The store's current version, as the last update check found it. */
  store_version: z.string(),
  /** The mode the installed artifact was signed in; the update is signed in the same one. */
  sign_type: signType,
  /** The devices the installed artifact was signed for. */
  udids: z.array(z.string()),
  state: updateState,
  /** The new version's store version id once its decryption is Done (Install names it). */
  app_ver_id: z.nullable(z.string()),
  /** Whether automatic updates are on for this app (for it alone or for all apps). */
  automatic: z.boolean(),
  /**
   * False when the new artifact's bundle id or team differs from the installed one: iOS installs
   * it beside the old app (or refuses), not in place, and the old app's data stays with the old app.
   */
  in_place: z.boolean(),
  /** Why it Failed, or why it will not update in place; null otherwise. */
  reason: z.nullable(z.string()),
});
export type AppUpdate = z.infer<typeof appUpdate>;

export const appUpdates = z.array(appUpdate);

/** GET and PUT /api/updates/auto: automatic updates (premium), for every app or for some. */
export const autoUpdateSettings = z.object({
  all: z.boolean(),
  app_ids: z.array(z.string()),
});
export type AutoUpdateSettings = z.infer<typeof autoUpdateSettings>;

/** PUT /api/updates/auto body: `app_id` null turns automatic updates on or off for every app. */
export const autoUpdateChange = z.object(
  {
    app_id: z.nullable(z.string().check(z.regex(/^[1-9]\d{0,15}$/, 'app_id must be a store app id.'))),
    enabled: z.boolean({ error: 'enabled must be true or false.' }),
  },
  { error: 'Send a JSON object with app_id (an app id, or null for every app) and enabled (true or false).' },
);
export type AutoUpdateChange = z.infer<typeof autoUpdateChange>;

/** GET /api/admin/updates: how many updates wait, and the automatic ones today against the cap. */
export const updatesOverview = z.object({
  /** Installed apps (user and mode) whose store version is newer and whose update was not started. */
  waiting: z.int(),
  /** Updates being decrypted or signed now. */
  running: z.int(),
  /** Automatic updates started today (UTC), and the operator's cap in force. */
  automatic_today: z.int(),
  automatic_daily_cap: z.int(),
  /** The cap when the operator set none: AUTO_UPDATE_DAILY_CAP. */
  automatic_daily_cap_default: z.int(),
  /** Whether the cap in force is one the operator set in the admin console (it outlives restarts). */
  automatic_daily_cap_is_set: z.boolean(),
  /** Apps (country and app) the update check follows, and when it last looked at one (ISO) or null. */
  tracked_apps: z.int(),
  last_checked_at: z.nullable(z.string()),
});
export type UpdatesOverview = z.infer<typeof updatesOverview>;

/** The largest daily cap of automatic updates an operator may set. */
export const AUTO_UPDATE_CAP_MAX = 100_000;

/** PUT /api/admin/updates/cap: automatic updates a UTC day may start; null: back to AUTO_UPDATE_DAILY_CAP. */
export const autoUpdateCapChange = z.object(
  {
    cap: z.nullable(
      z
        .int('cap must be a whole number, or null for the configured default.')
        .check(
          z.minimum(0, 'cap must be 0 (no automatic updates) or more.'),
          z.maximum(AUTO_UPDATE_CAP_MAX, `cap must be at most ${AUTO_UPDATE_CAP_MAX}.`),
        ),
    ),
  },
  { error: 'Send {cap}: a whole number of automatic updates a day, or null for the configured default.' },
);
export type AutoUpdateCapChange = z.infer<typeof autoUpdateCapChange>;

/** POST /api/admin/updates/check: what an update check run now did. */
export const updateCheckResult = z.object({
  /** Apps (country and app) due for a check that this pass looked up. */
  asked: z.int(),
  /** Lookup calls it made (batched by country). */
  store_calls: z.int(),
  /** Apps whose store version changed. */
  changed: z.int(),
  /** Automatic updates it started. */
  automatic: z.int(),
});
export type UpdateCheckResult = z.infer<typeof updateCheckResult>;

/** Live event: one of the caller's updates changed (its state); My page refetches its list. */
export const updateEvent = z.object({
  type: z.literal('update'),
  app_id: z.string(),
  sign_type: signType,
  state: updateState,
});
export type UpdateEvent = z.infer<typeof updateEvent>;
