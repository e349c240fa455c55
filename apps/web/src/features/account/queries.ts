import { queryOptions } from '@tanstack/react-query';
import { accountInfo } from '@sideport/contracts';
import { api } from '../../lib/api';

/** GET /api/info: the account, its plan and today's use, and its devices (refetched on device events). */
export const infoQuery = queryOptions({
  queryKey: ['info'],
  queryFn: async () => accountInfo.parse(await api<unknown>('/api/info')),
});
