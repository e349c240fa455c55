/**
 * Which hashes a Mach-O's signature carries, chosen as Apple's codesign chooses them from the
 * deployment target: SHA-256 alone where every slice's minimum OS validates SHA-256 CodeDirectories
 * (iOS and tvOS 11, macOS 10.11.4), and a SHA-1 CodeDirectory first with a SHA-256 one beside it
 * where an older system, watchOS, or a binary that names no target may read it. rcodesign makes
 * the same choice from the same load commands (its `sha256_digest_support`).
 *
 * One step further than codesign: a file also keeps SHA-1 when the app it ships in targets an
 * older iOS (its Info.plist's MinimumOSVersion), since a dylib built for iOS 11 and signed with
 * SHA-256 alone fails to install on the iOS 9 and 10 devices its app supports
 * (calabash/iOSDeviceManager #244, which re-signs with both for that reason; zsign's `-L` does too).
 * The package README says which hashes a signature carries.
 */
import { PLATFORM_IOS, PLATFORM_MACOS, PLATFORM_TVOS } from '../macho/constants.js';
import type { MachOSlice } from '../macho/parse.js';

const version = (major: number, minor = 0, patch = 0): number => (major << 16) | (minor << 8) | patch;

/** The first version of each platform that validates a SHA-256 CodeDirectory alone. */
const SHA256_FROM: Record<number, number> = {
  [PLATFORM_MACOS]: version(10, 11, 4),
  [PLATFORM_IOS]: version(11),
  [PLATFORM_TVOS]: version(11),
};
// watchOS (4) and a target of platform 0 keep SHA-1 whatever their version; platforms newer than
// these (Mac Catalyst, the simulators, visionOS) validate SHA-256 from their first release.
const ALWAYS_SHA1 = new Set([0, 4]);

/** Whether a slice's signature needs a SHA-1 CodeDirectory: an old or unknown deployment target. */
function sliceNeedsSha1(slice: Pick<MachOSlice, 'target'>): boolean {
  if (slice.target === undefined) return true; // codesign's choice for a binary that names no target
  const { platform, minimumOs } = slice.target;
  if (ALWAYS_SHA1.has(platform)) return true;
  const from = SHA256_FROM[platform];
  return from !== undefined && minimumOs < from;
}

/** Whether a file's signatures carry SHA-1 beside SHA-256: all its slices do when one needs it. */
export function needsSha1(slices: readonly Pick<MachOSlice, 'target'>[]): boolean {
  return slices.some(sliceNeedsSha1);
}

/** Whether an app's Info.plist MinimumOSVersion ("10.3", "11.0.1") is older than iOS 11; an app that names none is not. */
export function appTargetsBeforeSha256(minimumOsVersion: string | undefined): boolean {
  if (minimumOsVersion === undefined) return false;
  const major = Number.parseInt(minimumOsVersion, 10);
  return Number.isFinite(major) && major < 11;
}
