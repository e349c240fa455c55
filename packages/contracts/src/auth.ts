import { z } from 'zod';

/** Spec section 5: id is at least 4 characters; we also cap it and keep it to a safe charset. */
export const ID_MIN_LENGTH = 4;
export const ID_MAX_LENGTH = 32;
export const PASSWORD_MIN_LENGTH = 8;
export const ID_PATTERN = /^[A-Za-z0-9._@-]+$/;

export const userId = z
  .string({ error: (issue) => (issue.input === undefined ? 'Id is required.' : 'Id must be a string.') })
  // The same sentence the sign-in form shows (spec section 5).
  .min(ID_MIN_LENGTH, { error: `Please enter at least ${ID_MIN_LENGTH} characters for ID` })
  .max(ID_MAX_LENGTH, { error: `Id must be at most ${ID_MAX_LENGTH} characters.` })
  .regex(ID_PATTERN, { error: 'Id may contain only letters, digits and . _ @ -' });

/** The client never sends the password itself, only its md5: 32 hex characters. */
export const passwordMd5 = z
  .string({
    error: (issue) => (issue.input === undefined ? 'Password is required.' : 'Password must be a string.'),
  })
  .regex(/^[0-9a-fA-F]{32}$/, { error: 'Password must be sent as an MD5 hash (32 hex characters).' });

/** POST /api/sign-in and POST /api/sign-up payload: {id, pw}. */
export const credentials = z.object(
  { id: userId, pw: passwordMd5 },
  { error: 'Send a JSON object with id and pw.' },
);
export type Credentials = z.infer<typeof credentials>;

/** Sign-in and sign-up answer. grade > 0 means admin. */
export const gradeAnswer = z.object({ grade: z.number().int() });
export type GradeAnswer = z.infer<typeof gradeAnswer>;
