import { z } from 'zod';
import { COUNTRIES } from '@sideport/contracts';

/** A store id in a path: digits only, and small enough to stay exact (App Store ids are far below). */
export const storeIdParam = (name: string) =>
  z
    .string()
    .regex(/^\d{1,16}$/, { error: `${name} must be a number.` })
    .transform(Number)
    .pipe(z.number().int().positive({ error: `${name} must be above 0.` }).max(Number.MAX_SAFE_INTEGER, { error: `${name} is too large.` }));

/** The spec sends the store country in either case (`kr` in search, `KR` from an entry). */
export const countryParam = z
  .string()
  .transform((c) => c.toUpperCase())
  .pipe(z.enum(COUNTRIES, { error: `Country must be one of ${COUNTRIES.join(', ')}.` }));

export const appParams = z.object({ country: countryParam, app_id: storeIdParam('app_id') });
export const appVersionParams = appParams.extend({ app_ver_id: storeIdParam('app_ver_id') });
export const versionParams = z.object({ app_id: storeIdParam('app_id'), app_ver_id: storeIdParam('app_ver_id') });
export const signedQuery = z.object({ expires: z.string().optional(), sig: z.string().optional() });
