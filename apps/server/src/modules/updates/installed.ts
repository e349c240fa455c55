import { X509Certificate } from 'node:crypto';
import type { SignType } from '@sideport/contracts';
import { compareVersionNumbers } from '../decrypt/service.js';
import type { InstalledRow } from './queries.js';

/**
 * What a user holds of an app in one mode is their newest artifact of it (by version number):
 * an older artifact left beside a newer one is not what an update replaces.
 */
export function newestPerApp(rows: readonly InstalledRow[]): InstalledRow[] {
  const newest = new Map<string, InstalledRow>();
  for (const row of rows) {
    const key = `${row.userId}\u0000${row.appId}\u0000${row.signType}`;
    const held = newest.get(key);
    if (!held || compareVersionNumbers(row.version ?? '', held.version ?? '') > 0) newest.set(key, row);
  }
  return [...newest.values()];
}

/** Whether the store's version is newer than the installed one (a store that went back offers nothing). */
export const hasUpdate = (row: Pick<InstalledRow, 'version' | 'storeVersion'>) =>
  row.storeVersion !== null &&
  row.version !== null &&
  compareVersionNumbers(row.storeVersion, row.version) > 0;

export const runKey = (userId: string, appId: number, signType: SignType) =>
  `${userId}\u0000${appId}\u0000${signType}`;

/** The team of a signing certificate: its subject's OU, as Apple issues them. */
export function teamOf(certPem: string | undefined): string | null {
  if (!certPem) return null;
  try {
    const subject = new X509Certificate(certPem).subject;
    return /^OU=(.+)$/m.exec(subject)?.[1] ?? null;
  } catch {
    return null;
  }
}

/**
 * Why iOS would not update the installed app in place with the new artifact (its data stays with
 * an app of the same bundle id signed by the same team), or null when it will.
 */
export function notInPlaceReason(
  before: { bundleId: string | null; team: string | null },
  after: { bundleId: string | null; team: string | null },
): string | null {
  if (before.bundleId !== null && after.bundleId !== null && before.bundleId !== after.bundleId)
    return `The new version is signed as ${after.bundleId}, not ${before.bundleId}: iOS installs it beside the old app, whose data stays with it.`;
  if (before.team !== null && after.team !== null && before.team !== after.team)
    return `The new version is signed by team ${after.team}, not ${before.team}: iOS will not update the installed app in place; remove it first (its data goes with it).`;
  return null;
}
