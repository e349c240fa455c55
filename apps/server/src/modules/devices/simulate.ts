/**
 * `sideport device:simulate`: a simulated iPhone enrolled for a user through the real enrollment
 * service (a profile with a one-time token, the device's signed answer, every check an iPhone's
 * answer gets), and with `paid` paid on the test-mode checkout and registered. Only with the dev
 * identity: a made-up UDID has no place on an Apple developer account.
 */
import { fail } from '../../platform/errors.js';
import type { AuthService } from '../auth/service.js';
import type { DevCheckout } from '../billing/dev-checkout.js';
import type { BillingService } from '../billing/service.js';
import type { EnrollmentService } from './enrollment-service.js';
import type { RegistrationService } from './registration.js';
import type { DeviceService, DeviceStatus } from './service.js';
import { createSimulatedDevice, type SimulatedDeviceOptions } from './simulated-device.js';
import { isSameUdid } from './udid.js';

export interface SimulateDeps {
  identityKind: 'dev' | 'apple';
  billingProvider: 'dev' | 'stripe';
  users: Pick<AuthService, 'findUser'>;
  enrollment: Pick<EnrollmentService, 'issueProfile' | 'enroll'>;
  devices: Pick<DeviceService, 'listDevices'>;
  billing: Pick<BillingService, 'startCheckout'>;
  devCheckout: Pick<DevCheckout, 'pay'>;
  registration: Pick<RegistrationService, 'runPass'>;
  /** The site's origin: the profile's enrollment URL and the checkout's return address start with it. */
  baseUrl: string;
}

/** SimulateDeps from the services of a server (app.ts) or of a CLI command (services.ts). */
export function simulationDeps(
  services: {
    signingIdentity: { kind: SimulateDeps['identityKind'] };
    billingProvider: { name: SimulateDeps['billingProvider'] };
    auth: SimulateDeps['users'];
  } & Pick<SimulateDeps, 'enrollment' | 'devices' | 'billing' | 'devCheckout' | 'registration'>,
  site: { PUBLIC_URL?: string | undefined; PORT: number },
): SimulateDeps {
  return {
    identityKind: services.signingIdentity.kind,
    billingProvider: services.billingProvider.name,
    users: services.auth,
    enrollment: services.enrollment,
    devices: services.devices,
    billing: services.billing,
    devCheckout: services.devCheckout,
    registration: services.registration,
    baseUrl: site.PUBLIC_URL ? new URL(site.PUBLIC_URL).origin : `http://localhost:${site.PORT}`,
  };
}

export interface SimulatedEnrollment {
  udid: string;
  product: string;
  deviceName: string;
  /** Add, or Registered after a payment. */
  status: DeviceStatus;
}

export async function simulateDevice(
  deps: SimulateDeps,
  userId: string,
  options: { paid?: boolean; device?: SimulatedDeviceOptions } = {},
): Promise<SimulatedEnrollment> {
  if (deps.identityKind !== 'dev') {
    throw fail('SIMULATION_NEEDS_DEV_IDENTITY');
  }
  if (options.paid && deps.billingProvider !== 'dev') {
    throw fail('SIMULATION_NEEDS_TEST_BILLING');
  }
  const user = await deps.users.findUser(userId);
  if (!user) throw fail('NO_SUCH_USER', userId);

  const device = createSimulatedDevice(options.device);
  const profile = await deps.enrollment.issueProfile(user.id, deps.baseUrl);
  const { url, body } = device.answer(profile);
  await deps.enrollment.enroll(new URL(url).pathname.split('/').at(-1) ?? '', body);

  const index = (await deps.devices.listDevices(user.id)).findIndex((d) => isSameUdid(d.udid, device.udid));
  if (options.paid) {
    // The test-mode checkout's Pay, as a person presses it: the same payment event a webhook applies.
    const checkout = await deps.billing.startCheckout(
      { id: user.id },
      { kind: 'device', index },
      deps.baseUrl,
    );
    await deps.devCheckout.pay(new URL(checkout.url).pathname.split('/').at(-1) ?? '', user.id);
    // The dev identity registers at once; a pass here saves waiting for a server's worker.
    await deps.registration.runPass();
  }
  const status = (await deps.devices.listDevices(user.id))[index]?.status ?? 'Add';
  return { udid: device.udid, product: device.product, deviceName: device.deviceName, status };
}
