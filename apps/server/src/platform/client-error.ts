import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';

interface ClientError extends Error {
  code?: string;
}

/** What Node's HTTP parser could not read, in the same text/plain sentences as every other error. */
function answerFor(err: ClientError): { status: number; message: string } {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return { status: 408, message: 'The request took too long to arrive.' };
  if (err.code === 'HPE_HEADER_OVERFLOW')
    return { status: 431, message: 'The request headers are too large.' };
  if (err.code === 'HPE_INVALID_CONTENT_LENGTH' || err.code === 'HPE_UNEXPECTED_CONTENT_LENGTH') {
    return { status: 400, message: 'The Content-Length header is not valid.' };
  }
  return { status: 400, message: 'The request is not valid HTTP.' };
}

/**
 * Fastify's clientErrorHandler: a request Node cannot parse (a bad Content-Length, a broken
 * header) never reaches the router or the error handler, and Fastify's default answers it in JSON.
 * This answers it as the error handler would: status, then a short text/plain sentence, with the
 * security headers every other answer carries (`securityHeaders`, security-headers.ts).
 */
export function createClientErrorHandler(
  log: () => FastifyBaseLogger,
  securityHeaders: Readonly<Record<string, string>>,
) {
  const securityLines = Object.entries(securityHeaders)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return (err: ClientError, socket: Socket) => {
    // A reset connection has no one left to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const { status, message } = answerFor(err);
    log().info({ code: err.code, status }, 'malformed HTTP request');
    if (!socket.writable) {
      socket.destroy(err);
      return;
    }
    const body = Buffer.from(message, 'utf8');
    const head =
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      `Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${body.length}\r\n` +
      securityLines +
      'Connection: close\r\n\r\n';
    // end() flushes the answer before closing, as Node's documentation for 'clientError' does.
    socket.end(Buffer.concat([Buffer.from(head, 'latin1'), body]));
  };
}
