/**
 * The whole loop of `npm run demo`, driven through the running demo server's own API as the web
 * app and an iPhone would: a decrypt request worked by the demo agent, a simulated iPhone enrolled
 * with a signed answer, its registration paid on the test-mode checkout, a sign for it and the
 * install manifest. Each step prints the link where a person sees it.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { parsePlistDict } from '@sideport/ipa';
import { createSimulatedDevice, SIMULATED_DEVICE_NAME } from '../modules/devices/simulated-device.js';

/** Facebook in the recorded store answers (fixtures/itunes): a free iPhone app. */
export const DEMO_APP = { country: 'KR', appId: '284882215', name: 'Facebook' } as const;
const SIGN_TYPE_NORMAL = 0;
const STEP_TIMEOUT_MS = 120_000;

export interface DemoLoopResult {
  appVerId: string;
  udid: string;
  /** The itms-services:// link iOS opens to install. */
  installUrl: string;
  /** The OTA manifest that link names, and the signed IPA the manifest names. */
  manifestUrl: string;
  ipaUrl: string;
}

interface Site {
  url: string;
  admin: { id: string; password: string };
}

/** Runs every step once; rejects with the step that did not finish. */
export async function runDemoLoop(site: Site, print: (line: string) => void): Promise<DemoLoopResult> {
  const cookie = await signIn(site);
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(new URL(path, site.url), {
      method,
      redirect: 'manual',
      headers: {
        cookie,
        // The site's own pages send this; the server refuses API calls without it (or an Origin).
        'sec-fetch-site': 'same-origin',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res;
  };
  const json = async <T>(method: string, path: string, body?: unknown) =>
    (await (await call(method, path, body)).json()) as T;
  const { country, appId, name } = DEMO_APP;

  print(`1. decrypt   ${site.url}/queue  (${name} asked for; the demo agent hands over the sample app)`);
  await call('GET', `/api/decrypt/${country}/${appId}`);
  const done = await waitFor(`${name} to be decrypted`, async () =>
    (
      await json<Array<{ app_ver_id: string; version: string; status: string }>>(
        'GET',
        `/api/version/${country}/${appId}`,
      )
    ).find((v) => v.status === 'Done'),
  );
  const download = await json<{ url: string }>('GET', `/api/download/${appId}/${done.app_ver_id}`);
  print(`   Done      ${name} ${done.version}, download: ${download.url}`);

  const devices = async () =>
    (
      await json<{ device_info: Array<{ UDID: string; status: string; name: string | null }> }>(
        'GET',
        '/api/info',
      )
    ).device_info;
  // A restarted demo keeps the simulated iPhone an earlier start enrolled: one per admin.
  const kept = (await devices()).find((d) => d.name === SIMULATED_DEVICE_NAME);
  let udid: string;
  if (kept) {
    udid = kept.UDID;
    print(`2. device    ${SIMULATED_DEVICE_NAME} ${udid}, enrolled before: ${site.url}/my?tab=device`);
  } else {
    const device = createSimulatedDevice();
    const profile = Buffer.from(await (await call('GET', '/api/udid/profile')).arrayBuffer());
    const answer = device.answer(profile);
    // The device posts without the person's cookie, as iOS does once the profile is installed.
    const enrolled = await fetch(answer.url, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/pkcs7-signature' },
      body: new Uint8Array(answer.body),
    });
    if (enrolled.status !== 301) throw new Error(`enrollment: ${enrolled.status} ${await enrolled.text()}`);
    udid = device.udid;
    print(`2. device    ${device.deviceName} ${udid} enrolled: ${site.url}/my?tab=device`);
  }

  const status = (await devices()).find((d) => d.UDID === udid)?.status;
  if (status === 'Add' || status === 'Expired') {
    const index = (await devices()).findIndex((d) => d.UDID === udid);
    const checkout = await json<{ url: string }>('GET', `/api/pay/device/${index}`);
    await call('POST', `${new URL(checkout.url).pathname}/pay`);
    print(`3. paid      ${checkout.url}  (TEST MODE: nobody pays)`);
  } else {
    print(`3. paid      before (TEST MODE: nobody pays): ${site.url}/billing/dev-portal`);
  }
  await waitFor('the device to be Registered', async () =>
    (await devices()).find((d) => d.UDID === udid && d.status === 'Registered'),
  );
  print(`   Registered by the dev identity; its CA: ${site.url}/api/admin/identity/ca.pem`);

  await call('PUT', `/api/sign/${appId}/${done.app_ver_id}`, { type: SIGN_TYPE_NORMAL });
  await waitFor('the sign to be Done', async () => {
    const res = await fetch(
      new URL(`/api/check/sign/${appId}/${done.app_ver_id}/${SIGN_TYPE_NORMAL}`, site.url),
      {
        headers: { cookie, 'sec-fetch-site': 'same-origin' },
      },
    );
    return res.status === 200 ? true : undefined;
  });
  print(`4. signed    ${name} for ${udid}: ${site.url}/search/${country}/facebook (View, then Install)`);

  const { url: installUrl } = await json<{ url: string }>(
    'GET',
    `/api/install/${appId}/${done.app_ver_id}/${SIGN_TYPE_NORMAL}`,
  );
  const manifestUrl = new URL(installUrl).searchParams.get('url')!;
  const manifest = parsePlistDict(
    Buffer.from(await (await fetch(manifestUrl)).arrayBuffer()),
    'the install manifest',
  );
  const [item] = manifest['items'] as Array<{ assets: Array<{ url: string }> }>;
  const ipaUrl = item!.assets[0]!.url;
  print(`5. manifest  ${manifestUrl}`);
  print(`   IPA       ${ipaUrl}`);
  print(
    `   install   ${installUrl}  (iOS opens this from an https site; the dev identity's apps do not install on real devices)`,
  );
  return { appVerId: done.app_ver_id, udid, installUrl, manifestUrl, ipaUrl };
}

async function signIn(site: Site): Promise<string> {
  const res = await fetch(new URL('/api/sign-in', site.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
    body: JSON.stringify({
      id: site.admin.id,
      pw: createHash('md5').update(site.admin.password).digest('hex'),
    }),
  });
  if (res.status !== 200) throw new Error(`sign-in: ${res.status} ${await res.text()}`);
  return res.headers.getSetCookie()[0]!.split(';')[0]!;
}

/** Asks again every half second until `probe` answers, for at most two minutes. */
async function waitFor<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`The demo waited two minutes for ${what}.`);
    await sleep(500);
  }
}
