import type { FastifyServerOptions } from 'fastify';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import type { Config } from './config.js';
import { redactUrl, redactUrlsIn } from './redact-url.js';

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

type SerializedError = ReturnType<typeof pino.stdSerializers.err>;

/** How deep a logged value is looked into for addresses: deeper than any object a log line carries. */
const MAX_DEPTH = 5;

/**
 * `value` with the secrets of every address in its strings redacted (redact-url.ts). Plain
 * objects and arrays are copied, never changed in place; anything else (a request, a reply, an
 * error) is left to its serializer, which redacts it as it writes it. `isSerialized`: `value` is
 * a serializer's output (pino's error object, whose prototype is its own), read whole.
 */
function redactAddresses(value: unknown, depth = 0, isSerialized = false): unknown {
  if (typeof value === 'string') return redactUrlsIn(value);
  if (depth >= MAX_DEPTH || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => redactAddresses(item, depth + 1, isSerialized));
  const isPlain = Object.getPrototypeOf(value) === Object.prototype;
  if (!isPlain && !(isSerialized && !(value instanceof Error) && !Buffer.isBuffer(value))) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, redactAddresses(item, depth + 1, isSerialized)]),
  );
}

/**
 * An error as pino writes it (type, message, stack, its cause and own fields), with the addresses
 * in them redacted: a failed call's message may quote the signed or presigned URL it was given.
 */
export function serializeError(err: Error): SerializedError {
  // pino's serializer passes a value that is not an error (a string logged as `err`) through.
  return redactAddresses(pino.stdSerializers.err(err), 0, true) as SerializedError;
}

/**
 * Marks the one line whose secret is written on purpose: the first admin's setup link, printed once
 * at start while no admin exists, is how the operator receives it (docs/security.md, Logs). A
 * symbol key, so it never shows in the line itself: `log.warn({ [WRITTEN_AS_IS]: true }, message)`.
 */
export const WRITTEN_AS_IS = Symbol('written as is');

const isWrittenAsIs = (arg: unknown) =>
  typeof arg === 'object' && arg !== null && (arg as { [WRITTEN_AS_IS]?: boolean })[WRITTEN_AS_IS] === true;

/**
 * Structured JSON logs (pino). Cookies, tokens and passwords never reach a log line: headers that
 * carry them and fields named for them are redacted, and so are the secrets of a request's address
 * (signed links' `sig`, enrollment, setup and Feather certificate tokens, and those of an address
 * carried inside a query value: see redact-url.ts). The same redactor reads every other line: an
 * error's message and stack, a message, a field that holds an address.
 * `stream`: where the lines go (stdout unless given).
 */
export function loggerOptions(
  config: Pick<Config, 'LOG_LEVEL'>,
  stream?: DestinationStream,
): FastifyServerOptions['logger'] {
  return {
    level: config.LOG_LEVEL,
    serializers: { req: serializeRequest, err: serializeError },
    hooks: {
      // Every line's message and fields pass here, whoever logs them: an address in them (a URL in a
      // message, a `url` field) is shown with its secrets redacted, as the request line shows its own.
      logMethod(args, method) {
        if (isWrittenAsIs(args[0])) return method.apply(this, args);
        method.apply(this, args.map((arg) => redactAddresses(arg)) as Parameters<typeof method>);
      },
    },
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
