/**
 * The chaos run's operator command (docs/agent-protocol.md): it decrypts nothing. It reports the
 * contract's lines at CHAOS_STEP_MS intervals, so kills land mid-job, then writes the repository's
 * sample app relabelled for the job, named after the job's lease id (`Chaos job 12-1`) so the run
 * can tell afterwards which job produced a stored IPA.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { makeSampleIpa } from '../apps/server/src/dev/sample-ipa.js';
import { chaosAppVerId, chaosDisplayName } from './apps.js';

const env = process.env;
const stepMs = Number(env.CHAOS_STEP_MS ?? 300);

const appId = Number(env.SIDEPORT_APP_ID);
const appVerId = env.SIDEPORT_APP_VER_ID || String(chaosAppVerId(appId));
console.log('status Downloading');
for (const progress of [25, 50, 75, 100]) {
  await sleep(stepMs);
  console.log(`progress ${progress}`);
}
console.log(`app_ver_id ${appVerId}`);
console.log('version 1.0');
console.log('status Process');
await makeSampleIpa({
  output: env.SIDEPORT_OUTPUT!,
  bundleId: env.SIDEPORT_BUNDLE_ID!,
  version: '1.0',
  displayName: chaosDisplayName(env.SIDEPORT_JOB_ID!),
  appVerId,
});
await sleep(stepMs);
