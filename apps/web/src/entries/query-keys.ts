/**
 * The query keys of every server answer the client caches, in one place because live events, an
 * action's refetch and the feature that asks the query all name the same cache: whoever edits or
 * refetches one takes its key from here, never a retyped array. A prefix key (`lists`, `searches`,
 * `all`) matches every query under it.
 */

export type PagedList = 'latest' | 'queue';

/** The catalogue: the paged lists, the searches and the queue's notice. */
export const catalogKeys = {
  lists: ['list'] as const,
  list: (list: PagedList) => ['list', list] as const,
  searches: ['search'] as const,
  search: (country: string, keyword: string) => ['search', country, keyword] as const,
  queueStatus: ['queue-status'] as const,
};

/** The version modal: `lists` and `histories` match every app's. */
export const versionKeys = {
  lists: ['versions'] as const,
  list: (country: string, appId: string) => ['versions', country, appId] as const,
  histories: ['version-history'] as const,
  history: (country: string, appId: string) => ['version-history', country, appId] as const,
};

/** The admin console: `all` matches every one of its panels. */
export const adminKeys = {
  all: ['admin'] as const,
  agents: ['admin', 'agents'] as const,
  queue: ['admin', 'queue'] as const,
  audit: ['admin', 'audit'] as const,
  devices: ['admin', 'devices'] as const,
  identity: ['admin', 'identity'] as const,
  accounts: ['admin', 'accounts'] as const,
  capabilities: ['admin', 'capabilities'] as const,
  copyAppIds: ['admin', 'capabilities', 'copy-app-ids'] as const,
  setup: ['admin', 'setup'] as const,
  updates: ['admin', 'updates'] as const,
  setupLink: (token: string) => ['setup-link', token] as const,
};

/** The signed-in person's account (refetched on device events). */
export const accountKeys = {
  info: ['info'] as const,
};

/** The signed-in person's updates of installed apps (My page's Updates, the app cards' badge). */
export const updateKeys = {
  all: ['updates'] as const,
  list: ['updates', 'list'] as const,
  auto: ['updates', 'auto'] as const,
};

/** The signed-in person's notifications: the bell's list and the per-kind choices. */
export const notificationKeys = {
  all: ['notifications'] as const,
  list: ['notifications', 'list'] as const,
  choices: ['notifications', 'choices'] as const,
};
