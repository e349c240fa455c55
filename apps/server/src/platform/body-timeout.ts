import { Transform } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { fail } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** How long this route waits for the next bytes of a request body (agent uploads wait longer). */
    bodyIdleTimeoutMs?: number;
  }
}

export const bodyIdleTimeout = () => fail('BODY_IDLE_TIMEOUT');

/** A request that announces a body (a length above 0, or chunks): GET and HEAD bodies are never read. */
function announcesBody(request: FastifyRequest): boolean {
  if (request.method === 'GET' || request.method === 'HEAD') return false;
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * Node waits for a request body as long as the client keeps the connection open, so a body that
 * stops arriving (a sign-in, an enrollment answer, an agent's upload) would hold its connection,
 * and an upload its partial file, for good. Every body is read through a stream that fails with a
 * 408 sentence once no byte has come for the route's bound (`bodyIdleTimeoutMs`, else `idleMs`):
 * fastify's parsers answer that error as they answer a bad body, and an upload's reader removes its
 * partial file when its stream fails, as it does for any other failure.
 *
 * Idle means the client's silence, not ours: while received bytes wait to be read (a handler busy
 * before it reads, a slow disk), the bound starts again. An answer sent while the body is still
 * incomplete closes the connection, so a client that stalls after it (a 401 before its body was
 * read) holds nothing either.
 */
export function registerBodyIdleTimeout(app: FastifyInstance, options: { idleMs: number }) {
  app.addHook('preParsing', async (request, reply, payload) => {
    if (!announcesBody(request)) return payload;
    const idleMs = request.routeOptions.config.bodyIdleTimeoutMs ?? options.idleMs;
    let timer: NodeJS.Timeout | undefined;
    const stop = () => clearTimeout(timer);
    const body = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        arm();
        callback(null, chunk);
      },
      flush(callback) {
        stop();
        callback();
      },
    });
    // Nobody may be reading it when it fails (the answer was sent first): the error is not a crash.
    body.on('error', () => {});
    const arm = () => {
      stop();
      timer = setTimeout(() => {
        const isWaitingOnUs =
          body.writableLength > 0 || body.readableLength > 0 || payload.readableLength > 0;
        if (isWaitingOnUs) return arm();
        request.log.info({ idleMs }, 'request body stopped arriving');
        payload.unpipe(body);
        body.destroy(bodyIdleTimeout());
      }, idleMs);
      timer.unref();
    };
    payload.on('error', stop);
    reply.raw.on('close', stop);
    payload.pipe(body);
    arm();
    return body;
  });

  app.addHook('onSend', async (request, reply) => {
    if (announcesBody(request) && !request.raw.complete) reply.header('connection', 'close');
  });
}
