import { Transform } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { fail } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** How long this route waits for the next bytes of a request body (agent uploads wait longer). */
    bodyIdleTimeoutMs?: number;
    /** How long this route waits for a whole request body; 0: no overall bound (agent uploads). */
    bodyTimeoutMs?: number;
  }
}

export const bodyIdleTimeout = () => fail('BODY_IDLE_TIMEOUT');
export const bodyTimeout = () => fail('BODY_TIMEOUT');

/** A request that has body bytes on the wire, whatever its method. */
const hasBody = (request: FastifyRequest) =>
  request.headers['transfer-encoding'] !== undefined ||
  (request.headers['content-length'] !== undefined && request.headers['content-length'] !== '0');

/** A request that announces a body (a length above 0, or chunks): GET and HEAD bodies are never read. */
function announcesBody(request: FastifyRequest): boolean {
  if (request.method === 'GET' || request.method === 'HEAD') return false;
  return hasBody(request);
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
 *
 * A byte every few seconds is never idle, so a body must also have come whole within the route's
 * overall bound (`bodyTimeoutMs`, else `timeoutMs`), counted from its headers: past it, a 408
 * sentence and the connection closed. Agent uploads have none (0): gigabytes over a slow link,
 * from a caller whose token was checked before one byte of the body was read, bounded by their
 * idle time and size instead. Headers have their own bound, Node's `headersTimeout` (app.ts).
 */
export function registerBodyIdleTimeout(
  app: FastifyInstance,
  options: { idleMs: number; timeoutMs: number },
) {
  app.addHook('preParsing', async (request, reply, payload) => {
    if (!announcesBody(request)) return payload;
    const idleMs = request.routeOptions.config.bodyIdleTimeoutMs ?? options.idleMs;
    const timeoutMs = request.routeOptions.config.bodyTimeoutMs ?? options.timeoutMs;
    let timer: NodeJS.Timeout | undefined;
    let deadline: NodeJS.Timeout | undefined;
    const stop = () => {
      clearTimeout(timer);
      clearTimeout(deadline);
    };
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
      clearTimeout(timer);
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
    if (timeoutMs > 0) {
      deadline = setTimeout(() => {
        if (request.raw.complete) return;
        request.log.info({ timeoutMs }, 'request body took too long to arrive');
        clearTimeout(timer);
        payload.unpipe(body);
        body.destroy(bodyTimeout());
      }, timeoutMs);
      deadline.unref();
    }
    return body;
  });

  // Any method: a GET's body is never read, and Node would wait for the rest of it before the next
  // request on the connection.
  app.addHook('onSend', async (request, reply) => {
    if (hasBody(request) && !request.raw.complete) reply.header('connection', 'close');
  });
}
