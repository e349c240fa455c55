import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { decryptAnswer, urlAnswer, versionHistoryAnswer, appList } from '@sideport/contracts';
import { currentUser, isAdmin, type Guards } from '../auth/guard.js';
import { fail } from '../../platform/errors.js';
import { publicOrigin } from '../../platform/public-origin.js';
import { checkSignedUrl, sendLocalFile, signedFileDoc } from '../../platform/serve-file.js';
import type { FileStore } from '../../platform/storage.js';
import type { UrlSigner } from '../../platform/signed-urls.js';
import type { DecryptService } from './service.js';
import { appParams, appVersionParams, signedQuery, versionParams } from './schemas.js';

export interface DecryptRoutesDeps {
  decrypt: DecryptService;
  guards: Guards;
  files: FileStore;
  urls: UrlSigner;
  /** PUBLIC_URL; the request's own origin when unset. */
  publicUrl?: string | undefined;
}

export async function decryptRoutes(
  app: FastifyInstance,
  { decrypt, guards, files, urls, publicUrl }: DecryptRoutesDeps,
) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const signedIn = guards.requireUser;
  const baseUrl = (request: FastifyRequest) => publicOrigin(request, publicUrl);
  const viewerOf = (request: FastifyRequest) => {
    const user = currentUser(request);
    return { id: user.id, isAdmin: isAdmin(user) };
  };

  // Decrypt requests are GETs that change state (docs/product.md, Calls): guarded as a POST is.
  r.get(
    '/api/decrypt/:country/:app_id',
    {
      schema: { params: appParams, response: { 200: decryptAnswer } },
      onRequest: signedIn,
      config: { changesState: true },
    },
    async (request) =>
      decrypt.requestApp(currentUser(request).id, request.params.country, request.params.app_id),
  );

  r.get(
    '/api/decrypt/:country/:app_id/:app_ver_id',
    {
      schema: { params: appVersionParams, response: { 200: decryptAnswer } },
      onRequest: signedIn,
      config: { changesState: true },
    },
    async (request) => {
      const { country, app_id, app_ver_id } = request.params;
      return decrypt.requestVersion(currentUser(request).id, country, app_id, app_ver_id);
    },
  );

  r.patch(
    '/api/decrypt/:country/:app_id',
    { schema: { params: appParams, response: { 200: decryptAnswer } }, onRequest: signedIn },
    async (request) =>
      decrypt.moveToPremium(currentUser(request).id, request.params.country, request.params.app_id, null),
  );

  r.patch(
    '/api/decrypt/:country/:app_id/:app_ver_id',
    { schema: { params: appVersionParams, response: { 200: decryptAnswer } }, onRequest: signedIn },
    async (request) => {
      const { country, app_id, app_ver_id } = request.params;
      return decrypt.moveToPremium(currentUser(request).id, country, app_id, app_ver_id);
    },
  );

  r.get(
    '/api/version/:country/:app_id',
    { schema: { params: appParams, response: { 200: appList } }, onRequest: signedIn },
    async (request) => decrypt.versionList(viewerOf(request), request.params.country, request.params.app_id),
  );

  r.post(
    '/api/version/:country/:app_id',
    { schema: { params: appParams, response: { 200: versionHistoryAnswer } }, onRequest: signedIn },
    async (request) => decrypt.history(viewerOf(request), request.params.country, request.params.app_id),
  );

  r.get(
    '/api/download/:app_id/:app_ver_id',
    { schema: { params: versionParams, response: { 200: urlAnswer } }, onRequest: signedIn },
    async (request) =>
      decrypt.downloadUrl(request.params.app_id, request.params.app_ver_id, baseUrl(request)),
  );

  // The file itself, on a signed URL that expires: a new tab sends no request of ours, and a
  // link copied elsewhere stops working. Ranges are served (resumed and parallel downloads).
  r.get(
    '/files/ipa/:app_id/:app_ver_id',
    {
      schema: {
        params: versionParams,
        querystring: signedQuery,
        ...signedFileDoc('The decrypted IPA (ranges served)', 'application/octet-stream'),
      },
    },
    async (request, reply) => {
      const { app_id, app_ver_id } = request.params;
      checkSignedUrl(urls, request, `/files/ipa/${app_id}/${app_ver_id}`, request.query);
      const gone = fail('VERSION_GONE');
      const file = await decrypt.downloadable(app_id, app_ver_id);
      const local = file && files.localPath(file.fileKey);
      if (!file || !local) throw gone;
      return sendLocalFile(request, reply, local, { fileName: file.fileName, gone });
    },
  );
}
