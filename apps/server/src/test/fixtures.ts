/** Paths of the repository's real-world fixtures (fixtures/PROVENANCE.md says where each came from). */
import path from 'node:path';

export const fixturesDir = path.resolve(import.meta.dirname, '../../../../fixtures');
/** Xcode-built, signed arm64 IPA with a binary Info.plist (cryptid 0). */
export const fixtureIpa = path.join(fixturesDir, 'binaries/fastlane_very-capable-app_arm64_cryptid0.ipa');
