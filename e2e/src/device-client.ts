import {
  createSimulatedDevice,
  issueCertificate,
  type Issued,
} from '../../apps/server/src/modules/devices/simulated-device.js';
import { ATTRIBUTES } from '../../apps/server/src/test/device-answers.js';
import { caller } from './api-client.js';
import type { RunningServer } from './harness.js';

/**
 * A device's side of the sign service for the browser tests' other actors: it installs the
 * profile a person downloaded and answers as iOS does (a CMS-signed plist of its attributes), and
 * its owner pays for it on the test-mode checkout.
 */
let deviceIdentity: Issued | undefined;

export interface DeviceFields {
  UDID: string;
  PRODUCT: string;
  DEVICE_NAME?: string;
}

/** Downloads a profile as `cookie`'s user and answers it as the device: it is then on their list, Add. */
export async function enrollDevice(server: RunningServer, cookie: string, fields: DeviceFields) {
  deviceIdentity ??= issueCertificate('5D3C9A2B-0000-4000-8000-0000000000E2');
  const profile = await caller(server, cookie).call('GET', '/api/udid/profile');
  if (profile.status !== 200) throw new Error(`profile download: ${profile.status} ${await profile.text()}`);
  const device = createSimulatedDevice({
    udid: fields.UDID,
    product: fields.PRODUCT,
    deviceName: fields.DEVICE_NAME ?? ATTRIBUTES.DEVICE_NAME,
    identity: deviceIdentity,
  });
  const { url, body } = device.answer(Buffer.from(await profile.arrayBuffer()));
  // The device posts without the person's cookie or the site's Origin.
  const res = await fetch(url, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/pkcs7-signature' },
    body: new Uint8Array(body),
  });
  if (res.status !== 301) throw new Error(`enrollment: ${res.status} ${await res.text()}`);
}

/** Pays for the user's device at `index` (Register or Renew) as the checkout page's Pay button does. */
export async function payForDevice(server: RunningServer, cookie: string, index: number) {
  const person = caller(server, cookie);
  const { url } = await person.json<{ url: string }>('GET', `/api/pay/device/${index}`);
  const paid = await person.call('POST', `${new URL(url).pathname}/pay`);
  if (paid.status >= 400) throw new Error(`payment failed: ${paid.status} ${await paid.text()}`);
}

/** Waits until the user's devices all stand as `statuses` (registration runs in the server). */
export async function waitForDevices(
  server: RunningServer,
  cookie: string,
  statuses: string[],
  timeoutMs = 120_000,
) {
  const started = Date.now();
  for (;;) {
    const info = await caller(server, cookie).json<{ device_info: Array<{ status: string }> }>(
      'GET',
      '/api/info',
    );
    const now = info.device_info.map((d) => d.status);
    if (JSON.stringify(now) === JSON.stringify(statuses)) return;
    if (Date.now() - started > timeoutMs)
      throw new Error(`devices ${JSON.stringify(now)}, not ${JSON.stringify(statuses)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The user's next device, enrolled, paid and Registered (the dev identity registers at once). */
export async function registeredDevice(
  server: RunningServer,
  cookie: string,
  fields: DeviceFields,
  index = 0,
) {
  await enrollDevice(server, cookie, fields);
  await payForDevice(server, cookie, index);
  await waitForDevices(server, cookie, Array<string>(index + 1).fill('Registered'));
}
