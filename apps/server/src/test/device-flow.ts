/**
 * A device's way through the real server, for tests: enrolled with a signed answer as a device
 * sends it, paid through the test-mode checkout.
 */
import { createSimulatedDevice, issueCertificate, type Issued } from '../modules/devices/simulated-device.js';
import { ATTRIBUTES } from './device-answers.js';
import type { TestApp } from './harness.js';

const SAME_ORIGIN = { 'sec-fetch-site': 'same-origin' };
let deviceIdentity: Issued | undefined;

/** Downloads a profile as `cookie`'s user and answers it as a device with `fields`; the device is then Add. */
export async function enrollDevice(
  t: Pick<TestApp, 'app'>,
  cookie: string,
  fields: { UDID: string; PRODUCT: string; DEVICE_NAME?: string },
): Promise<void> {
  deviceIdentity ??= issueCertificate('5D3C9A2B-0000-4000-8000-0000000000AA');
  const profile = await t.app.inject({ url: '/api/udid/profile', headers: { cookie, ...SAME_ORIGIN } });
  if (profile.statusCode !== 200) throw new Error(`profile download: ${profile.statusCode} ${profile.body}`);
  const device = createSimulatedDevice({
    udid: fields.UDID,
    product: fields.PRODUCT,
    deviceName: fields.DEVICE_NAME ?? ATTRIBUTES.DEVICE_NAME,
    identity: deviceIdentity,
  });
  const { url, body } = device.answer(profile.rawPayload);
  const res = await t.app.inject({
    method: 'POST',
    url: new URL(url).pathname,
    headers: { 'content-type': 'application/pkcs7-signature' },
    payload: body,
  });
  if (res.statusCode !== 301) throw new Error(`enrollment: ${res.statusCode} ${res.body}`);
}

/** Pays for the user's device at `index` through the test-mode checkout (Register or Renew). */
export async function payForDevice(t: Pick<TestApp, 'app'>, cookie: string, index: number): Promise<void> {
  const started = await t.app.inject({
    url: `/api/pay/device/${index}`,
    headers: { cookie, ...SAME_ORIGIN },
  });
  if (started.statusCode !== 200) throw new Error(`checkout: ${started.statusCode} ${started.body}`);
  const checkout = new URL((started.json() as { url: string }).url).pathname;
  const paid = await t.app.inject({
    method: 'POST',
    url: `${checkout}/pay`,
    headers: { cookie, ...SAME_ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
    payload: '',
  });
  if (paid.statusCode !== 303) throw new Error(`pay: ${paid.statusCode} ${paid.body}`);
}

/** The user's devices as GET /api/info answers them. */
export async function deviceInfo(t: Pick<TestApp, 'app'>, cookie: string) {
  const res = await t.app.inject({ url: '/api/info', headers: { cookie } });
  return (
    res.json() as {
      device_info: Array<{ Product: string; UDID: string; status: string; expired_date?: string }>;
    }
  ).device_info;
}

/** `date` plus whole calendar years, as PostgreSQL adds interval '1 year' in UTC. */
export function yearsAfter(date: Date, years: number): Date {
  const later = new Date(date);
  later.setUTCFullYear(later.getUTCFullYear() + years);
  return later;
}
