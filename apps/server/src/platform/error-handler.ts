import type { FastifyError, FastifyInstance } from 'fastify';
import { AppError, failWith } from './errors.js';
import { faultPartOf, isDatabaseFault, type FaultTracker } from './faults.js';

/** Sentences for fastify's own 4xx errors, so a client never sees framework wording or codes. */
const FRAMEWORK_MESSAGES: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'The request body is too large.',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'Send the request body as JSON (Content-Type: application/json).',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'The request body is empty; send a JSON object.',
  FST_ERR_CTP_INVALID_JSON_BODY: 'The request body is not valid JSON.',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'The Content-Length header does not match the body.',
};

interface ValidationIssue {
  message?: string;
}

function validationMessage(error: FastifyError): string {
  const first = (error.validation as ValidationIssue[] | undefined)?.[0];
  const message = first?.message?.trim();
  return message ? (message.endsWith('.') ? message : `${message}.`) : 'The request is not valid.';
}

/**
 * One error handler (docs/architecture.md, API conventions): the status carries the class, the body is a short
 * text/plain sentence. Anything unexpected is a 500 'Please retry later.' and is logged with the
 * request id; a stack trace never reaches the client.
 */
export function registerErrorHandler(app: FastifyInstance, faults?: Pick<FaultTracker, 'fault'>) {
  app.setErrorHandler((raised: FastifyError | AppError, request, reply) => {
    // The database unreachable (a restart, a failover) is a 503 with a sentence, not a 500.
    const error = isDatabaseFault(raised)
      ? failWith('DATABASE_UNAVAILABLE', { cause: raised })
      : (raised as FastifyError | AppError);
    const part = faultPartOf(error);
    if (part) faults?.fault(part, error.cause ?? error);
    let status = 500;
    let message = 'Please retry later.';
    if (error instanceof AppError) {
      status = error.status;
      message = error.message;
      reply.headers(error.headers);
    } else if ('validation' in error && error.validation) {
      status = 400;
      message = validationMessage(error);
    } else if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      status = error.statusCode;
      message =
        FRAMEWORK_MESSAGES[error.code] ??
        (error.name === 'SyntaxError'
          ? FRAMEWORK_MESSAGES.FST_ERR_CTP_INVALID_JSON_BODY!
          : 'The request is not valid.');
    }
    if (part) request.log.warn({ err: error, part }, `request refused: ${part} unavailable`);
    else if (status >= 500) request.log.error({ err: error }, 'request failed');
    else request.log.info({ status, code: (error as { code?: string }).code }, message);
    return reply.code(status).type('text/plain; charset=utf-8').send(message);
  });
}
