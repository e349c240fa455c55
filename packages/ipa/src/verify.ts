import { check, type CheckOptions, type CheckReport } from './check.js';
import { isIpaError } from './errors.js';
import { readStoreMetadata, type StoreMetadata } from './store-metadata.js';

/**
 * What a decrypt result must be, as far as the caller knows it. Every value given must agree with
 * what the IPA says of itself: its Info.plist, and its iTunesMetadata.plist when it carries one
 * (an IPA without one cannot contradict a store id, and is not refused for lacking it).
 */
export interface DecryptExpectation {
  /** CFBundleIdentifier, and softwareVersionBundleId of iTunesMetadata.plist. */
  readonly bundleId?: string;
  /** The store's app id: itemId of iTunesMetadata.plist. */
  readonly appId?: string;
  /** The version string: CFBundleShortVersionString (CFBundleVersion when it has none). */
  readonly version?: string;
  /** The store's version id: softwareVersionExternalIdentifier of iTunesMetadata.plist. */
  readonly appVerId?: string;
  /**
   * Where `version` and `appVerId` come from, for the refusal's sentence: the job itself
   * ('requested', the default) or what the agent reported of the version it fetched ('reported').
   */
  readonly versionSource?: 'requested' | 'reported';
}

/** What a readable IPA says of itself, as `findContradiction` compares it. */
export interface DecryptedFacts {
  readonly report: CheckReport;
  /** CFBundleShortVersionString, or CFBundleVersion when it has none. */
  readonly version: string;
  /** Its iTunesMetadata.plist, when it carries one. */
  readonly metadata: StoreMetadata | undefined;
}

export type DecryptedVerdict =
  ({ readonly ok: true } & DecryptedFacts) | { readonly ok: false; readonly reason: string };

/**
 * Whether an IPA is a usable decrypted app: a safe archive with one app, every Mach-O slice
 * decrypted (cryptid 0), a version in its Info.plist, and nothing in it that contradicts
 * `expected`. A refusal carries a sentence saying what was found, for logs and for people; an
 * unreadable archive is a refusal too, any other error (a missing file) is thrown.
 */
export async function verifyDecrypted(
  ipaPath: string,
  expected: DecryptExpectation = {},
  options: CheckOptions = {},
): Promise<DecryptedVerdict> {
  let report: CheckReport;
  let metadata: StoreMetadata | undefined;
  try {
    report = await check(ipaPath, options);
    metadata = await readStoreMetadata(ipaPath, options);
  } catch (err) {
    if (isIpaError(err)) return { ok: false, reason: `The IPA is not usable: ${err.message}` };
    throw err;
  }
  if (!report.decrypted) {
    const encrypted = report.machOs
      .filter((m) => m.slices.some((s) => s.cryptid !== 0))
      .map((m) => m.path)
      .slice(0, 3);
    return { ok: false, reason: `The IPA is still encrypted (cryptid is not 0 in ${encrypted.join(', ')}).` };
  }
  const version = report.shortVersion ?? report.bundleVersion;
  // The bundle id first: another app altogether is the plainest refusal.
  const otherApp =
    expected.bundleId === undefined
      ? undefined
      : findContradiction({ report, version: version ?? '', metadata }, { bundleId: expected.bundleId });
  if (otherApp) return { ok: false, reason: otherApp };
  if (!version) return { ok: false, reason: 'The IPA names no version in its Info.plist.' };
  const reason = findContradiction({ report, version, metadata }, expected);
  return reason ? { ok: false, reason } : { ok: true, report, version, metadata };
}

/**
 * The first way an IPA contradicts what is expected of it, as a sentence naming the field and both
 * values; undefined when nothing does. Values not expected, and store fields the IPA lacks, are not
 * compared.
 */
export function findContradiction(found: DecryptedFacts, expected: DecryptExpectation): string | undefined {
  const { report, version, metadata } = found;
  const source = expected.versionSource ?? 'requested';
  if (expected.bundleId !== undefined) {
    if (report.bundleId !== expected.bundleId)
      return `The IPA is ${report.bundleId}, not the requested ${expected.bundleId}.`;
    if (metadata?.bundleId !== undefined && metadata.bundleId !== expected.bundleId) {
      return `The IPA's iTunesMetadata.plist names the app ${metadata.bundleId} (softwareVersionBundleId), not the requested ${expected.bundleId}.`;
    }
  }
  if (expected.appId !== undefined && metadata?.appId !== undefined && metadata.appId !== expected.appId) {
    return `The IPA's iTunesMetadata.plist names store app ${metadata.appId} (itemId), not the requested ${expected.appId}.`;
  }
  if (expected.version !== undefined && version.trim() !== expected.version.trim()) {
    const field = report.shortVersion !== null ? 'CFBundleShortVersionString' : 'CFBundleVersion';
    return `The IPA is version ${version} (${field} in its Info.plist), not the ${source} ${expected.version.trim()}.`;
  }
  if (
    expected.appVerId !== undefined &&
    metadata?.appVerId !== undefined &&
    metadata.appVerId !== expected.appVerId
  ) {
    return `The IPA's iTunesMetadata.plist names store version ${metadata.appVerId} (softwareVersionExternalIdentifier), not the ${source} ${expected.appVerId}.`;
  }
  return undefined;
}
