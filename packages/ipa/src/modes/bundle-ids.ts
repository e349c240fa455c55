/**
 * DUP mode: every bundle identifier of the app moves under a new one so the copy installs beside
 * the original. Nested bundles keep their suffix (com.old.app.share -> com.new.share); those
 * outside the app's namespace (a framework's org.cocoapods.Kit) move under it by their last part.
 */
import { IpaError } from '../errors.js';
import { isPlistDict, type PlistObject, type PlistValue } from '../plist.js';

export type BundleIdRemap = (id: string) => string;

// Apple's rule for bundle identifiers: alphanumerics, '-' and '.'.
const BUNDLE_ID = /^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$/;

export function assertBundleId(id: string, what: string): void {
  if (!BUNDLE_ID.test(id) || id.length > 155) {
    throw new IpaError('BUNDLE_ID_INVALID', `Expected ${what} to be a bundle identifier (letters, digits, '-' and '.'), found "${id}".`);
  }
}

export function createBundleIdRemap(oldMainId: string, newMainId: string): BundleIdRemap {
  assertBundleId(newMainId, 'the new bundle identifier');
  return (id) => {
    if (id === oldMainId) return newMainId;
    if (id.startsWith(`${oldMainId}.`)) return newMainId + id.slice(oldMainId.length);
    return `${newMainId}.${id.split('.').at(-1)}`;
  };
}

/** Keys whose string value names a bundle (watch apps and their extensions point at their hosts). */
const BUNDLE_ID_KEYS = new Set(['CFBundleIdentifier', 'WKCompanionAppBundleIdentifier', 'WKAppBundleIdentifier']);

/** A copy of an Info.plist with every bundle-identifier key rewritten, NSExtension attributes included. */
export function remapInfoPlist(info: PlistObject, remap: BundleIdRemap): PlistObject {
  return remapDict(info, remap);
}

function remapDict(dict: PlistObject, remap: BundleIdRemap): PlistObject {
  const out: PlistObject = {};
  for (const [key, value] of Object.entries(dict)) {
    out[key] = BUNDLE_ID_KEYS.has(key) && typeof value === 'string' ? remap(value) : remapValue(value, remap);
  }
  return out;
}

function remapValue(value: PlistValue, remap: BundleIdRemap): PlistValue {
  if (Array.isArray(value)) return value.map((item) => remapValue(item, remap));
  if (isPlistDict(value)) return remapDict(value, remap);
  return value;
}

/**
 * App groups follow the app: a group named after the old identifier takes the new one, any other
 * moves under the new identifier, so the app and its extensions still share the same group.
 */
export function createGroupRemap(oldMainId: string, newMainId: string): (group: string) => string {
  return (group) => {
    const name = group.startsWith('group.') ? group.slice('group.'.length) : group;
    if (name === oldMainId || name.startsWith(`${oldMainId}.`)) return `group.${newMainId}${name.slice(oldMainId.length)}`;
    return `group.${newMainId}.${name}`;
  };
}
