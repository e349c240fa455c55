import * as z from 'zod/mini';

/** docs/product.md, Validation and confirmations: id is at least 4 characters; we also cap it and keep it to a safe charset. */
export const ID_MIN_LENGTH = 4;
export const ID_MAX_LENGTH = 32;
export const PASSWORD_MIN_LENGTH = 8;
export const ID_PATTERN = /^[A-Za-z0-9._@-]+$/;

/**
 * Ids that name JavaScript's own object machinery. An id becomes a key in maps and logs on every
 * side (server, web, agent); `__proto__` or `constructor` as a key reaches the prototype instead.
 * Compared without regard to case, as ids are.
 */
export const RESERVED_IDS: readonly string[] = [
  '__proto__',
  'constructor',
  'prototype',
  // The rest of Object.prototype's own names.
  '__definegetter__',
  '__definesetter__',
  '__lookupgetter__',
  '__lookupsetter__',
  'hasownproperty',
  'isprototypeof',
  'propertyisenumerable',
  'tolocalestring',
  'tostring',
  'valueof',
];

export const isReservedId = (id: string) => RESERVED_IDS.includes(id.toLowerCase());

export const userId = z
  .string({ error: (issue) => (issue.input === undefined ? 'Id is required.' : 'Id must be a string.') })
  .check(
    // The same sentence the sign-in form shows (docs/product.md, Validation and confirmations).
    z.minLength(ID_MIN_LENGTH, { error: `Please enter at least ${ID_MIN_LENGTH} characters for ID` }),
    z.maxLength(ID_MAX_LENGTH, { error: `Id must be at most ${ID_MAX_LENGTH} characters.` }),
    z.regex(ID_PATTERN, { error: 'Id may contain only letters, digits and . _ @ -' }),
    z.refine((id) => !isReservedId(id), { error: 'This id is reserved; please choose another.' }),
  );

/** The client never sends the password itself, only its md5: 32 hex characters. */
export const passwordMd5 = z
  .string({
    error: (issue) => (issue.input === undefined ? 'Password is required.' : 'Password must be a string.'),
  })
  .check(
    z.regex(/^[0-9a-fA-F]{32}$/, { error: 'Password must be sent as an MD5 hash (32 hex characters).' }),
  );

/** POST /api/sign-in and POST /api/sign-up payload: {id, pw}. */
export const credentials = z.object(
  { id: userId, pw: passwordMd5 },
  { error: 'Send a JSON object with id and pw.' },
);
export type Credentials = z.infer<typeof credentials>;

/** Sign-in and sign-up answer. grade > 0 means admin. */
export const gradeAnswer = z.object({ grade: z.int() });
export type GradeAnswer = z.infer<typeof gradeAnswer>;

/** The longest path a navigation token is asked for. */
export const NAVIGATION_PATH_MAX_LENGTH = 300;

/**
 * POST /api/navigation-tokens payload: the API path a signed-in page is about to navigate to (the
 * enrollment profile), which a navigation cannot send the API client's header to.
 */
export const navigationTokenRequest = z.object(
  {
    path: z.string({ error: 'Send the path to open as a string.' }).check(
      z.maxLength(NAVIGATION_PATH_MAX_LENGTH, { error: 'This path is too long.' }),
      z.regex(/^\/api\/[\x21-\x7e]*$/, {
        error: 'The path must be an API path (/api/...) without spaces or a query.',
      }),
      z.refine((path) => !path.includes('?') && !path.includes('#'), {
        error: 'The path must be an API path (/api/...) without spaces or a query.',
      }),
    ),
  },
  { error: 'Send a JSON object with path.' },
);
export type NavigationTokenRequest = z.infer<typeof navigationTokenRequest>;

/** The one-time token, sent as `?nav_token=` on that path, and when it expires. */
export const navigationTokenAnswer = z.object({ token: z.string(), expires_at: z.string() });
export type NavigationTokenAnswer = z.infer<typeof navigationTokenAnswer>;
