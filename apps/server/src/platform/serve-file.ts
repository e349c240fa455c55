import path from 'node:path';
import send from '@fastify/send';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { fail, type AppError } from './errors.js';
import type { UrlSigner } from './signed-urls.js';
import { contentDisposition } from './storage.js';

/**
 * The OpenAPI description of a file served on a signed URL (GET /api/openapi.json lists them with
 * the API): no cookie, the signature and expiry in the query, a changed or expired link 403.
 */
export function signedFileDoc(summary: string, contentType: string) {
  return {
    summary,
    description:
      'A signed URL that expires after DOWNLOAD_URL_TTL_SECONDS, as an API call answers it; no session cookie. ' +
      'A changed or expired link is 403.',
    produces: [contentType],
    // The file itself, not JSON (text, or bytes documented as binary).
    response: {
      200: z
        .unknown()
        .meta({ description: summary, ...(contentType.startsWith('text/') ? {} : { format: 'binary' }) }),
    },
  };
}

/** Refuses a signed URL that was changed or has expired (the log tells which; the answer does not). */
export function checkSignedUrl(
  urls: UrlSigner,
  request: FastifyRequest,
  signedPath: string,
  query: { expires?: unknown; sig?: unknown },
) {
  const verdict = urls.verify(signedPath, query);
  if (verdict !== 'ok') {
    request.log.info({ verdict }, 'signed link refused');
    throw fail('LINK_REFUSED');
  }
}

/**
 * Sends a stored file from local disk as an attachment, with ranges (resumed and parallel
 * downloads, and iOS fetching an IPA). `gone` is the sentence when the file is not there.
 */
export async function sendLocalFile(
  request: FastifyRequest,
  reply: FastifyReply,
  local: string,
  options: { fileName: string; gone: AppError },
) {
  const sent = await send(request.raw, path.basename(local), {
    root: path.dirname(local),
    dotfiles: 'deny',
    index: false,
  });
  if (sent.type === 'error' && sent.statusCode === 416) {
    throw fail('RANGE_NOT_SATISFIABLE');
  }
  if (sent.type !== 'file') throw options.gone;
  return reply
    .code(sent.statusCode)
    .headers(sent.headers)
    .header('content-type', 'application/octet-stream')
    .header('content-disposition', contentDisposition(options.fileName))
    .header('cache-control', 'private, no-store')
    .send(sent.stream);
}
