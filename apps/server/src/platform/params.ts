import { z } from 'zod';
import { COUNTRIES, SIGN_TYPES } from '@sideport/contracts';

/**
 * Path parameter schemas every route shares. The router hands a handler the decoded path, so a
 * parameter may hold anything a URL can encode (NUL, control characters, huge numbers); each
 * schema here bounds its value to what the database and the code after it can hold, and answers
 * 400 with a sentence otherwise. New routes take their parameters from here.
 */

/**
 * Ids (app_id, app_ver_id, list anchors) live in bigint columns read as JavaScript numbers: the
 * largest id both keep exactly is 2^53 - 1 (App Store ids have 9 to 10 digits).
 */
export const MAX_ID = Number.MAX_SAFE_INTEGER;

// C0 controls, DEL and the C1 controls: PostgreSQL text refuses NUL, and none belongs in an address.
// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;

export const hasControlCharacters = (value: string) => CONTROL_CHARACTERS.test(value);

/** A whole number from 0 to MAX_ID, written in at most 16 digits; one sentence for every refusal. */
export const idParam = (name: string) => {
  const error = `${name} must be a whole number from 0 to ${MAX_ID}.`;
  return z
    .string()
    .regex(/^\d{1,16}$/, { error })
    .transform(Number)
    .pipe(z.number().max(MAX_ID, { error }));
};

/** List pages start at 0 (docs/product.md, Constants); digits only, so '1e3', '0x1F' and ' 1' are refused. */
export const pageParam = z
  .string()
  .regex(/^\d{1,7}$/, { error: 'Page must be a whole number from 0.' })
  .transform(Number)
  .pipe(z.number().max(100_000, { error: 'Page is too large.' }));

/** A store country in any case (the web app's calls send it lowercase), answered in upper case. */
export const countryParam = z
  .string()
  .transform((c) => c.toUpperCase())
  .pipe(z.enum(COUNTRIES, { error: `Country must be one of ${COUNTRIES.join(', ')}.` }));

/** Free text in a path (a search keyword): trimmed, not empty, bounded, no control characters. */
export const textParam = (
  sentences: { empty: string; tooLong: string; control: string },
  maxLength: number,
) =>
  z
    .string()
    .refine((s) => !hasControlCharacters(s), { error: sentences.control })
    .transform((s) => s.trim())
    .pipe(z.string().min(1, { error: sentences.empty }).max(maxLength, { error: sentences.tooLong }));

/** Keywords of GET /api/search/{country}/{keyword}; the keyword may contain slashes (docs/product.md, Screens). */
export const MAX_KEYWORD_LENGTH = 100;
export const keywordParam = textParam(
  {
    empty: 'Enter a keyword to search.',
    tooLong: `Keywords are at most ${MAX_KEYWORD_LENGTH} characters.`,
    control: 'Keywords may not contain control characters.',
  },
  MAX_KEYWORD_LENGTH,
);

/** An opaque id the server handed out (a checkout id): unknown ones are the service's 404. */
export const opaqueIdParam = (what: string) =>
  z
    .string()
    .max(128, { error: `This ${what} id is too long.` })
    .refine((s) => !hasControlCharacters(s), {
      error: `This ${what} id may not contain control characters.`,
    });

/** A value the server sealed and put in a signed URL (SecretBox's `v1.` + base64url): opened or refused by the service. */
export const sealedTokenParam = z
  .string()
  .max(1024, { error: 'This link is too long.' })
  .regex(/^[A-Za-z0-9._-]+$/, { error: 'This link is not valid.' });

/** The query of a signed, expiring URL (platform/signed-urls.ts): checked by the route, bounded here. */
export const signedQuery = z.object({
  expires: z.string().max(20).optional(),
  sig: z.string().max(128).optional(),
});

/** Sign types of docs/product.md, Entities and fields (packages/contracts, sign-modes.ts). */
export const signTypeParam = z
  .string()
  .regex(/^\d$/, { error: `Sign type must be one of ${SIGN_TYPES.join(', ')}.` })
  .transform(Number)
  .pipe(
    z.union(
      SIGN_TYPES.map((n) => z.literal(n)),
      { error: `Sign type must be one of ${SIGN_TYPES.join(', ')}.` },
    ),
  );

/** (app_id, app_ver_id): the key of a version in the admin, sign and download routes. */
export const versionParams = z.object({ app_id: idParam('app_id'), app_ver_id: idParam('app_ver_id') });

/** (country, app_id): an app of one store country. */
export const appParams = z.object({ country: countryParam, app_id: idParam('app_id') });
