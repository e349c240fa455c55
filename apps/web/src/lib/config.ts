import { queryOptions, useQuery } from '@tanstack/react-query';
import { publicConfig, type PublicConfig } from '@sideport/contracts';
import { api } from './api';

/** GET /api/config: the server's public settings (links, offered sign modes, paid apps), once per load. */
export const configQuery = queryOptions({
  queryKey: ['config'],
  queryFn: (): Promise<PublicConfig> => api('/api/config', publicConfig),
  staleTime: Infinity,
});

export const usePublicConfig = () => useQuery(configQuery).data;
