import type { PlistObject, PlistValue } from '../plist.js';
import type { Profile } from '../profile.js';

/**
 * The entitlements to sign a main executable (app or app extension) with: what the profile grants,
 * with its wildcards made concrete for this bundle id. iOS refuses a signature that claims more
 * than the profile, so nothing is added that the profile does not hold; wildcard-only values
 * (a bare '*', which a profile may grant but a binary may not claim) are dropped.
 */
export function entitlementsFor(profile: Pick<Profile, 'entitlements' | 'teamId'>, bundleId: string): PlistObject {
  const team = profile.teamId;
  const concrete = (value: string) => (value === `${team}.*` ? `${team}.${bundleId}` : value === '*' ? '' : value);
  const result: PlistObject = {};
  for (const [key, value] of Object.entries(profile.entitlements)) {
    const made = makeConcrete(value, concrete);
    if (made !== undefined) result[key] = made;
  }
  result['application-identifier'] = `${team}.${bundleId}`;
  result['com.apple.developer.team-identifier'] = team;
  return result;
}

function makeConcrete(value: PlistValue, concrete: (v: string) => string): PlistValue | undefined {
  if (typeof value === 'string') {
    const made = concrete(value);
    return made === '' ? undefined : made;
  }
  if (Array.isArray(value)) {
    const items = value.map((v) => makeConcrete(v, concrete)).filter((v): v is PlistValue => v !== undefined);
    return items;
  }
  return value;
}
