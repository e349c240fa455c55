import type { FastifyServerOptions } from 'fastify';
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
