/**
 * The one error type of the server. `message` is a sentence a person can act on; the error handler
 * sends it as text/plain with `status` (docs/architecture.md, API conventions).
 */
export class AppError extends Error {
  /** Headers the answer carries beside the sentence (a preflight's Sideport-Remedy). */
  readonly headers: Readonly<Record<string, string>>;
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    options?: { cause?: unknown; headers?: Record<string, string> },
  ) {
    super(message, options);
    this.name = 'AppError';
    this.headers = options?.headers ?? {};
  }
}

export const badRequest = (message: string) => new AppError(400, 'BAD_REQUEST', message);
export const unauthorized = (message = 'Please sign in.') => new AppError(401, 'UNAUTHORIZED', message);
export const forbidden = (message = 'Do not have permission.') => new AppError(403, 'FORBIDDEN', message);
export const notFound = (what: string) => new AppError(404, 'NOT_FOUND', `${what} was not found.`);
export const conflict = (why: string) => new AppError(409, 'CONFLICT', why);
export const tooManyRequests = (message: string) => new AppError(429, 'TOO_MANY_REQUESTS', message);
export const unavailable = (message: string) => new AppError(503, 'UNAVAILABLE', message);
