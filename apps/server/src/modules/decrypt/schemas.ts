import { z } from 'zod';
import { appParams, idParam, versionParams } from '../../platform/params.js';

export { appParams, versionParams };
export const appVersionParams = appParams.extend({ app_ver_id: idParam('app_ver_id') });
export const signedQuery = z.object({ expires: z.string().max(20).optional(), sig: z.string().max(128).optional() });
