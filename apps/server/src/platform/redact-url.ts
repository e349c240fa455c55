/**
 * A request address as a log line may show it: the path's shape and every harmless parameter
 * stay, each secret becomes `[redacted]`. Several addresses are bearers (whoever holds one gets
 * what it opens, no cookie asked): signed links (`sig`), a device's enrollment link, the first
 * admin's setup link, a Feather certificate link. Logs are read by more people, and kept longer,
 * than those links live (docs/security.md, Logs).
 */
export const REDACTED = '[redacted]';

/**
 * Paths whose next segment is a token (docs/security.md, Logs): enrollment (`/api/udid/enroll/`),
 * the setup link (its page and its API) and a Feather certificate's sealed token.
 */
const TOKEN_PATHS: readonly (readonly string[])[] = [
  ['api', 'udid', 'enroll'],
  ['api', 'setup'],
  ['setup'],
  ['files', 'feather', 'cert'],
];

/**
 * A query parameter whose name says it carries a credential: `sig`, `token`, `access_token`,
 * `X-Amz-Signature`, `X-Amz-Credential`, `session_id`, `password`, `api_key`, `code` ...
 */
const SECRET_PARAMETER = /sig|token|secret|passw|^pw$|key|auth|credential|session|^code$/i;

/**
 * Any other segment long and random enough to be a token: 32 or more characters of base64url
 * (what `randomBytes(32)` gives), a sealed value's `v1.` included. A UUID (an artifact's id) and a
 * number are ids, shown as they are.
 */
const TOKEN_LIKE = /^[A-Za-z0-9_~.-]{32,}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const decode = (part: string) => {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
};

function isTokenSegment(decoded: string[], index: number): boolean {
  const segment = decoded[index]!;
  if (segment === '') return false;
  const follows = TOKEN_PATHS.some(
    (prefix) => prefix.length === index - 1 && prefix.every((name, i) => decoded[i + 1] === name),
  );
  return follows || (TOKEN_LIKE.test(segment) && !UUID.test(segment) && /[A-Za-z]/.test(segment));
}

function redactPath(path: string): string {
  const raw = path.split('/');
  const decoded = raw.map(decode);
  return raw.map((segment, i) => (isTokenSegment(decoded, i) ? REDACTED : segment)).join('/');
}

function redactQuery(query: string): string {
  return query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = decode((eq === -1 ? pair : pair.slice(0, eq)).replace(/\+/g, ' '));
      return eq !== -1 && SECRET_PARAMETER.test(name) ? `${pair.slice(0, eq)}=${REDACTED}` : pair;
    })
    .join('&');
}

/** `url` (a request target: `/path?query`, or an absolute URL) with its secrets redacted. */
export function redactUrl(url: string): string {
  const hash = url.indexOf('#');
  const withoutHash = hash === -1 ? url : url.slice(0, hash);
  const mark = withoutHash.indexOf('?');
  const target = mark === -1 ? withoutHash : withoutHash.slice(0, mark);
  const query = mark === -1 ? undefined : withoutHash.slice(mark + 1);
  // An absolute URL: its origin stays, credentials in it (user:password@) do not.
  const origin = /^[a-z][a-z0-9+.-]*:\/\/[^/]*/i.exec(target)?.[0] ?? '';
  const shownOrigin = origin.replace(/\/\/[^/@]*@/, `//${REDACTED}@`);
  const path = target.slice(origin.length);
  return `${shownOrigin}${redactPath(path)}${query === undefined ? '' : `?${redactQuery(query)}`}`;
}
