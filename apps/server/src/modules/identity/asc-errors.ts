/**
 * App Store Connect's refusals as one error: Apple's error document
 * (`{"errors":[{status, code, title, detail}]}`), a timeout or an unreachable host becomes an
 * AscError with a kind the service acts on and a sentence an admin can act on. Neither ever
 * contains the key or the token.
 */
import { z } from 'zod';
import { AppError } from '../../platform/errors.js';

export type AscErrorKind = 'DEVICE_LIMIT' | 'INVALID_UDID' | 'KEY_REJECTED' | 'UNAVAILABLE' | 'OTHER';

/** Any failure of an App Store Connect call. `message` is the admin console's sentence. */
export class AscError extends AppError {
  constructor(
    readonly kind: AscErrorKind,
    message: string,
    /** Apple's status, code and detail, when Apple answered (none for timeouts and unreachable hosts). */
    readonly apple?: { status: number; code?: string; detail?: string },
    options?: { cause?: unknown; retryAfterMs?: number },
  ) {
    const { retryAfterMs, ...rest } = options ?? {};
    super(`ASC_${kind}`, message, {
      ...rest,
      // A request refused for it tells its client the same wait.
      ...(retryAfterMs === undefined
        ? {}
        : { headers: { 'retry-after': String(Math.ceil(retryAfterMs / 1000)) } }),
    });
    this.name = 'AscError';
    this.retryAfterMs = retryAfterMs;
  }
  /** How long Apple asked to be left alone (its Retry-After on a 429 or 5xx), when it said. */
  readonly retryAfterMs: number | undefined;
}

export function isAscError(err: unknown): err is AscError {
  return err instanceof AscError;
}

const appleErrorSchema = z.object({
  errors: z
    .array(
      z.object({
        status: z.string().optional(),
        code: z.string().optional(),
        title: z.string().optional(),
        detail: z.string().optional(),
        source: z
          .object({ pointer: z.string().optional(), parameter: z.string().optional() })
          .partial()
          .optional(),
      }),
    )
    .min(1),
});
type AppleError = z.infer<typeof appleErrorSchema>['errors'][number];

/** Apple's own words, short and single-line; anything token-shaped is cut out to be safe. */
function quote(error: AppleError | undefined): string {
  const text = [error?.title, error?.detail].filter(Boolean).join(' - ') || 'no explanation';
  const clean = text
    .replace(/eyJ[\w-]+\.[\w-]+\.[\w-]*/g, '[token]')
    .replace(/\s+/g, ' ')
    .trim();
  return clean.length > 300 ? `${clean.slice(0, 297)}...` : clean;
}

export function appleError(status: number, body: unknown, keyId: string, retryAfterMs?: number): AscError {
  const parsed = appleErrorSchema.safeParse(body);
  const first = parsed.success ? parsed.data.errors[0] : undefined;
  const apple = {
    status,
    ...(first?.code === undefined ? {} : { code: first.code }),
    ...(first?.detail === undefined ? {} : { detail: quote({ detail: first.detail }) }),
  };
  // Apple's words in quotes only when its answer held some: a body that is no error document is not quoted as Apple's.
  const said = first?.title || first?.detail ? `Apple said: "${quote(first)}"` : 'Apple gave no explanation';
  const detail = `${first?.title ?? ''} ${first?.detail ?? ''}`;
  if (status === 401) {
    return new AscError(
      'KEY_REJECTED',
      `App Store Connect refused API key ${keyId}: it is revoked or expired, or it does not match ASC_ISSUER_ID and ASC_PRIVATE_KEY, or this server's clock is wrong. ` +
        'Create a key in App Store Connect (Users and Access > Integrations) and set ASC_KEY_ID, ASC_ISSUER_ID and ASC_PRIVATE_KEY.',
      apple,
    );
  }
  // Apple names the family: 'iPhone', 'iPad', but also 'Apple TV' and 'Apple Watch', in two words.
  if (status === 403 && /maximum number of (registered )?[\w ]*devices/i.test(detail)) {
    return new AscError(
      'DEVICE_LIMIT',
      `The Apple developer account has reached its device limit for this membership year (${said}). ` +
        'Removed devices still count until the membership renews; register the device then, or on another account.',
      apple,
    );
  }
  if (status === 403) {
    return new AscError(
      'KEY_REJECTED',
      `App Store Connect does not let API key ${keyId} do this (${said}). Give the key the Admin role in App Store Connect (Users and Access > Integrations).`,
      apple,
    );
  }
  const pointsAtUdid = first?.source?.pointer === '/data/attributes/udid' || /'udid'|\budid\b/i.test(detail);
  if (
    status === 409 &&
    first?.code?.startsWith('ENTITY_ERROR') &&
    pointsAtUdid &&
    !/already exists/i.test(detail)
  ) {
    return new AscError(
      'INVALID_UDID',
      `Apple refused the device's UDID as invalid (${said}). Ask its owner to enroll the device again from the device itself.`,
      apple,
    );
  }
  if (status === 429 || status >= 500) {
    return new AscError(
      'UNAVAILABLE',
      `App Store Connect is unavailable right now (HTTP ${status}, ${said}). Please retry later.`,
      apple,
      retryAfterMs === undefined ? {} : { retryAfterMs },
    );
  }
  return new AscError(
    'OTHER',
    `App Store Connect refused the request (HTTP ${status}${first?.code ? `, ${first.code}` : ''}; ${said}).`,
    apple,
  );
}

/** Apple already has it (a device, a bundle id): the caller looks it up instead. */
export const isAlreadyExists = (err: unknown): err is AscError =>
  err instanceof AscError &&
  err.apple?.status === 409 &&
  /already exists|already been used|DUPLICATE/i.test(`${err.apple.code ?? ''} ${err.apple.detail ?? ''}`);
