import type { FastifyInstance } from 'fastify';
import type { AccountInfo } from '@sideport/contracts';
import { currentUser, type Guards } from '../auth/guard.js';
import type { BillingService } from '../billing/service.js';
import type { DeviceService } from '../devices/service.js';

export interface AccountRoutesDeps {
  guards: Guards;
  billing: Pick<BillingService, 'entitlement' | 'dailyUsage'>;
  devices: Pick<DeviceService, 'deviceInfo'>;
}

export async function accountRoutes(app: FastifyInstance, { guards, billing, devices }: AccountRoutesDeps) {
  app.get('/api/info', { onRequest: guards.requireUser }, async (request): Promise<AccountInfo> => {
    const user = currentUser(request);
    const [entitlement, usage, deviceInfo] = await Promise.all([
      billing.entitlement(user.id),
      billing.dailyUsage(user.id),
      devices.deviceInfo(user.id),
    ]);
    return {
      Id: user.id,
      premium: entitlement.premium,
      expired_date: entitlement.premiumUntil?.toISOString() ?? null,
      daily_limit: entitlement.dailyLimit,
      device_info: deviceInfo,
      plan: entitlement.plan,
      used_today: usage.used,
    };
  });
}
