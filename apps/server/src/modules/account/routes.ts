import type { FastifyInstance } from 'fastify';
import type { AccountInfo } from '@sideport/contracts';
import { currentUser, type Guards } from '../auth/guard.js';

export interface AccountRoutesDeps {
  guards: Guards;
  freeDailyLimit: number;
}

export async function accountRoutes(app: FastifyInstance, { guards, freeDailyLimit }: AccountRoutesDeps) {
  app.get('/api/info', { onRequest: guards.requireUser }, async (request): Promise<AccountInfo> => {
    const user = currentUser(request);
    // Premium and devices come from the billing and devices modules as they land.
    return { Id: user.id, premium: false, expired_date: null, daily_limit: freeDailyLimit, device_info: [] };
  });
}
