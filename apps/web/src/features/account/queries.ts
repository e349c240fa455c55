import { queryOptions } from '@tanstack/react-query';
import { accountInfo } from '@sideport/contracts';
import { api } from '../../lib/api';

/** The query keys of the account, for whoever refetches it (live device events). */
export const accountKeys = {
  info: ['info'] as const,
};

/** GET /api/info: the account, its plan and today's use, and its devices (refetched on device events). */
export const infoQuery = queryOptions({
  queryKey: accountKeys.info,
  queryFn: async () => accountInfo.parse(await api<unknown>('/api/info')),
});
