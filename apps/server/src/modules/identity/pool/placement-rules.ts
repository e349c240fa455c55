/**
 * The rules of the pool of developer accounts (docs/sign-service.md, A pool of developer
 * accounts), as pure functions: when an account's membership year began, how many slots of each
 * family it has used, and which account a user's devices go to.
 */
import { DEVICE_FAMILIES, type DeviceFamily } from '@sideport/contracts';

const YEAR_MS = 366 * 86_400_000;

/** A date as the console, the audit log and the sentences write it: YYYY-MM-DD (UTC). */
export const isoDate = (date: Date) => date.toISOString().slice(0, 10);

/** `date` plus whole calendar years in UTC (29 February becomes 1 March in other years). */
export function addYearsUtc(date: Date, years: number): Date {
  const next = new Date(date);
  next.setUTCFullYear(date.getUTCFullYear() + years);
  return next;
}

/**
 * The membership year `now` falls in, from a renewal date the admin or the configuration gave
 * (any year's: later renewals follow it yearly). Without one nothing ever comes back, so the year
 * began at the epoch. A date more than a year away cannot be the next renewal: read it as unknown,
 * which counts more slots, never fewer.
 */
export function membershipYear(renewsAt: Date | null, now: Date): { start: Date; nextRenewal: Date | null } {
  if (renewsAt === null) return { start: new Date(0), nextRenewal: null };
  let next = renewsAt;
  while (next.getTime() <= now.getTime()) next = addYearsUtc(next, 1);
  if (next.getTime() - now.getTime() > YEAR_MS) return { start: new Date(0), nextRenewal: null };
  return { start: addYearsUtc(next, -1), nextRenewal: next };
}

export type FamilyCounts = Record<DeviceFamily, number>;
export const noDevices = (): FamilyCounts =>
  Object.fromEntries(DEVICE_FAMILIES.map((f) => [f, 0])) as FamilyCounts;

/** One account as placement sees it. */
export interface Candidate {
  id: number;
  /** Slots used this membership year, per family. */
  used: FamilyCounts;
  /** UDIDs that already hold a slot on it this year: placing them there again takes none. */
  held: ReadonlySet<string>;
}

export interface GroupDevice {
  udid: string;
  family: DeviceFamily;
}

/** Slots of each family the group would take on an account: its devices that hold none there. */
export function slotsNeeded(candidate: Candidate, group: readonly GroupDevice[]): FamilyCounts {
  const needed = noDevices();
  const seen = new Set<string>();
  for (const device of group) {
    if (seen.has(device.udid) || candidate.held.has(device.udid)) continue;
    seen.add(device.udid);
    needed[device.family]++;
  }
  return needed;
}

const fits = (candidate: Candidate, group: readonly GroupDevice[], limit: number) => {
  const needed = slotsNeeded(candidate, group);
  return DEVICE_FAMILIES.every((f) => candidate.used[f] + needed[f] <= limit);
};

/**
 * Where a user's devices go: every one of them on one account, since a profile lists the devices
 * of one team and each artifact is signed once per user. `group` is all of them (the new device
 * included). The user's own account while the group fits there; otherwise the account where it
 * fits taking the fewest new slots (where the user's devices were before, or a half-finished move
 * of another process, costs none), then the one with the most room in the group's families, then
 * the oldest. undefined: no account has room for the whole group.
 */
export function choosePlacement(input: {
  candidates: readonly Candidate[];
  current: number | undefined;
  group: readonly GroupDevice[];
  limit: number;
}): Candidate | undefined {
  const { candidates, current, group, limit } = input;
  const own = candidates.find((c) => c.id === current);
  if (own && fits(own, group, limit)) return own;
  const families = new Set(group.map((d) => d.family));
  const total = (counts: FamilyCounts) => DEVICE_FAMILIES.reduce((sum, f) => sum + counts[f], 0);
  const room = (c: Candidate) => Math.min(...[...families].map((f) => limit - c.used[f]));
  return candidates
    .filter((c) => c.id !== current && fits(c, group, limit))
    .sort(
      (a, b) =>
        total(slotsNeeded(a, group)) - total(slotsNeeded(b, group)) || room(b) - room(a) || a.id - b.id,
    )[0];
}
