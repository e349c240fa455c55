import type { FastifyServerOptions } from 'fastify';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import type { Config } from './config.js';
import { redactUrl } from './redact-url.js';

/** What a request line shows of a request: fastify's fields, its address with the secrets redacted. */
interface LoggedRequest {
  method?: string;
  url?: string;
  headers?: Record<string, string | string[] | undefined>;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number | undefined } | null;
}

export function serializeRequest(req: LoggedRequest) {
  return {
    method: req.method,
    url: typeof req.url === 'string' ? redactUrl(req.url) : req.url,
    version: [req.headers?.['accept-version'] ?? []].flat().join(', ') || undefined,
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

/**
 * Structured JSON logs (pino). Cookies, tokens and passwords never reach a log line: headers that
 * carry them and fields named for them are redacted, and so are the secrets of a request's address
 * (signed links' `sig`, enrollment, setup and Feather certificate tokens: see redact-url.ts).
 * `stream`: where the lines go (stdout unless given).
 */
export function loggerOptions(
  config: Pick<Config, 'LOG_LEVEL'>,
  stream?: DestinationStream,
): FastifyServerOptions['logger'] {
  return {
    level: config.LOG_LEVEL,
    serializers: { req: serializeRequest },
    ...(stream ? { stream } : {}),
    redact: {
      paths: [
        'req.headers.cookie',
        'req.headers.authorization',
        'req.headers["stripe-signature"]',
        'res.headers["set-cookie"]',
        '*.password',
        '*.pw',
        '*.token',
      ],
      censor: '[redacted]',
    },
  };
}

/**
 * The logger of `sideport worker` and the other CLI commands: pino's JSON lines with the server's
 * levels and redaction, an `err` serialised with its type, message and stack. Written
 * synchronously, so the line that tells why a command failed is out before the process exits.
 * The worker logs to stdout as the server does; the other commands to stderr, since their stdout
 * carries what they answer (a token, a table).
 */
export function createProcessLogger(config: Pick<Config, 'LOG_LEVEL'>, fd: 1 | 2): Logger {
  return pino(loggerOptions(config) as LoggerOptions, pino.destination({ dest: fd, sync: true }));
}

/**
 * Node's own warnings (a deprecation, a library's notice) as log lines of `log`, instead of
 * Node's plain text on stderr: every line a Sideport process writes is then JSON.
 */
export function logProcessWarnings(log: () => { warn(obj: object, msg: string): void }) {
  process.removeAllListeners('warning');
  process.on('warning', (warning) => log().warn({ err: warning }, warning.message));
}
