import {
  ERRORS,
  retryAfterSecondsOf,
  sentenceOf,
  type ErrorCode,
  type SentenceParts,
} from './error-codes.js';

/**
 * The server's one error type (docs/architecture.md, API conventions): a registered code, whose
 * status it takes from the registry in error-codes.ts, and the sentence the client reads.
 * Raise one with `fail(code, ...parts)`; subclasses that carry more (AscError, EnrollmentError)
 * pass their own sentence for their registered codes.
 */
export class AppError extends Error {
  readonly status: number;
  /** Headers the answer carries beside the sentence (a preflight's Sideport-Remedy). */
  readonly headers: Readonly<Record<string, string>>;
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown; headers?: Record<string, string> },
  ) {
    super(message, options);
    this.name = 'AppError';
    this.status = ERRORS[code].status;
    const headers = { ...options?.headers };
    // A 503 says when to come back (docs/architecture.md, When a part fails).
    const retryAfter = retryAfterSecondsOf(code);
    if (this.status === 503 && retryAfter !== undefined && !hasRetryAfter(headers)) {
      headers['retry-after'] = String(retryAfter);
    }
    this.headers = headers;
  }
}

/** The error of `code`, its sentence made from `parts`. */
export function fail<C extends ErrorCode>(code: C, ...parts: SentenceParts<C>): AppError {
  return new AppError(code, sentenceOf(code, ...parts));
}

const hasRetryAfter = (headers: Record<string, string>) =>
  Object.keys(headers).some((name) => name.toLowerCase() === 'retry-after');

/** `fail` with the error that caused it (kept for the log) or headers for the answer. */
export function failWith<C extends ErrorCode>(
  code: C,
  options: { cause?: unknown; headers?: Record<string, string> },
  ...parts: SentenceParts<C>
): AppError {
  return new AppError(code, sentenceOf(code, ...parts), options);
}

export const badRequest = (message: string) => fail('BAD_REQUEST', message);
export const notFound = (what: string) => fail('NOT_FOUND', what);
export const conflict = (why: string) => fail('CONFLICT', why);
