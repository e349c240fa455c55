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

/**
 * How deep a value may nest addresses inside addresses (`/install?manifest=<URL whose query holds
 * url=<URL>>`) and still be looked into. Deeper than any link the service makes; past it a value
 * is shown as `[redacted]` rather than unread.
 */
const MAX_NESTING = 4;

/**
 * A query value as shown: a value that is itself an address (the handoff page's
 * `manifest=<signed manifest URL>`, an `itms-services://` link's `url=`) or a query string
 * (`a=1&sig=...`) gets its own secrets redacted, in the encoding it came in, so a signature never
 * shows through a layer of %-escapes.
 */
function redactValue(value: string, depth: number): string {
  const decoded = decode(value.replace(/\+/g, ' '));
  const isAddress = /^[a-z][a-z0-9+.-]*:/i.test(decoded) || decoded.startsWith('/') || decoded.includes('?');
  const isQuery = !isAddress && decoded.includes('=');
  if (!isAddress && !isQuery) return value;
  if (depth >= MAX_NESTING) return REDACTED;
  const shown = isAddress ? redactAt(decoded, depth + 1) : redactQuery(decoded, depth + 1);
  if (shown === decoded) return value;
  return decoded === value ? shown : encodeURIComponent(shown);
}

function redactQuery(query: string, depth: number): string {
  return query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq === -1) return pair;
      const name = decode(pair.slice(0, eq).replace(/\+/g, ' '));
      const value = SECRET_PARAMETER.test(name) ? REDACTED : redactValue(pair.slice(eq + 1), depth);
      return `${pair.slice(0, eq)}=${value}`;
    })
    .join('&');
}

function redactAt(url: string, depth: number): string {
  const hash = url.indexOf('#');
  const withoutHash = hash === -1 ? url : url.slice(0, hash);
  const mark = withoutHash.indexOf('?');
  const target = mark === -1 ? withoutHash : withoutHash.slice(0, mark);
  const query = mark === -1 ? undefined : withoutHash.slice(mark + 1);
  // An absolute URL: its origin stays, credentials in it (user:password@) do not.
  const origin = /^[a-z][a-z0-9+.-]*:(\/\/[^/?]*)?/i.exec(target)?.[0] ?? '';
  const shownOrigin = origin.replace(/\/\/[^/@]*@/, `//${REDACTED}@`);
  const path = target.slice(origin.length);
  return `${shownOrigin}${redactPath(path)}${query === undefined ? '' : `?${redactQuery(query, depth)}`}`;
}

/**
 * `url` (a request target: `/path?query`, or an absolute URL) with its secrets redacted, those of
 * addresses carried inside its query values included. The fragment is dropped: browsers never
 * send one, and a link's fragment may hold a secret of its own.
 */
export function redactUrl(url: string): string {
  return redactAt(url, 0);
}

/**
 * Absolute URLs (`https://...`, `s3://...`, `itms-services://...`) and request targets with a
 * query (`/files/x?sig=...`, however it is introduced: `GET:/files/x?...`, `host/files/x?...`)
 * inside free text: an error's message or stack, a log line's message.
 */
const URL_IN_TEXT = /[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+|\/[^\s"'<>`?]*\?[^\s"'<>`]+/gi;

/** `text` with every address in it redacted as redactUrl does (the rest as it is). */
export function redactUrlsIn(text: string): string {
  return text.replace(URL_IN_TEXT, (found) => redactUrl(found));
}
