/** Paths of the repository's real-world fixtures (fixtures/PROVENANCE.md says where each came from). */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

// packages/ipa/src/test-support -> repository root -> fixtures
export const fixturesDir = fileURLToPath(new URL('../../../../fixtures/', import.meta.url));
export const fixtureIpa = join(fixturesDir, 'binaries/fastlane_very-capable-app_arm64_cryptid0.ipa');
export const profilesDir = join(fixturesDir, 'mobileprovision');
export const fixtureExecutablePath = 'Payload/very-capable-app.app/very-capable-app';
