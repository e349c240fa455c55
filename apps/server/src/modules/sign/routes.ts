import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { featherCertAnswer, signAnswer, signCheckAnswer, signRequest, urlAnswer } from '@sideport/contracts';
import { currentUser, type Guards } from '../auth/guard.js';
import { fail } from '../../platform/errors.js';
import {
  opaqueIdParam,
  sealedTokenParam,
  signedQuery,
  signTypeParam,
  versionParams,
} from '../../platform/params.js';
import { publicOrigin } from '../../platform/public-origin.js';
import { checkSignedUrl, sendLocalFile, signedFileDoc } from '../../platform/serve-file.js';
import type { UrlSigner } from '../../platform/signed-urls.js';
import type { FileStore } from '../../platform/storage.js';
import type { SignService } from './service.js';

export interface SignRoutesDeps {
  sign: SignService;
  guards: Guards;
  files: FileStore;
  urls: UrlSigner;
  publicUrl?: string | undefined;
}

const signedParams = versionParams.extend({ type: signTypeParam });
const artifactParams = z.object({ artifact_id: opaqueIdParam('artifact') });
const artifactGone = () => fail('ARTIFACT_GONE');

/**
 * The sign service's routes: the sign, check-sign, install and Feather calls (docs/product.md, Calls) for the
 * signed-in owner, and the manifest, IPA and certificate files on signed, expiring URLs that need
 * no cookie (iOS fetches manifests and IPAs without one), outside /api.
 */
export async function signRoutes(
  app: FastifyInstance,
  { sign, guards, files, urls, publicUrl }: SignRoutesDeps,
) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const signedIn = guards.requireUser;

  r.put(
    '/api/sign/:app_id/:app_ver_id',
    {
      schema: { params: versionParams, body: signRequest, response: { 200: signAnswer } },
      onRequest: signedIn,
    },
    async (request) =>
      sign.request(
        currentUser(request).id,
        request.params.app_id,
        request.params.app_ver_id,
        request.body.type,
      ),
  );

  r.get(
    '/api/check/sign/:app_id/:app_ver_id/:type',
    { schema: { params: signedParams, response: { 200: signCheckAnswer } }, onRequest: signedIn },
    async (request) => {
      const { app_id, app_ver_id, type } = request.params;
      return sign.check(currentUser(request).id, app_id, app_ver_id, type);
    },
  );

  r.get(
    '/api/install/:app_id/:app_ver_id/:type',
    { schema: { params: signedParams, response: { 200: urlAnswer } }, onRequest: signedIn },
    async (request) => {
      const { app_id, app_ver_id, type } = request.params;
      return sign.install(
        currentUser(request).id,
        app_id,
        app_ver_id,
        type,
        publicOrigin(request, publicUrl),
      );
    },
  );

  // After the install's 409 TEAM_MOVED: the caller read what moving to another team means for their apps.
  r.post('/api/team-move/acknowledge', { onRequest: signedIn }, async (request, reply) => {
    await sign.acknowledgeTeamMove(currentUser(request).id);
    return reply.code(204).send();
  });

  // Both sign or export for the caller's devices: GETs that change state, guarded as a POST is.
  const changesState = { changesState: true };
  r.get(
    '/api/feather/install',
    { schema: { response: { 200: urlAnswer } }, onRequest: signedIn, config: changesState },
    async (request) => sign.featherInstall(currentUser(request).id, publicOrigin(request, publicUrl)),
  );

  r.get(
    '/api/feather/cert',
    { schema: { response: { 200: featherCertAnswer } }, onRequest: signedIn, config: changesState },
    async (request, reply) => {
      // The password is in this answer: no cache keeps it.
      reply.header('cache-control', 'no-store');
      return sign.featherCert(currentUser(request).id, publicOrigin(request, publicUrl));
    },
  );

  r.get(
    '/files/sign/:artifact_id/manifest.plist',
    {
      schema: {
        params: artifactParams,
        querystring: signedQuery,
        ...signedFileDoc('The over-the-air install manifest of a signed app', 'text/xml'),
      },
    },
    async (request, reply) => {
      const { artifact_id } = request.params;
      checkSignedUrl(urls, request, `/files/sign/${artifact_id}/manifest.plist`, request.query);
      const manifest = await sign.manifest(artifact_id, publicOrigin(request, publicUrl));
      if (manifest === undefined) throw artifactGone();
      return reply
        .type('text/xml; charset=utf-8')
        .header('cache-control', 'private, no-store')
        .send(manifest);
    },
  );

  r.get(
    '/files/sign/:artifact_id/app.ipa',
    {
      schema: {
        params: artifactParams,
        querystring: signedQuery,
        ...signedFileDoc('The signed IPA (ranges served)', 'application/octet-stream'),
      },
    },
    async (request, reply) => {
      const { artifact_id } = request.params;
      checkSignedUrl(urls, request, `/files/sign/${artifact_id}/app.ipa`, request.query);
      const file = await sign.artifactFile(artifact_id);
      const local = file && files.localPath(file.fileKey);
      if (!file || !local) throw artifactGone();
      return sendLocalFile(request, reply, local, { fileName: file.fileName, gone: artifactGone() });
    },
  );

  r.get(
    '/files/feather/cert/:token',
    {
      schema: {
        params: z.object({ token: sealedTokenParam }),
        querystring: signedQuery,
        ...signedFileDoc(
          "A zip of the signing identity's .p12 and the person's .mobileprovision",
          'application/zip',
        ),
      },
    },
    async (request, reply) => {
      const { token } = request.params;
      checkSignedUrl(urls, request, `/files/feather/cert/${token}`, request.query);
      const zip = await sign.featherCertFile(token);
      if (!zip) throw fail('CERT_GONE');
      return reply
        .type('application/zip')
        .header('content-disposition', 'attachment; filename="sideport-feather-cert.zip"')
        .header('cache-control', 'private, no-store')
        .send(zip);
    },
  );
}
