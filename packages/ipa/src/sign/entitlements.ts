/**
 * The entitlements a main executable is signed with: the app's own, restricted to what the
 * provisioning profile allows, with the profile's identity written in. iOS refuses an app that
 * claims anything its profile does not grant, so every value is checked against the profile.
 */
import type { PlistObject, PlistValue } from '../plist.js';
import type { Profile } from '../profile.js';

export interface EntitlementsInput {
  readonly profile: Pick<Profile, 'entitlements' | 'teamId'>;
  /** The bundle id the executable is signed for (after DUP remapping). */
  readonly bundleId: string;
  /** What the app was signed with before (its embedded entitlements), if anything. */
  readonly own?: PlistObject;
  /** Renames the app's own app groups (DUP); identity otherwise. */
  readonly remapGroup?: (group: string) => string;
  /** Renames a bundle id inside keychain groups and similar (DUP); identity otherwise. */
  readonly remapId?: (id: string) => string;
}

/**
 * App groups follow the app under DUP: a group named after the old identifier takes the new one,
 * any other moves under the new identifier, so the app and its extensions still share it.
 */
export function createGroupRemap(oldMainId: string, newMainId: string): (group: string) => string {
  return (group) => {
    const name = group.startsWith('group.') ? group.slice('group.'.length) : group;
    if (name === oldMainId || name.startsWith(`${oldMainId}.`))
      return `group.${newMainId}${name.slice(oldMainId.length)}`;
    return `group.${newMainId}.${name}`;
  };
}

const APP_ID = 'application-identifier';
const TEAM_ID = 'com.apple.developer.team-identifier';
const KEYCHAIN = 'keychain-access-groups';
const APP_GROUPS = 'com.apple.security.application-groups';

/** Profile patterns: a trailing '*' matches any rest ('TEAM.*', '*'). */
export function isAllowedBy(pattern: PlistValue, value: string): boolean {
  if (typeof pattern !== 'string') return false;
  return pattern.endsWith('*') ? value.startsWith(pattern.slice(0, -1)) : pattern === value;
}

export function mergeEntitlements(input: EntitlementsInput): PlistObject {
  const { profile, bundleId } = input;
  const team = profile.teamId;
  const remapGroup = input.remapGroup ?? ((g: string) => g);
  const remapId = input.remapId ?? ((id: string) => id);
  const own = input.own ?? {};
  const granted = profile.entitlements;
  const result: PlistObject = {};

  // Start from what the profile grants, wildcards made concrete for this bundle.
  for (const [key, value] of Object.entries(granted)) {
    const concrete = makeConcrete(value, team, bundleId);
    if (concrete !== undefined) result[key] = concrete;
  }
  result[APP_ID] = `${team}.${bundleId}`;
  result[TEAM_ID] = team;

  // Keychain groups: the app's own, moved to the new team (and id), kept when the profile allows them.
  const ownKeychain = stringList(own[KEYCHAIN]).map((group) => {
    const dot = group.indexOf('.');
    return `${team}.${remapId(dot === -1 ? group : group.slice(dot + 1))}`;
  });
  const allowedKeychain = stringList(granted[KEYCHAIN]);
  const keychain = unique(ownKeychain.length > 0 ? ownKeychain : [`${team}.${bundleId}`]).filter((g) =>
    allowedKeychain.some((p) => isAllowedBy(p, g)),
  );
  if (keychain.length > 0) result[KEYCHAIN] = keychain;
  else delete result[KEYCHAIN];

  // App groups: the app's own, remapped consistently, kept when the profile lists them.
  if (own[APP_GROUPS] !== undefined) {
    const allowedGroups = stringList(granted[APP_GROUPS]);
    const groups = unique(stringList(own[APP_GROUPS]).map(remapGroup)).filter((g) =>
      allowedGroups.some((p) => isAllowedBy(p, g)),
    );
    if (groups.length > 0) result[APP_GROUPS] = groups;
    else delete result[APP_GROUPS];
  }

  // Other array entitlements the app claims: only the values the profile grants.
  for (const [key, value] of Object.entries(own)) {
    if ([APP_ID, TEAM_ID, KEYCHAIN, APP_GROUPS, 'get-task-allow'].includes(key) || !(key in granted))
      continue;
    const grant = granted[key]!;
    // A profile grants a list as a list of allowed values or as one pattern ('*' for associated domains).
    const patterns = Array.isArray(grant) ? grant : typeof grant === 'string' ? [grant] : [];
    if (Array.isArray(value) && patterns.length > 0) {
      const kept = stringList(value).filter((v) => patterns.some((p) => isAllowedBy(p, v)));
      if (kept.length > 0) result[key] = kept;
    }
  }
  return result;
}

function makeConcrete(value: PlistValue, team: string, bundleId: string): PlistValue | undefined {
  if (typeof value === 'string') {
    if (value === '*') return undefined; // a profile may grant '*', a binary may not claim it
    return value === `${team}.*` ? `${team}.${bundleId}` : value;
  }
  if (Array.isArray(value)) {
    return value.map((v) => makeConcrete(v, team, bundleId)).filter((v): v is PlistValue => v !== undefined);
  }
  return value;
}

function stringList(value: PlistValue | undefined): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}
