import { queryOptions } from '@tanstack/react-query';
import { accountInfo, featherCertAnswer, urlAnswer } from '@sideport/contracts';
import { accountKeys } from '../../entries/query-keys';
import { api } from '../../lib/api';

/** GET /api/info: the account, its plan and today's use, and its devices (refetched on device events). */
export const infoQuery = queryOptions({
  queryKey: accountKeys.info,
  queryFn: () => api('/api/info', accountInfo),
});

/** GET /api/pay/service/{n}: a checkout of plan or reset `n` (docs/product.md, Calls). */
export const serviceCheckout = (n: number) => api(`/api/pay/service/${n}`, urlAnswer);

/** GET /api/pay/device/{index}: a checkout of the device at `index` of the person's list. */
export const deviceCheckout = (index: number) => api(`/api/pay/device/${index}`, urlAnswer);

/** GET /api/portal: the payment provider's billing portal of the person. */
export const billingPortal = () => api('/api/portal', urlAnswer);

/** GET /api/feather/install: the operator's Feather signed for the person's devices (may wait for that sign). */
export const featherInstall = () => api('/api/feather/install', urlAnswer);

/** GET /api/feather/cert: a new cert zip and its password, which is only in this answer. */
export const featherCert = () => api('/api/feather/cert', featherCertAnswer);
