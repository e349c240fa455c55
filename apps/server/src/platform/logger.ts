import type { FastifyServerOptions } from 'fastify';
import { pino, type Logger, type LoggerOptions } from 'pino';
import type { Config } from './config.js';

/** Structured JSON logs (pino). Cookies, tokens and passwords never reach a log line. */
export function loggerOptions(config: Pick<Config, 'LOG_LEVEL'>): FastifyServerOptions['logger'] {
  return {
    level: config.LOG_LEVEL,
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
