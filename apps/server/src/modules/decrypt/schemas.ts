import { appParams, idParam, signedQuery, versionParams } from '../../platform/params.js';

export { appParams, signedQuery, versionParams };
export const appVersionParams = appParams.extend({ app_ver_id: idParam('app_ver_id') });
