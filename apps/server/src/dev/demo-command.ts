/**
 * The demo agent's operator command (`npm run demo`). It decrypts nothing: it hands over the
 * repository's sample app relabelled for the requested app and marked DEMO (its name, a DEMO.txt in
 * the bundle), printing the contract's lines on the way, so the request -> queue -> Done -> download
 * loop runs with no device. `versions` as first argument: a made-up version history, also marked.
 *
 * Reads the job from the SIDEPORT_ variables (docs/agent-protocol.md) and the store's record of the app
 * from the local iTunes server (DEMO_ITUNES_URL); DEMO_STEP_MS paces the steps so a person sees the
 * status change.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { makeSampleIpa } from './sample-ipa.js';

const env = process.env;
const stepMs = Number(env.DEMO_STEP_MS ?? 600);

/** A made-up but stable store version id for a demo version (real ones come from the store). */
function demoVersionId(appId: string, version: string) {
  let hash = 2166136261;
  for (const char of `${appId}/${version}`) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619) >>> 0;
  return 800_000_000 + (hash % 99_999_999);
}

async function storeRecord(): Promise<{ trackName: string; version: string }> {
  const url = new URL('lookup', `${env.DEMO_ITUNES_URL}/`);
  url.searchParams.set('id', env.SIDEPORT_APP_ID ?? '');
  url.searchParams.set('country', env.SIDEPORT_COUNTRY ?? '');
  const body = (await (await fetch(url)).json()) as {
    results?: Array<{ trackName: string; version: string }>;
  };
  const record = body.results?.[0];
  if (!record) {
    console.error(`The demo store does not know app ${env.SIDEPORT_APP_ID}.`);
    process.exit(3);
  }
  return record;
}

async function listVersions() {
  const app = await storeRecord();
  console.log('DEMO: a made-up version history');
  const major = Number.parseInt(app.version, 10);
  const versions = [app.version, ...[1, 2].filter((n) => major - n >= 1).map((n) => `${major - n}.0`)];
  for (const version of versions)
    console.log(JSON.stringify({ app_ver_id: demoVersionId(env.SIDEPORT_APP_ID!, version), version }));
}

async function handOver() {
  const app = await storeRecord();
  const version = env.SIDEPORT_VERSION || app.version;
  const appVerId = env.SIDEPORT_APP_VER_ID || String(demoVersionId(env.SIDEPORT_APP_ID!, version));
  console.log('DEMO: no real download or decryption happens; the sample app is relabelled.');
  console.log('status Downloading');
  for (const progress of [20, 40, 60, 80, 100]) {
    await sleep(stepMs);
    console.log(`progress ${progress}`);
  }
  console.log(`app_ver_id ${appVerId}`);
  console.log(`version ${version}`);
  console.log('status Downloaded');
  await sleep(stepMs);
  console.log('status Process');
  await makeSampleIpa({
    output: env.SIDEPORT_OUTPUT!,
    bundleId: env.SIDEPORT_BUNDLE_ID!,
    version,
    displayName: app.trackName,
    appVerId,
    demo: true,
  });
  await sleep(stepMs);
}

await (process.argv[2] === 'versions' ? listVersions() : handOver());
