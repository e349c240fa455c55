// zod/mini: see admin.ts.
import * as z from 'zod/mini';
import { SIGN_TYPE_NAMES, SIGN_TYPES, signStatus, signType } from './sign-modes.js';

/** PUT /api/sign/{app_id}/{app_ver_id} body (docs/product.md, Calls): the mode of docs/product.md, Entities and fields. */
export const signRequest = z.object(
  {
    type: z.union(
      SIGN_TYPES.map((type) => z.literal(type)),
      { error: `type must be ${SIGN_TYPE_NAMES}.` },
    ),
  },
  { error: `Send a JSON object with type: ${SIGN_TYPE_NAMES}.` },
);
export type SignRequest = z.infer<typeof signRequest>;

/**
 * Answer of PUT /api/sign: where the caller's sign of that version and mode now stands. Done at
 * once when the artifact there is still current (it lists every Registered device of the caller).
 */
export const signAnswer = z.object({
  app_id: z.string(),
  app_ver_id: z.string(),
  type: signType,
  status: signStatus,
});
export type SignAnswer = z.infer<typeof signAnswer>;

/** GET /api/check/sign/...: 200 when the artifact lists every Registered device of the caller. */
export const signCheckAnswer = z.object({
  status: z.literal('Done'),
  /** ISO time the artifact was signed. */
  signed_at: z.string(),
  /** The devices it was signed for. */
  udids: z.array(z.string()),
});
export type SignCheckAnswer = z.infer<typeof signCheckAnswer>;

/**
 * GET /api/feather/cert: a signed, expiring URL of a zip holding a .p12 of the signing identity
 * and the caller's .mobileprovision, and the .p12's password (a new one each time).
 */
export const featherCertAnswer = z.object({ url: z.string(), password: z.string() });
export type FeatherCertAnswer = z.infer<typeof featherCertAnswer>;
